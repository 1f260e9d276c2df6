import Foundation

// Design note: what a mount keeps on disk.
//
// - The cache directory holds `metadata.sqlite` (file records, settings, kept listings, learned
//   head and tail sizes: `MetadataStore`, on GRDB), `data/` with one sparse file per remote file
//   (`DataFile`), the `lock` and the log.
// - A `BlockBitmap` keeps only the words that hold a present block, so it grows with the data
//   fetched, never with a size a server states. `FileSizeLimit` is the largest file a mount
//   accepts; a record over it, or without a block size, is dropped when the mount starts.
// - Files and listings are known by their URL's `CacheKey`: the URL, or for one with a password
//   or a query value its redacted text and a SHA-256 of the whole, so no secret of a URL is
//   written to disk.
// - `DirectoryTrust` refuses a cache directory that is not the mounting user's own or that
//   someone else may write (it, its `data/`, or a non-sticky directory above it): nobody else can
//   then put anything at a name the cache opens, which keeps SQLite's `-journal`, `-wal` and
//   `-shm` (opened by name) safe; the lock, the log and data files are opened `O_NOFOLLOW`.
// - `CacheBudget` counts bytes against `--cache-max-size` and the free-space floor.

/// The on-disk home of one mount's cache: `metadata.sqlite`, `data/` with one file per
/// remote file, and `lock`, held while a mount uses the directory.
public struct CacheDirectory: Sendable {
    public let path: String

    public var metadataPath: String { path + "/metadata.sqlite" }
    public var dataDirectory: String { path + "/data" }
    public var logPath: String { path + "/rangefs.log" }
    public var controlSocketPath: String { path + "/control.sock" }
    var lockPath: String { path + "/lock" }

    /// Creates the directory (mode 0700) and its `data/` folder when missing, and refuses a
    /// directory another user could put files in (`DirectoryTrust`).
    public init(creatingAt path: String) throws {
        self.path = path
        for directory in [path, path + "/data"] {
            try Self.makeDirectory(directory)
        }
        try DirectoryTrust.check(cache: path)
        // Cached data is private to its owner, also in a directory created readable by others.
        for directory in [path, path + "/data"] {
            var info = stat()
            if stat(directory, &info) == 0, info.st_mode & 0o077 != 0 { chmod(directory, 0o700) }
        }
    }

    /// `$XDG_CACHE_HOME/rangefs/<mountpoint>` (else `~/.cache/rangefs/…`): each mountpoint keeps
    /// its own cache, so mounting the same place again finds what was fetched before.
    public static func defaultPath(forMountpoint mountpoint: String) -> String {
        let environment = ProcessInfo.processInfo.environment
        let base: String
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
            base = xdg
        } else {
            base = (environment["HOME"] ?? NSHomeDirectory()) + "/.cache"
        }
        let readable = mountpoint.split(separator: "/").joined(separator: "-")
        return base + "/rangefs/" + (readable.isEmpty ? "root" : readable)
    }

    /// Takes the directory for this process; a second mount on the same cache is refused
    /// instead of letting two writers corrupt each other.
    public func lock() throws -> CacheLock {
        try CacheLock(path: lockPath)
    }

    /// Where a remote file's bytes live: `<name>.part` while partial, `<name>` once complete.
    public func dataPath(name: String, complete: Bool) -> String {
        dataDirectory + "/" + name + (complete ? "" : ".part")
    }

    private static func makeDirectory(_ directory: String) throws {
        if mkdir(directory, 0o700) == 0 { return }
        let code = errno
        if code == ENOENT {
            // Parents first; they get the usual 0755 like `mkdir -p` would give them.
            try FileManager.default.createDirectory(atPath: (directory as NSString).deletingLastPathComponent,
                                                    withIntermediateDirectories: true)
            guard mkdir(directory, 0o700) == 0 || errno == EEXIST else {
                throw CacheError.system("cannot create cache directory \(directory)")
            }
        } else if code != EEXIST {
            throw CacheError.system("cannot create cache directory \(directory)", errno: code)
        }
        var info = stat()
        guard stat(directory, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
            throw CacheError("cache path \(directory) exists and is not a directory")
        }
    }
}

/// An exclusive `flock` on the cache directory, released when the process ends.
public final class CacheLock: Sendable {
    private let descriptor: Int32

    init(path: String) throws {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw CacheError.opening(path) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            throw CacheError("the cache directory \((path as NSString).deletingLastPathComponent) is in use by another rangefs mount")
        }
        descriptor = fd
    }

    deinit {
        close(descriptor)
    }
}
