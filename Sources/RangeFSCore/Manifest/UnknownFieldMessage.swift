/// `unknown field "szie" (did you mean "size"? expected url, path, size, …)`: the fix for
/// a typo, which is the usual reason for an unknown field.
enum UnknownFieldMessage {
    static func text(_ key: String, expected names: [String], kind: String = "field") -> String {
        let list = names.dropLast().joined(separator: ", ") + (names.count > 1 ? " or " : "") + (names.last ?? "")
        let shown = DisplayText.doubleQuoted(key)
        if let guess = closest(to: key, among: names) {
            return "unknown \(kind) \(shown) (did you mean \(DisplayText.doubleQuoted(guess))? expected \(list))"
        }
        return "unknown \(kind) \(shown) (expected \(list))"
    }

    /// A name within two edits of `key`, ignoring case.
    private static func closest(to key: String, among names: [String]) -> String? {
        let lowered = Array(key.lowercased().unicodeScalars)
        guard lowered.count <= 32 else { return nil }
        return names
            .map { ($0, editDistance(lowered, Array($0.unicodeScalars))) }
            .filter { $0.1 <= 2 && $0.1 < $0.0.count }
            .min { $0.1 < $1.1 }?.0
    }

    private static func editDistance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Int {
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1]
            for (j, y) in b.enumerated() {
                current.append(min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1)))
            }
            previous = current
        }
        return previous[b.count]
    }
}
