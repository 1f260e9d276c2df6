/// A parsed `Content-Range: bytes first-last/total` header of a `206` reply.
public struct ContentRange: Sendable, Equatable {
    public var range: Range<UInt64>
    /// nil when the server sent `*` (size unknown).
    public var total: UInt64?

    public init(range: Range<UInt64>, total: UInt64?) {
        self.range = range
        self.total = total
    }

    /// Parses the header value; nil for anything malformed (including `first > last`,
    /// `last >= total`, or the unsatisfied-range form `bytes */total`).
    public init?(headerValue: String) {
        let value = headerValue.trimmingASCIIWhitespace()
        guard value.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = value.dropFirst("bytes ".count).trimmingASCIIWhitespace()
        let halves = spec.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard halves.count == 2 else { return nil }
        let bounds = halves[0].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard bounds.count == 2,
              let first = UInt64(decimalDigits: bounds[0]),
              let last = UInt64(decimalDigits: bounds[1]),
              first <= last, last < UInt64.max
        else { return nil }
        var total: UInt64?
        if halves[1] != "*" {
            guard let parsed = UInt64(decimalDigits: halves[1]), last < parsed else { return nil }
            total = parsed
        }
        self.init(range: first..<(last + 1), total: total)
    }

    /// The unsatisfied form `bytes */total` that comes with a `416`.
    public static func unsatisfiedTotal(headerValue: String) -> UInt64? {
        let value = headerValue.trimmingASCIIWhitespace()
        guard value.lowercased().hasPrefix("bytes */") else { return nil }
        return UInt64(decimalDigits: value.dropFirst("bytes */".count))
    }
}

extension UInt64 {
    /// Only ASCII digits, no sign, no spaces, no overflow: header numbers are strict.
    init?<S: StringProtocol>(decimalDigits text: S) {
        guard !text.isEmpty, text.utf8.count <= 20, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        guard let value = UInt64(text, radix: 10) else { return nil }
        self = value
    }
}

extension StringProtocol {
    /// Trims spaces, tabs, CR and LF. Works on bytes: "\r\n" is one `Character` in Swift.
    func trimmingASCIIWhitespace() -> String {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D || $0 == 0x0A }
        let bytes = Array(utf8)
        guard let start = bytes.firstIndex(where: { !isSpace($0) }),
              let end = bytes.lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(decoding: bytes[start...end], as: UTF8.self)
    }
}
