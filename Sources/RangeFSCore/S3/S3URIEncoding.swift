/// S3's URI encoding for Signature Version 4: the unreserved characters `A-Z a-z 0-9 - _ . ~`
/// stay as they are, every other byte of the UTF-8 text becomes `%XX` with uppercase hex.
/// A request's path and query are encoded this way both on the wire and in what is signed,
/// so that S3 computes the same canonical request as the sender.
public enum S3URIEncoding {
    /// `text` encoded; `/` is kept when `keepingSlashes` (an object key in a path), encoded
    /// otherwise (a query name or value).
    public static func encode(_ text: some StringProtocol, keepingSlashes: Bool) -> String {
        encodeBytes(Array(text.utf8), keepingSlashes: keepingSlashes)
    }

    /// A path or query part as it appears in a URL, brought to S3's encoding: escapes already
    /// there are decoded first, so `a%20b` and `a b` both give `a%20b` (never `a%2520b`).
    /// A `%` that starts no valid escape is a literal `%`. `+` is a plus, not a space.
    static func reencode(_ urlText: some StringProtocol, keepingSlashes: Bool) -> String {
        let bytes = Array(urlText.utf8)
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == percent, index + 2 < bytes.count,
               let high = PercentDecoding.hexValue(bytes[index + 1]),
               let low = PercentDecoding.hexValue(bytes[index + 2]) {
                decoded.append(high << 4 | low)
                index += 3
            } else {
                decoded.append(bytes[index])
                index += 1
            }
        }
        return encodeBytes(decoded, keepingSlashes: keepingSlashes)
    }

    /// Like `encode`, for bytes that need not be valid UTF-8 (a decoded escape may not be).
    private static func encodeBytes(_ bytes: [UInt8], keepingSlashes: Bool) -> String {
        PercentEncoding.escapingAllButUnreserved(bytes, keepingSlashes: keepingSlashes)
    }

    private static let percent = UInt8(ascii: "%")
}
