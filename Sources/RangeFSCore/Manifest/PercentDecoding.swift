/// Decodes `%XX` escapes in a URL segment. Written out because Foundation's
/// `removingPercentEncoding` goes through a bridged string and dominates parsing
/// a large manifest.
enum PercentDecoding {
    /// The decoded text, or nil if an escape is malformed or the bytes are not UTF-8.
    static func decode(_ text: some StringProtocol) -> String? {
        let encoded = Array(text.utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(encoded.count)
        var index = 0
        while index < encoded.count {
            let byte = encoded[index]
            if byte == ASCII.percent {
                guard index + 2 < encoded.count,
                      let high = hexValue(encoded[index + 1]),
                      let low = hexValue(encoded[index + 2])
                else { return nil }
                bytes.append(high << 4 | low)
                index += 3
            } else {
                bytes.append(byte)
                index += 1
            }
        }
        return validUTF8String(bytes)
    }

    /// The value of one hexadecimal digit, in either case.
    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func validUTF8String(_ bytes: [UInt8]) -> String? {
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue: continue
            case .emptyInput: return String(decoding: bytes, as: UTF8.self)
            case .error: return nil
            }
        }
    }
}
