import Foundation

/// A sparse local file the size of the remote one; blocks are written where they belong.
/// `pread`/`pwrite` carry their own offsets, so threads may share the descriptor.
public final class DataFile: Sendable {
    public let descriptor: Int32
    public let path: String

    /// Opens (creating, mode 0600) the file and gives it the remote size without allocating it.
    public convenience init(path: String, size: UInt64) throws {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw CacheError.opening(path) }
        try self.init(sizing: fd, path: path, size: size)
    }

    /// Opens a file that must already be there, at its size (it holds cached bytes); nil when
    /// it is gone or has another size: then what it held cannot be trusted.
    public convenience init?(existingAt path: String, size: UInt64) throws {
        let fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW)
        if fd < 0, errno == ENOENT { return nil }
        guard fd >= 0 else { throw CacheError.opening(path) }
        var info = stat()
        guard fstat(fd, &info) == 0, UInt64(info.st_size) == size else {
            close(fd)
            return nil
        }
        self.init(descriptor: fd, path: path)
    }

    /// Takes `fd` and gives its file the remote size; closes it on failure.
    private init(sizing fd: Int32, path: String, size: UInt64) throws {
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            close(fd)
            throw CacheError.system("cannot stat cache file \(path)")
        }
        if UInt64(info.st_size) != size, ftruncate(fd, off_t(size)) != 0 {
            let code = errno
            close(fd)
            throw CacheError.system("cannot size cache file \(path)", errno: code)
        }
        descriptor = fd
        self.path = path
    }

    private init(descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    /// A file of `size` bytes in shared memory, never on a disk, gone once closed: for bytes a
    /// reader gets without them being stored.
    static func inMemory(size: UInt64) throws -> DataFile {
        let name = "/rangefs-\(getpid())-\(UUID().uuidString)"
        let fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CacheError.system("cannot create a memory file") }
        shm_unlink(name)
        guard ftruncate(fd, off_t(size)) == 0 else {
            let code = errno
            close(fd)
            throw CacheError.system("cannot size a memory file", errno: code)
        }
        return DataFile(descriptor: fd, path: "memory")
    }

    deinit {
        close(descriptor)
    }

    /// Writes every byte or throws (a full disk surfaces here as ENOSPC).
    public func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
        var done = 0
        while done < bytes.count {
            let written = pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            if written < 0 {
                if errno == EINTR { continue }
                throw CacheError.system("cannot write cache file \(path)")
            }
            done += written
        }
    }

    /// Reads up to `count` bytes at `offset`; fewer only at the end of the file.
    public func read(count: Int, at offset: UInt64) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        let done = try buffer.withUnsafeMutableBytes { try read(into: $0, at: offset) }
        return Array(buffer.prefix(done))
    }

    /// Fills `buffer` from `offset`; returns how many bytes it read (fewer only at the end of the file).
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int {
        var done = 0
        while done < buffer.count {
            let got = pread(descriptor, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
            if got < 0 {
                if errno == EINTR { continue }
                throw CacheError.system("cannot read cache file \(path)")
            }
            if got == 0 { break }
            done += got
        }
        return done
    }

    /// Makes written data durable; only after this may its blocks be marked present.
    public func synchronize() throws {
        while fdatasync(descriptor) != 0 {
            if errno != EINTR { throw CacheError.system("cannot sync cache file \(path)") }
        }
    }
}
