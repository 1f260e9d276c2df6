/// Text kept as two strings split after its last "/": the prefix up to and including that "/",
/// and the rest. The entries of one manifest mostly differ only after their last "/"
/// (`http://host/album/01.mp3`, `http://host/album/02.mp3`): once they hold one shared prefix
/// string (see `SharedPrefixes`), each keeps only its rest, which Swift stores inline, with
/// no allocation, when it has at most 15 bytes.
public struct SharedPrefixText: Sendable, Hashable, CustomStringConvertible {
    /// "" when the text has no "/".
    private(set) var prefix: String
    let rest: String

    public init(_ text: String) {
        guard let slash = text.utf8.lastIndex(of: ASCII.slash) else {
            prefix = ""
            rest = text
            return
        }
        let cut = text.utf8.index(after: slash)
        prefix = String(text[..<cut])
        rest = String(text[cut...])
    }

    public var description: String { prefix + rest }

    /// Byte for byte. The split depends only on the text, so equal texts have equal parts.
    public static func == (lhs: SharedPrefixText, rhs: SharedPrefixText) -> Bool {
        lhs.rest.hasSameUTF8(as: rhs.rest) && lhs.prefix.hasSameUTF8(as: rhs.prefix)
    }

    public func hash(into hasher: inout Hasher) {
        var prefix = prefix
        var rest = rest
        prefix.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        rest.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        hasher.combine(0xFF as UInt8)  // never occurs in UTF-8: ends the text
    }

    /// Takes the copy of its prefix that `prefixes` already holds, so equal prefixes share one string.
    mutating func sharePrefix(in prefixes: inout SharedPrefixes) {
        prefix = prefixes.shared(prefix)
    }
}

/// The distinct prefixes of the texts of one manifest, each held once (byte for byte, not by
/// Unicode equivalence: "é" and "e\u{301}" stay apart).
struct SharedPrefixes {
    private var known: Set<ExactText> = []
    /// The prefix asked for last: entries in a row mostly share theirs.
    private var last = ""

    /// The copy of `prefix` held here, which the caller should keep instead of its own.
    mutating func shared(_ prefix: String) -> String {
        if !prefix.hasSameUTF8(as: last) {
            last = known.insert(ExactText(text: prefix)).memberAfterInsert.text
        }
        return last
    }

    private struct ExactText: Hashable {
        let text: String

        static func == (lhs: ExactText, rhs: ExactText) -> Bool {
            lhs.text.hasSameUTF8(as: rhs.text)
        }

        func hash(into hasher: inout Hasher) {
            var text = text
            text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        }
    }
}
