/// A single `Range: bytes=…` request (RFC 9110 §14.1.2). Multiple ranges and anything
/// unparsable are not represented: such a header is ignored and the whole body is sent.
enum ByteRangeSpec: Equatable, Sendable {
    /// `bytes=a-b` (last inclusive) or `bytes=a-`.
    case from(Int, through: Int?)
    /// `bytes=-n`: the last n bytes.
    case suffix(Int)

    init?(header: String) {
        let trimmed = header.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes=") else { return nil }
        let spec = trimmed.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return nil }
        let first = spec[..<dash].trimmingCharacters(in: .whitespaces)
        let last = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
        guard first.allSatisfy(\.isASCIIDigit), last.allSatisfy(\.isASCIIDigit) else { return nil }
        switch (Int(first), Int(last)) {
        case (nil, let n?) where first.isEmpty:
            self = .suffix(n)
        case (let a?, nil) where last.isEmpty:
            self = .from(a, through: nil)
        case (let a?, let b?) where a <= b:
            self = .from(a, through: b)
        default:
            return nil   // `-`, `b<a`, or a number too large for Int: invalid, so ignored
        }
    }

    /// The bytes this asks for in a file of `size` bytes; nil when unsatisfiable (416).
    func resolve(size: Int) -> Range<Int>? {
        switch self {
        case .from(let first, let last):
            guard first < size else { return nil }
            return first ..< (last.map { $0 < size ? $0 + 1 : size } ?? size)
        case .suffix(let count):
            guard count > 0, size > 0 else { return nil }
            return max(0, size - count) ..< size
        }
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
