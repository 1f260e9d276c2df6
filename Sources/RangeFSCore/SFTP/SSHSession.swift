import CSSH2
import Foundation

/// One signed-in SSH connection with its SFTP channel (libssh2), for listings and `stat`s.
/// Every call blocks at most `timeout` (libssh2's session timeout; the TCP connect has its own
/// poll), so a server that stops answering fails the call instead of hanging it. Not thread
/// safe: its owner (`SFTPConnection`) calls it from one serial queue only.
final class SSHSession {
    private let socket: Int32
    private let session: OpaquePointer
    let sftp: OpaquePointer

    /// Connects to `address`, checks its host key, signs in and opens the SFTP channel.
    init(address: SFTPAddress, signIn: SSHSignIn, timeout: Duration) throws(RemoteError) {
        SSHLibrary.initialize()
        socket = try Self.connect(host: address.host, port: address.port, timeout: timeout)
        guard let session = rangefs_ssh_session_new() else {
            close(socket)
            throw .transport("libssh2 could not make a session")
        }
        self.session = session
        libssh2_session_set_blocking(session, 1)
        libssh2_session_set_timeout(session, max(1, Int(timeout.timeInterval * 1000)))
        let server = address.knownHostsName
        do throws(RemoteError) {
            guard libssh2_session_handshake(session, libssh2_socket_t(socket)) == 0 else {
                throw .transport("\(server): the SSH handshake failed (\(Self.lastError(session)))")
            }
            try Self.checkHostKey(session, address: address, knownHostsFile: signIn.knownHostsFile)
            try SSHAuthentication(session: session, signIn: signIn, server: "\(signIn.user)@\(server)").authenticate()
            guard let sftp = libssh2_sftp_init(session) else {
                throw .refused("\(server): the server opens no SFTP channel (\(Self.lastError(session)))")
            }
            self.sftp = sftp
        } catch {
            rangefs_ssh_disconnect(session, "rangefs is done")
            libssh2_session_free(session)
            close(socket)
            throw error
        }
    }

    deinit {
        libssh2_sftp_shutdown(sftp)
        rangefs_ssh_disconnect(session, "rangefs is done")
        libssh2_session_free(session)
        close(socket)
    }

    /// libssh2's code and message for the session's last failure.
    var lastError: String { Self.lastError(session) }
    var lastErrorCode: Int32 { rangefs_ssh_last_errno(session) }

    static func lastError(_ session: OpaquePointer) -> String {
        var message: UnsafeMutablePointer<CChar>?
        var length: Int32 = 0
        let code = libssh2_session_last_error(session, &message, &length, 0)
        return message.map { String(cString: $0) } ?? "libssh2 error \(code)"
    }

    /// The host key against the known-hosts file; refused unless it is there, for this host.
    private static func checkHostKey(_ session: OpaquePointer, address: SFTPAddress, knownHostsFile: String) throws(RemoteError) {
        guard let knownHosts = libssh2_knownhost_init(session) else { throw .transport("libssh2 could not read known hosts") }
        defer { libssh2_knownhost_free(knownHosts) }
        // A file that is not there holds no key: the host is unknown, which the verdict says.
        if FileManager.default.fileExists(atPath: knownHostsFile), rangefs_knownhost_read_file(knownHosts, knownHostsFile) < 0 {
            throw .refused(HostKeyVerdict.uncheckable("the file cannot be read (\(lastError(session)))")
                .refusal(host: address.host, port: address.port, name: address.knownHostsName, knownHostsFile: knownHostsFile)!)
        }
        let verdict = HostKeyVerdict.of(checkResult: rangefs_knownhost_check(knownHosts, session, address.host, Int32(address.port)))
        if let refusal = verdict.refusal(host: address.host, port: address.port, name: address.knownHostsName,
                                         knownHostsFile: knownHostsFile) {
            throw .refused(refusal)
        }
    }

    /// A TCP connection to `host`:`port` within `timeout`, blocking once made (libssh2's own
    /// timeout bounds every wait after that).
    private static func connect(host: String, port: Int, timeout: Duration) throws(RemoteError) -> Int32 {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var found: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &found)
        guard status == 0, let first = found else {
            throw .transport("\(host): no such host (\(String(cString: gai_strerror(status))))")
        }
        defer { freeaddrinfo(found) }
        var lastFailure = "no address"
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let address = candidate {
            candidate = address.pointee.ai_next
            let descriptor = Glibc.socket(address.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
                                          | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard descriptor >= 0 else { continue }
            if Glibc.connect(descriptor, address.pointee.ai_addr, address.pointee.ai_addrlen) != 0, errno != EINPROGRESS {
                lastFailure = String(cString: strerror(errno))
            } else if let failure = waitConnected(descriptor, timeout: timeout) {
                lastFailure = failure
            } else {
                _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK)
                return descriptor
            }
            close(descriptor)
        }
        throw .transport("cannot connect to \(host) port \(port): \(lastFailure)")
    }

    /// Nil once the connection is made; else why it is not, within `timeout`.
    private static func waitConnected(_ descriptor: Int32, timeout: Duration) -> String? {
        var poll = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
        let ready = Glibc.poll(&poll, 1, Int32(max(1, timeout.timeInterval * 1000)))
        guard ready > 0 else { return ready == 0 ? "no answer within \(timeout)" : String(cString: strerror(errno)) }
        var failure: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &failure, &length)
        return failure == 0 ? nil : String(cString: strerror(failure))
    }
}

/// `libssh2_init` runs once, before any session is made.
enum SSHLibrary {
    private static let initialized: Bool = { libssh2_init(0) == 0 }()

    static func initialize() {
        precondition(initialized, "libssh2_init failed")
    }
}
