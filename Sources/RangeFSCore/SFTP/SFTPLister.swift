import CSSH2
import Foundation
import Logging

// A directory on an SSH server mounted over SFTP, as a web directory is mounted from its pages:
//
// - `SFTPAddress` (pure): `sftp://USER@HOST[:PORT]/PATH/`, its children's URLs and the path the
//   server knows each by.
// - `SSHSignIn` (pure): how the mount signs in (agent, key file, password) and the known-hosts
//   file; `HostKeyVerdict` what the host key check found and what to tell the user.
// - `SSHSession`, `SSHAuthentication`: one libssh2 connection, host key checked, signed in.
// - `SFTPConnection`: that session kept open on a queue of its own for every listing and probe.
// - `SFTPLister`: one directory's entries (`opendir`/`readdir`, which state exact sizes, whole
//   second mtimes and types), symbolic links followed only within the mounted tree.
// - `SFTPReadCheck` (pure): what a ranged SFTP read must deliver to be used, in place of an
//   HTTP reply's status and headers; `SFTPVersion`: a file's version is its size and mtime.
// - `SFTPClient`: the mount's `RemoteClient`: reads go to libcurl (`sftp://` with
//   `CURLOPT_RANGE`) on the one transfer loop every source uses, probes are `stat`s here.
//
// libcurl's own SFTP listing is `ls -l` text with dates to the minute: the listings are read
// with libssh2 instead. Nothing else of the mount knows the tree came from SFTP.

/// Lists one directory of an SFTP server for a mount grown from listings (`ListedDirectories`).
/// A listing is always asked in full: a directory has no validator to ask again with.
public struct SFTPLister: DirectoryLister {
    private let connection: SFTPConnection
    private let maxEntries: Int

    public init(connection: SFTPConnection, maxEntries: Int) {
        self.connection = connection
        self.maxEntries = maxEntries
    }

    public func list(_ url: URL, heldVersion: RemoteValidator?,
                     completion: @escaping @Sendable (Result<ListingAnswer, FetchError>) -> Void) {
        let started = ContinuousClock.now
        let root = connection.rootURL
        let logger = connection.logger
        connection.run({ [maxEntries] calls throws(RemoteError) in
            try SFTPDirectoryReading(calls: calls, directory: url, root: root, maxEntries: maxEntries, logger: logger).entries()
        }, completion: { result in
            switch result {
            case .success(let entries):
                completion(.success(.listed(entries, nil, from: url, serverTime: ContinuousClock.now - started)))
            case .failure(let error):
                completion(.failure(FetchError(url, .remote(error))))
            }
        })
    }
}

/// One directory read entry by entry, each link resolved, on the connection's queue.
private struct SFTPDirectoryReading {
    let calls: SFTPCalls
    let directory: URL
    let root: URL
    let maxEntries: Int
    let logger: Logger

    func entries() throws(RemoteError) -> [WebListingEntry] {
        guard let path = SFTPAddress.remotePath(of: directory) else {
            throw .refused("\(directory.redactedForDisplay): its path is not UTF-8 text")
        }
        guard let handle = rangefs_sftp_opendir(calls.session.sftp, path) else {
            let failure = calls.failure(path)
            // OpenSSH answers a file's opendir with a bare failure: say what it is.
            let named = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
            if case .refused = failure, let attributes = try? calls.stat(named, follow: true), !attributes.isDirectory {
                throw .refused("\(named) is not a directory")
            }
            throw failure
        }
        defer { rangefs_sftp_closedir(handle) }
        var entries: [WebListingEntry] = []
        var ancestors: [String]?
        var name = [CChar](repeating: 0, count: 4097)
        // Every name read counts, those left out too: a server sending names without end is
        // stopped as surely as one with too many entries.
        var namesRead = 0
        while true {
            var attributes = LIBSSH2_SFTP_ATTRIBUTES()
            let length = rangefs_sftp_readdir(handle, &name, name.count - 1, &attributes)
            if length == 0 { break }
            if length == LIBSSH2_ERROR_BUFFER_TOO_SMALL {
                throw .refused("\(directory.redactedForDisplay): the server lists a name longer than \(name.count - 1) bytes, which no file has")
            }
            guard length > 0 else { throw calls.failure(path) }
            namesRead += 1
            if namesRead > maxEntries + 2 { throw tooMany() }
            let bytes = name.prefix(Int(length)).map { UInt8(bitPattern: $0) }
            guard let text = String(validating: bytes, as: UTF8.self) else {
                logger.notice("\(directory.redactedForDisplay): an entry whose name is not UTF-8 is left out")
                continue
            }
            if text == "." || text == ".." { continue }
            if let entry = try entry(named: text, attributes: SFTPCalls.Attributes(raw: attributes), in: path, ancestors: &ancestors) {
                entries.append(entry)
            }
            // Refused as it is read: a directory of millions of names costs no more than this.
            if entries.count > maxEntries { throw tooMany() }
        }
        return entries
    }

    private func tooMany() -> RemoteError {
        .refused("\(directory.redactedForDisplay): more than \(maxEntries) entries in one directory, more than the mount holds (--max-listed-entries)")
    }

    /// The entry for `name`, or nil for one that is left out (said in the log). `ancestors`:
    /// where the listed directory and those above it in the tree really are, found when first needed.
    private func entry(named name: String, attributes: SFTPCalls.Attributes, in path: String,
                       ancestors: inout [String]?) throws(RemoteError) -> WebListingEntry? {
        let childPath = path.hasSuffix("/") ? path + name : path + "/" + name
        var shown = attributes
        if attributes.isLink {
            guard let target = try? calls.realpath(childPath), relative(target) != nil else {
                logger.notice("\(directory.redactedForDisplay)\(name): a symbolic link out of the mounted tree (or to nothing) is left out")
                return nil
            }
            guard let followed = try? calls.stat(childPath, follow: true) else {
                logger.notice("\(directory.redactedForDisplay)\(name): a symbolic link to nothing is left out")
                return nil
            }
            // Shown where it is, under its own name; one to a directory that holds the listed one
            // or one above it in the tree would show the tree inside itself without end.
            if followed.isDirectory {
                let above = ancestors ?? realAncestors(of: path)
                ancestors = above
                let top = target.hasSuffix("/") ? target : target + "/"
                if above.contains(where: { $0 == target || $0.hasPrefix(top) }) {
                    logger.notice("\(directory.redactedForDisplay)\(name): a symbolic link to a directory above it is left out (it would loop)")
                    return nil
                }
            }
            shown = followed
        }
        if shown.isDirectory {
            return WebListingEntry(name: name, url: SFTPAddress.url(root: directory, below: [name], isDirectory: true),
                                   isDirectory: true, modified: shown.modified)
        }
        guard shown.isRegular, let size = shown.size else {
            logger.debug("\(directory.redactedForDisplay)\(name): neither a file nor a directory, left out")
            return nil
        }
        return WebListingEntry(name: name, url: SFTPAddress.url(root: directory, below: [name], isDirectory: false),
                               isDirectory: false, size: size, modified: shown.modified)
    }

    /// Where the listed directory `path` and each directory above it up to the mounted one
    /// really are (`realpath`, links undone): one call a level, the tree's depth being bounded.
    private func realAncestors(of path: String) -> [String] {
        let rootPath = calls.rootPath.hasSuffix("/") ? calls.rootPath : calls.rootPath + "/"
        let listed = path.hasSuffix("/") ? path : path + "/"
        guard listed.hasPrefix(rootPath) else { return [calls.canonicalRoot] }
        var places = [calls.canonicalRoot]
        var seen = rootPath
        for name in listed.dropFirst(rootPath.count).split(separator: "/") {
            seen += name + "/"
            if let real = try? calls.realpath(seen) { places.append(real) }
        }
        return places
    }

    /// `target`'s names below the mounted directory, or nil when it is not inside it.
    private func relative(_ target: String) -> [String]? {
        let top = calls.canonicalRoot.hasSuffix("/") ? calls.canonicalRoot : calls.canonicalRoot + "/"
        if target == calls.canonicalRoot { return [] }
        guard target.hasPrefix(top) else { return nil }
        return target.dropFirst(top.count).split(separator: "/").map(String.init)
    }
}
