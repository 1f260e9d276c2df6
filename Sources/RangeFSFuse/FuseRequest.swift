import CFuse
import CFusePassthrough
import Foundation
import Logging
import RangeFSCore

/// A kernel request waiting for its reply. It may be answered from any thread — libfuse's
/// reply functions are thread-safe — and is answered exactly once, which is why it may cross
/// threads even though the pointer inside is not `Sendable`.
///
/// Every reply's result is checked: a reply fails when the kernel no longer waits for it.
/// The replies that matter then (an open's) say so by returning false.
struct FuseRequest: @unchecked Sendable {
    let raw: fuse_req_t
    let logger: Logger

    @discardableResult
    private func delivered(_ result: Int32, _ reply: StaticString) -> Bool {
        guard result != 0 else { return true }
        logger.debug("\(reply) reply not delivered: \(String(cString: strerror(-result)))")
        return false
    }

    func reply(error: FilesystemError) {
        delivered(fuse_reply_err(raw, error.errno), "error")
    }

    /// Success without data (release), or the error.
    func reply(_ result: Result<Void, FilesystemError>) {
        delivered(fuse_reply_err(raw, result.failure?.errno ?? 0), "status")
    }

    func reply(entry result: Result<NodeAttributes, FilesystemError>, timeout: Double) {
        guard case .success(let attributes) = result else { return reply(error: result.failure!) }
        var entry = fuse_entry_param()
        entry.ino = fuse_ino_t(attributes.inode)
        entry.generation = 1
        entry.attr = stat(attributes)
        entry.attr_timeout = timeout
        entry.entry_timeout = timeout
        delivered(fuse_reply_entry(raw, &entry), "entry")
    }

    func reply(attributes result: Result<NodeAttributes, FilesystemError>, timeout: Double) {
        guard case .success(let attributes) = result else { return reply(error: result.failure!) }
        var translated = stat(attributes)
        delivered(fuse_reply_attr(raw, &translated, timeout), "attributes")
    }

    func reply(openDirectory result: Result<Void, FilesystemError>, info: fuse_file_info) {
        guard case .success = result else { return reply(error: result.failure!) }
        var info = info
        delivered(fuse_reply_open(raw, &info), "opendir")
    }

    /// As many names as fit in `bufferSize`, in libfuse's directory-entry format.
    func reply(names result: Result<Slice<DirectoryListing>, FilesystemError>, bufferSize: Int) {
        guard case .success(let names) = result else { return reply(error: result.failure!) }
        var buffer = [CChar](repeating: 0, count: bufferSize)
        var used = 0
        for listed in names {
            var attributes = stat()
            attributes.st_ino = ino_t(listed.inode)
            attributes.st_mode = listed.isDirectory ? S_IFDIR : S_IFREG
            let needed = buffer.withUnsafeMutableBufferPointer { pointer in
                fuse_add_direntry(raw, pointer.baseAddress! + used, bufferSize - used, listed.name, &attributes,
                                  off_t(listed.nextOffset))
            }
            if used + needed > bufferSize { break }
            used += needed
        }
        delivered(fuse_reply_buf(raw, buffer, used), "readdir")
    }

    /// Gives the kernel the handle's number and how it reads; false when the open was
    /// interrupted and the kernel no longer waits for it.
    func reply(open opened: MountedFilesystem.OpenedFile, info: fuse_file_info) -> Bool {
        var info = info
        info.fh = opened.handle
        switch opened.readPath {
        case .passthrough(let backingID):
            return delivered(rangefs_reply_open_passthrough(raw, &info, backingID), "open")
        case .daemon(let keepCache):
            rangefs_file_info_set_keep_cache(&info, keepCache ? 1 : 0)
            return delivered(fuse_reply_open(raw, &info), "open")
        }
    }

    /// Answers a read with bytes taken straight from a cache file.
    func reply(read result: Result<ReadyBytes, FilesystemError>) {
        guard case .success(let ready) = result else { return reply(error: result.failure!) }
        if ready.range.isEmpty {
            delivered(fuse_reply_buf(raw, nil, 0), "read")
        } else {
            delivered(rangefs_reply_fd(raw, ready.file.descriptor, off_t(ready.range.lowerBound), ready.range.count), "read")
        }
    }

    func reply(attribute result: Result<AttributeAnswer, FilesystemError>) {
        switch result {
        case .success(.size(let size)):
            delivered(fuse_reply_xattr(raw, size), "xattr size")
        case .success(.bytes(let bytes)):
            delivered(fuse_reply_buf(raw, bytes, bytes.count), "xattr")
        case .failure(let error):
            reply(error: error)
        }
    }

    func reply(statfs totals: FilesystemTotals) {
        var info = statvfs()
        info.f_bsize = UInt(totals.blockSize)
        info.f_frsize = UInt(totals.blockSize)
        info.f_namemax = UInt(totals.maximumNameLength)
        info.f_files = fsfilcnt_t(totals.files)
        info.f_blocks = fsblkcnt_t(totals.blocks)
        delivered(fuse_reply_statfs(raw, &info), "statfs")
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

extension stat {
    /// The attributes as the kernel takes them.
    init(_ attributes: NodeAttributes) {
        self.init()
        st_ino = ino_t(attributes.inode)
        st_mode = attributes.mode
        st_nlink = nlink_t(attributes.linkCount)
        st_size = off_t(attributes.size)
        st_blocks = blkcnt_t(attributes.blocks)
        st_blksize = blksize_t(attributes.blockSize)
        st_uid = attributes.uid
        st_gid = attributes.gid
        st_atim = timespec(date: attributes.accessed)
        st_mtim = timespec(date: attributes.modified)
        st_ctim = timespec(date: attributes.changed)
    }
}

extension timespec {
    init(date: Date) {
        let seconds = date.timeIntervalSince1970
        self.init(tv_sec: Int(seconds.rounded(.down)), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1_000_000_000))
    }
}
