import Crypto
import Foundation

extension DataFile {
    /// The SHA-256 of the file's first `size` bytes, as 64 lowercase hex digits. Reads in
    /// large chunks into one buffer, so memory stays at `chunkSize` whatever the file's size.
    func sha256(size: UInt64, chunkSize: Int = 4 << 20) throws -> String {
        try sha256Digest(of: 0..<size, chunkSize: chunkSize).lowercaseHex
    }

    /// The SHA-256 of the bytes at `range` (a piece of the file), as its 32 bytes.
    func sha256Digest(of range: Range<UInt64>, chunkSize: Int = 4 << 20) throws -> [UInt8] {
        var hasher = SHA256()
        var buffer = [UInt8](repeating: 0, count: Int(min(UInt64(chunkSize), max(UInt64(range.count), 1))))
        var offset = range.lowerBound
        while offset < range.upperBound {
            let wanted = Int(min(UInt64(buffer.count), range.upperBound - offset))
            let got = try buffer.withUnsafeMutableBytes { try read(into: UnsafeMutableRawBufferPointer(rebasing: $0[..<wanted]), at: offset) }
            guard got == wanted else { throw CacheError("cache file \(path) is shorter than \(range.upperBound) bytes") }
            hasher.update(data: buffer[..<got])
            offset += UInt64(got)
        }
        return Array(hasher.finalize())
    }
}
