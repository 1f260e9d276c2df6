import Foundation

/// The client side of a mount's control socket: one request, one reply, one connection.
public enum ControlClient {
    /// Sends `command` to the mount listening at `path` and returns its decoded reply (which may
    /// be `ok:false`; `ControlReply.requireStatus()` turns that into an error). The whole
    /// exchange, connecting included, is bounded by `timeout`.
    public static func send(_ command: ControlCommand, paths: [String]? = nil, to path: String,
                            timeout: Duration = .seconds(5)) throws(ControlError) -> ControlReply {
        try exchange(ControlWire.line(ControlRequest(command: command, paths: paths)), with: path, timeout: timeout)
    }

    /// Sends raw request bytes; tests use it to speak out of turn.
    static func exchange(_ request: [UInt8], with path: String, timeout: Duration) throws(ControlError) -> ControlReply {
        let deadline = ContinuousClock.now + timeout
        let socket: UnixSocket
        do {
            socket = try UnixSocket.stream()
        } catch {
            throw .system(operation: "create a socket for", path: path, errno: error.code)
        }
        defer { socket.close() }

        // A Unix socket's connect waits (for a full backlog) only as long as the send timeout.
        socket.limitWaits(to: timeout)
        let connected = try UnixSocketAddress.perform(path) { connect(socket.descriptor, $0, $1) == 0 ? 0 : errno }
        switch connected {
        case 0: break
        case ENOENT, ENOTDIR, ECONNREFUSED: throw .notListening(path: path)
        case EACCES, EPERM: throw .permissionDenied(path: path)
        case EAGAIN, ETIMEDOUT: throw .timedOut(path: path, after: timeout)
        default: throw .system(operation: "connect to", path: path, errno: connected)
        }

        let sendFailure = socket.sendAll(request, until: deadline)
        switch sendFailure {
        case nil, EPIPE, ECONNRESET:
            // A server that hung up early may still have said why (a refusal, a request too large).
            break
        case EAGAIN:
            throw .timedOut(path: path, after: timeout)
        case let code?:
            throw .system(operation: "send to", path: path, errno: code)
        }

        switch socket.receiveLine(limit: ControlWire.maxReplyBytes, until: deadline) {
        case .line(let line):
            return try ControlWire.reply(fromLine: line)
        case .closed:
            throw .malformedReply(detail: "the mount closed the connection without answering")
        case .tooLarge:
            throw .malformedReply(detail: "the reply exceeds \(ControlWire.maxReplyBytes) bytes")
        case .timedOut:
            throw .timedOut(path: path, after: timeout)
        case .failed(let code):
            throw .system(operation: "read the reply from", path: path, errno: code)
        }
    }
}
