import Foundation

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
