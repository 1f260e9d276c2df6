import CFuse
import CFusePassthrough
import Foundation

/// A kernel request waiting for its reply. It may be answered from any thread — libfuse's
/// reply functions are thread-safe — and is answered exactly once, which is why it may cross
/// threads even though the pointer inside is not `Sendable`.
struct FuseRequest: @unchecked Sendable {
    let raw: fuse_req_t

    func reply(error code: Int32) {
        fuse_reply_err(raw, code)
    }

    func reply(entry attributes: stat, timeout: Double) {
        var entry = fuse_entry_param()
        entry.ino = fuse_ino_t(attributes.st_ino)
        entry.generation = 1
        entry.attr = attributes
        entry.attr_timeout = timeout
        entry.entry_timeout = timeout
        fuse_reply_entry(raw, &entry)
    }

    func reply(attributes: stat, timeout: Double) {
        var attributes = attributes
        fuse_reply_attr(raw, &attributes, timeout)
    }

    func reply(open info: fuse_file_info) {
        var info = info
        fuse_reply_open(raw, &info)
    }

    /// Opens the file for the kernel to read from a registered backing file by itself.
    func reply(open info: fuse_file_info, backingID: Int32) {
        var info = info
        rangefs_reply_open_passthrough(raw, &info, backingID)
    }

    /// Answers a read with bytes taken straight from a cache file.
    func reply(descriptor: Int32, range: Range<UInt64>) {
        if range.isEmpty {
            fuse_reply_buf(raw, nil, 0)
        } else {
            rangefs_reply_fd(raw, descriptor, off_t(range.lowerBound), range.count)
        }
    }

    func reply(bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                _ = fuse_reply_buf(raw, chars.baseAddress, chars.count)
            }
        }
    }

    /// The extended-attribute protocol: size 0 asks how big the value is.
    func reply(xattr value: [UInt8], bufferSize: Int) {
        if bufferSize == 0 {
            fuse_reply_xattr(raw, value.count)
        } else if bufferSize < value.count {
            reply(error: ERANGE)
        } else {
            reply(bytes: value)
        }
    }

    func reply(statfs info: statvfs) {
        var info = info
        fuse_reply_statfs(raw, &info)
    }
}
