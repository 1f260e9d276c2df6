import Foundation
import Synchronization

/// Serves a mount's control socket: `rangefs status`, `pause` and `resume` connect, send one
/// JSON line and get one back. One thread takes connections one at a time; each is tiny and
/// bounded in time, so a silent or slow client delays the next by at most a few seconds.
/// Only the mount's owner and root are served. Call `stop()` before the mount goes away.
public final class ControlServer: Sendable {
    public let path: String
    private let control: any MountControl
    private let requestTimeout: Duration
    private let ownerUserID: uid_t
    /// The socket file we created, so `stop()` removes that file and no other.
    private let socketFile: FileIdentity
    private let state: Mutex<State>
    private let finished = DispatchSemaphore(value: 0)

    /// Descriptors are closed only by the serving thread and shut down only under the lock, so
    /// `stop()` can never touch a descriptor number that has been closed and reused.
    private struct State {
        var listener: Int32?
        var connection: Int32?
        var stopping = false
        /// Connections taken to be served, ever; tests wait on it.
        var admittedConnections = 0
    }

    /// How many connections the server has taken to serve so far.
    var admittedConnections: Int { state.withLock { $0.admittedConnections } }

    public convenience init(path: String, control: any MountControl) throws(ControlError) {
        try self.init(path: path, control: control, requestTimeout: ControlWire.serverTimeout)
    }

    init(path: String, control: any MountControl, requestTimeout: Duration) throws(ControlError) {
        self.path = path
        self.control = control
        self.requestTimeout = requestTimeout
        ownerUserID = geteuid()
        try Self.removeStaleSocket(at: path)

        let listener: UnixSocket
        do {
            listener = try UnixSocket.stream()
        } catch {
            throw .system(operation: "create a socket for", path: path, errno: error.code)
        }
        let bound = try UnixSocketAddress.perform(path) { bind(listener.descriptor, $0, $1) == 0 ? 0 : errno }
        guard bound == 0 else {
            listener.close()
            throw bound == EADDRINUSE ? .alreadyServing(path: path) : .system(operation: "create the control socket", path: path, errno: bound)
        }
        // The file appears with the umask's mode for a moment; the peer check below covers that gap.
        guard chmod(path, 0o600) == 0, listen(listener.descriptor, 16) == 0,
              let identity = FileIdentity(path: path) else {
            let code = errno
            listener.close()
            unlink(path)
            throw .system(operation: "listen on", path: path, errno: code)
        }
        socketFile = identity
        state = Mutex(State(listener: listener.descriptor))

        ThreadNames.start("rangefs-control") { [self] in
            acceptConnections(on: listener)
        }
    }

    /// Stops serving and removes the socket file. Returns within about two seconds even if a
    /// client is in the middle of a request: its connection is shut down too.
    public func stop() {
        let first = state.withLock { state -> Bool in
            guard !state.stopping else { return false }
            state.stopping = true
            // shutdown wakes a thread blocked in accept or recv; close is left to that thread.
            if let listener = state.listener { shutdown(listener, Int32(SHUT_RDWR)) }
            if let connection = state.connection { shutdown(connection, Int32(SHUT_RDWR)) }
            return true
        }
        guard first else { return }
        _ = finished.wait(timeout: .now() + .seconds(2))
        if FileIdentity(path: path) == socketFile {
            unlink(path)
        }
    }

    /// Whether a peer may control the mount: its owner, or root.
    static func mayControl(peer: uid_t, owner: uid_t) -> Bool {
        peer == owner || peer == 0
    }

    // MARK: - The serving thread

    private func acceptConnections(on listener: UnixSocket) {
        defer {
            state.withLock { state in
                state.listener = nil
                listener.close()
            }
            finished.signal()
        }
        // Runs until stop(): shutdown makes accept fail with EINVAL. Transient failures are retried
        // after a pause so that running out of descriptors does not spin.
        while !state.withLock({ $0.stopping }) {
            let descriptor = accept(listener.descriptor, nil, nil)
            guard descriptor >= 0 else {
                switch errno {
                case EINTR: continue
                case ECONNABORTED, EMFILE, ENFILE, ENOBUFS, ENOMEM, EPROTO:
                    usleep(100_000)
                    continue
                default:
                    return
                }
            }
            // Not inherited by anything the mount process might start.
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
            let connection = UnixSocket(descriptor: descriptor)
            let admitted = state.withLock { state -> Bool in
                guard !state.stopping else { return false }
                state.connection = descriptor
                state.admittedConnections += 1
                return true
            }
            if admitted {
                serve(connection)
            }
            state.withLock { state in
                state.connection = nil
                connection.close()
            }
        }
    }

    private func serve(_ connection: UnixSocket) {
        guard let reply = reply(on: connection) else { return }
        _ = connection.sendAll(ControlWire.line(reply), until: .now + requestTimeout)
    }

    /// The answer to the connection's request, or nil when nobody is left to answer.
    private func reply(on connection: UnixSocket) -> ControlReply? {
        guard let peer = connection.peerUserID(), Self.mayControl(peer: peer, owner: ownerUserID) else {
            return .failure("permission denied: only the mount's owner (uid \(ownerUserID)) or root may control it")
        }
        switch connection.receiveLine(limit: ControlWire.maxRequestBytes, until: .now + requestTimeout) {
        case .line(let line):
            return reply(to: line)
        case .tooLarge:
            return .failure("request too large: the limit is \(ControlWire.maxRequestBytes) bytes")
        case .timedOut:
            return .failure("no complete request line within \(ControlError.seconds(requestTimeout))")
        case .closed, .failed:
            return nil
        }
    }

    private func reply(to line: [UInt8]) -> ControlReply {
        switch ControlWire.request(fromLine: line) {
        case .failure(let error):
            return .failure(error.message)
        case .success(let request):
            switch request.command {
            case .status:
                return .success(control.status())
            case .pause:
                control.setPaused(true)
                return .success(control.status())
            case .resume:
                control.setPaused(false)
                return .success(control.status())
            case .evict, .pin, .unpin, .verify, .refresh:
                do {
                    let message = try control.manage(request.command, paths: request.paths ?? [])
                    return .success(control.status(), message: message)
                } catch {
                    return .failure(error.description)
                }
            }
        }
    }

    // MARK: - The socket file

    /// Makes room for the socket: a leftover socket whose server has gone is removed; a live
    /// one, or anything that is not a socket, is left alone and reported.
    private static func removeStaleSocket(at path: String) throws(ControlError) {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            let code = errno
            if code == ENOENT { return }
            throw .system(operation: "inspect", path: path, errno: code)
        }
        guard info.st_mode & S_IFMT == S_IFSOCK else { throw .notASocket(path: path) }
        let probe: UnixSocket
        do {
            probe = try UnixSocket.stream()
        } catch {
            throw .system(operation: "create a socket for", path: path, errno: error.code)
        }
        defer { probe.close() }
        probe.limitWaits(to: .seconds(1))
        let connected = try UnixSocketAddress.perform(path) { connect(probe.descriptor, $0, $1) == 0 ? 0 : errno }
        switch connected {
        case 0, EAGAIN:
            // Answers, or its backlog is full: alive either way.
            throw .alreadyServing(path: path)
        case ECONNREFUSED:
            guard unlink(path) == 0 || errno == ENOENT else {
                throw .system(operation: "remove the stale socket", path: path, errno: errno)
            }
        default:
            throw .system(operation: "check the existing socket", path: path, errno: connected)
        }
    }
}

/// A file's device and inode: what stays the same while the file is the same file.
struct FileIdentity: Equatable, Sendable {
    var device: UInt64
    var inode: UInt64

    init?(path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }
}
