import Crypto
import Foundation

extension DataFile {
    /// The SHA-256 of the file's first `size` bytes, as 64 lowercase hex digits. Reads in
    /// large chunks into one buffer, so memory stays at `chunkSize` whatever the file's size.
    func sha256(size: UInt64, chunkSize: Int = 4 << 20) throws -> String {
        var hasher = SHA256()
        var buffer = [UInt8](repeating: 0, count: chunkSize)
        var offset: UInt64 = 0
        while offset < size {
            let wanted = Int(min(UInt64(chunkSize), size - offset))
            let got = try buffer.withUnsafeMutableBytes { try read(into: UnsafeMutableRawBufferPointer(rebasing: $0[..<wanted]), at: offset) }
            guard got == wanted else { throw CacheError("cache file \(path) is shorter than \(size) bytes") }
            hasher.update(data: buffer[..<got])
            offset += UInt64(got)
        }
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }
}
