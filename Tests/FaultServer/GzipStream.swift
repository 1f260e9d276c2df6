/// A real gzip stream (RFC 1952) of stored deflate blocks: what a misconfigured proxy sends,
/// without a compression library in the test server.
enum GzipStream {
    static func compress(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0xff]
        var offset = 0
        repeat {
            let count = min(65_535, bytes.count - offset)
            let last = offset + count == bytes.count
            out.append(last ? 0x01 : 0x00)
            out += littleEndian16(count) + littleEndian16(~count & 0xffff)
            out += bytes[offset ..< offset + count]
            offset += count
        } while offset < bytes.count
        out += littleEndian32(crc32(bytes)) + littleEndian32(UInt32(truncatingIfNeeded: bytes.count))
        return out
    }

    /// `bytes` in HTTP/1.1 chunked framing, 8 KiB a chunk; without `closing`, the last
    /// (empty) chunk is left out, as when a connection drops mid-body.
    static func chunked(_ bytes: [UInt8], closing: Bool = true) -> [UInt8] {
        var out: [UInt8] = []
        var offset = 0
        while offset < bytes.count {
            let count = min(8192, bytes.count - offset)
            out += Array("\(String(count, radix: 16))\r\n".utf8) + bytes[offset ..< offset + count] + [13, 10]
            offset += count
        }
        return closing ? out + Array("0\r\n\r\n".utf8) : out
    }

    private static func littleEndian16(_ value: Int) -> [UInt8] {
        [UInt8(value & 0xff), UInt8((value >> 8) & 0xff)]
    }

    private static func littleEndian32(_ value: UInt32) -> [UInt8] {
        (0..<4).map { UInt8((value >> (8 * $0)) & 0xff) }
    }

    private static let crcTable: [UInt32] = (0..<256).map { index in
        var c = UInt32(index)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xedb8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xffff_ffff
        for byte in bytes { crc = crcTable[Int((crc ^ UInt32(byte)) & 0xff)] ^ (crc >> 8) }
        return crc ^ 0xffff_ffff
    }
}
