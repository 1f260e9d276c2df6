/// Percent-encoding of every byte but RFC 3986's unreserved characters (`A-Z a-z 0-9 - _ . ~`),
/// as `%XX` with uppercase hex: what any server decodes (a listing's names), and exactly S3's
/// URI encoding for Signature Version 4 (`S3URIEncoding`).
enum PercentEncoding {
    /// `bytes` encoded; `/` is kept when `keepingSlashes` (a path), encoded otherwise.
    static func escapingAllButUnreserved(_ bytes: some Collection<UInt8>, keepingSlashes: Bool = false) -> String {
        var encoded: [UInt8] = []
        encoded.reserveCapacity(bytes.count)
        for byte in bytes {
            if isUnreserved(byte) || (keepingSlashes && byte == UInt8(ascii: "/")) {
                encoded.append(byte)
            } else {
                encoded.append(UInt8(ascii: "%"))
                encoded.append(hexDigits[Int(byte >> 4)])
                encoded.append(hexDigits[Int(byte & 0x0F)])
            }
        }
        return String(decoding: encoded, as: UTF8.self)
    }

    static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"): true
        default: false
        }
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)
}
