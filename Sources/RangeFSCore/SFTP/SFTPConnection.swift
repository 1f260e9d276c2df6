import CSSH2
import Foundation
import Logging

/// The one SSH session a mount lists and `stat`s with, kept open between calls on a queue of its
/// own (libssh2 sessions are not thread safe; every call here runs on `queue`). Made when first
/// needed, so a mount whose listings are all kept starts without the server; dropped after a
/// failure of the session itself (a timeout, a reset) and made again by the next call.
public final class SFTPConnection: @unchecked Sendable {
    // @unchecked: `session` and `canonicalRoot` are read and written on `queue` alone.
    private let address: SFTPAddress
    private let signIn: SSHSignIn
    private let timeout: Duration
    let logger: Logger
    private let queue = DispatchQueue(label: "rangefs.sftp-session")
    private var session: SSHSession?
    /// The mounted directory as the server resolves it (links and `~` undone), for links.
    private var canonicalRoot: String?

    /// `timeout`: the longest any one wait on the server may take.
    public init(address: SFTPAddress, signIn: SSHSignIn, timeout: Duration, logger: Logger) {
        self.address = address
        self.signIn = signIn
        self.timeout = timeout
        self.logger = logger
    }

    var rootURL: URL { address.rootURL }

    /// Runs `work` on the queue with a signed-in session; `completion` gets its outcome. A
    /// failure of the session itself drops it, so the next call connects again.
    func run<T: Sendable>(_ work: @escaping @Sendable (SFTPCalls) throws(RemoteError) -> T,
                          completion: @escaping @Sendable (Result<T, RemoteError>) -> Void) {
        queue.async { [self] in
            completion(perform(work))
        }
    }

    private func perform<T>(_ work: (SFTPCalls) throws(RemoteError) -> T) -> Result<T, RemoteError> {
        do throws(RemoteError) {
            let session: SSHSession
            if let open = self.session {
                session = open
            } else {
                session = try SSHSession(address: address, signIn: signIn, timeout: timeout)
                self.session = session
            }
            let calls = SFTPCalls(session: session, rootPath: SFTPAddress.remotePath(of: address.rootURL) ?? "/")
            if canonicalRoot == nil { canonicalRoot = try calls.realpath(calls.rootPath) }
            return .success(try work(calls.with(canonicalRoot: canonicalRoot!)))
        } catch {
            if case .transport = error { session = nil }
            return .failure(error)
        }
    }

    /// A file's size and version now (`stat`, following links), as a size probe reports them.
    func stat(_ url: URL, completion: @escaping @Sendable (Result<RemoteFileInfo, RemoteError>) -> Void) {
        run({ calls throws(RemoteError) in
            guard let path = SFTPAddress.remotePath(of: url) else { throw .refused("\(url.redactedForDisplay): not a path") }
            let attributes = try calls.stat(path, follow: true)
            guard attributes.isRegular else {
                throw .refused("\(url.redactedForDisplay) is not a file on the server")
            }
            return try SFTPVersion.fileInfo(size: attributes.size, modified: attributes.modified)
        }, completion: completion)
    }
}

/// The SFTP calls a listing or a probe makes, each failure said as a `RemoteError`: one the
/// server answered (no such file, permission denied) is `refused`; one of the session
/// (timeout, reset) is `transport`, which drops the session.
struct SFTPCalls {
    let session: SSHSession
    let rootPath: String
    private(set) var canonicalRoot = "/"

    init(session: SSHSession, rootPath: String) {
        self.session = session
        self.rootPath = rootPath
    }

    func with(canonicalRoot: String) -> SFTPCalls {
        var calls = self
        calls.canonicalRoot = canonicalRoot
        return calls
    }

    struct Attributes {
        var raw: LIBSSH2_SFTP_ATTRIBUTES
        var size: UInt64? { raw.flags & UInt(LIBSSH2_SFTP_ATTR_SIZE) != 0 ? UInt64(raw.filesize) : nil }
        var modified: Date? {
            raw.flags & UInt(LIBSSH2_SFTP_ATTR_ACMODTIME) != 0 ? Date(timeIntervalSince1970: TimeInterval(raw.mtime)) : nil
        }
        var isDirectory: Bool { withUnsafePointer(to: raw) { rangefs_sftp_is_directory($0) != 0 } }
        var isRegular: Bool { withUnsafePointer(to: raw) { rangefs_sftp_is_regular($0) != 0 } }
        var isLink: Bool { withUnsafePointer(to: raw) { rangefs_sftp_is_link($0) != 0 } }
    }

    func stat(_ path: String, follow: Bool) throws(RemoteError) -> Attributes {
        var raw = LIBSSH2_SFTP_ATTRIBUTES()
        guard rangefs_sftp_stat(session.sftp, path, follow ? 1 : 0, &raw) == 0 else { throw failure(path) }
        return Attributes(raw: raw)
    }

    /// The path with every link, `.` and `..` resolved by the server.
    func realpath(_ path: String) throws(RemoteError) -> String {
        var target = [CChar](repeating: 0, count: 4097)
        let length = rangefs_sftp_realpath(session.sftp, path, &target, UInt32(target.count - 1))
        guard length >= 0 else { throw failure(path) }
        return String(decoding: target.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// What the failed call on `path` met.
    func failure(_ path: String) -> RemoteError {
        let code = session.lastErrorCode
        guard code == LIBSSH2_ERROR_SFTP_PROTOCOL else {
            return .transport("the SSH session failed (\(session.lastError))")
        }
        switch UInt(libssh2_sftp_last_error(session.sftp)) {
        case UInt(LIBSSH2_FX_NO_SUCH_FILE), UInt(LIBSSH2_FX_NO_SUCH_PATH): return .refused("\(path): no such file or directory on the server")
        case UInt(LIBSSH2_FX_PERMISSION_DENIED): return .refused("\(path): permission denied by the server")
        case UInt(LIBSSH2_FX_NOT_A_DIRECTORY): return .refused("\(path) is not a directory")
        case let other: return .refused("\(path): the server refused it (SFTP status \(other))")
        }
    }
}
