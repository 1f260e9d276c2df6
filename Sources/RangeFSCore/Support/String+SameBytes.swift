extension String {
    /// Byte for byte, as the kernel compares names: not by Unicode equivalence ("é" and
    /// "e\u{301}" differ), and without the per-byte iteration of `utf8.elementsEqual`.
    func hasSameUTF8(as other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        var lhs = self
        var rhs = other
        return lhs.withUTF8 { left in rhs.withUTF8 { right in left.elementsEqual(right) } }
    }
}
