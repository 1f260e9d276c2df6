import Foundation

/// Whether a directory may hold the cache: nobody but the mounting user may create, replace or
/// rename anything in it, or the mount would open a lock, a database or a data file another user
/// put there (a symbolic link to a file of root's, planted bytes served as cached ones). The
/// rules are OpenSSH's for `~/.ssh`, strict and simple: the directory is the user's own and
/// writable by no one else; every directory above it belongs to root or the user and is writable
/// by no one else unless sticky (as `/tmp` is, where nobody may rename another's entry).
///
/// Checked once at mount time, this is what makes every path in the cache stable: SQLite opens
/// the database and its `-journal`, `-wal` and `-shm` by name (Debian's SQLite with `O_NOFOLLOW`
/// on the last component, the directories above followed), and only the user could have put
/// anything at those names. The cache's own files are opened with `O_NOFOLLOW` besides.
enum DirectoryTrust {
    /// What the rules need of one directory (from `lstat`).
    struct Facts: Equatable {
        var owner: uid_t
        var mode: mode_t
        var isDirectory: Bool
    }

    /// Why the cache directory itself (or its `data/`) cannot be trusted by `user`, or nil.
    static func problem(withCache facts: Facts, user: uid_t) -> String? {
        guard facts.isDirectory else { return "is not a directory (a symbolic link is not followed)" }
        guard facts.owner == user else { return "belongs to user \(facts.owner), not to the mounting user \(user)" }
        guard facts.mode & 0o022 == 0 else {
            return "is writable by \(writers(facts.mode)) (mode \(String(facts.mode & 0o7777, radix: 8))); make it 0700"
        }
        return nil
    }

    /// Why a directory above the cache cannot be trusted by `user` (someone else could rename
    /// the cache away and put their own in its place), or nil.
    static func problem(withAncestor facts: Facts, user: uid_t) -> String? {
        guard facts.owner == 0 || facts.owner == user else {
            return "belongs to user \(facts.owner), who could replace the cache directory"
        }
        guard facts.mode & 0o022 == 0 || facts.mode & S_ISVTX != 0 else {
            return "is writable by \(writers(facts.mode)) without the sticky bit (mode \(String(facts.mode & 0o7777, radix: 8)))"
        }
        return nil
    }

    /// Refuses the cache at `path` (after its `data/` exists) unless `problem` finds nothing
    /// there, in `data/`, and in every directory above the place `path` resolves to.
    static func check(cache path: String, user: uid_t = geteuid()) throws {
        guard let resolved = realpath(path, nil) else {
            throw CacheError.system("cannot resolve cache directory \(path)")
        }
        let real = String(cString: resolved)
        free(resolved)
        for (directory, role) in [(real, "the cache directory"), (real + "/data", "its data directory")] {
            if let why = problem(withCache: try facts(of: directory), user: user) {
                throw CacheError("refusing cache directory \(path): \(role) \(directory) \(why)")
            }
        }
        var ancestor = (real as NSString).deletingLastPathComponent
        while true {
            if let why = problem(withAncestor: try facts(of: ancestor), user: user) {
                throw CacheError("refusing cache directory \(path): \(ancestor) above it \(why)")
            }
            guard ancestor != "/" else { break }
            ancestor = (ancestor as NSString).deletingLastPathComponent
        }
    }

    private static func facts(of path: String) throws -> Facts {
        var info = stat()
        guard lstat(path, &info) == 0 else { throw CacheError.system("cannot look at \(path)") }
        return Facts(owner: info.st_uid, mode: info.st_mode, isDirectory: info.st_mode & S_IFMT == S_IFDIR)
    }

    private static func writers(_ mode: mode_t) -> String {
        switch (mode & 0o020 != 0, mode & 0o002 != 0) {
        case (true, true): "its group and others"
        case (true, false): "its group"
        default: "others"
        }
    }
}
