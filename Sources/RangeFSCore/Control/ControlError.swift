import Foundation

/// Why talking to a mount's control socket, or serving one, failed; each reads as a sentence.
public enum ControlError: Error, Equatable, CustomStringConvertible {
    /// Even through its directory, the socket's address does not fit a `sockaddr_un`.
    case socketPathTooLong(path: String)
    /// Something other than a socket sits where the socket should go.
    case notASocket(path: String)
    /// A live server already answers at the path.
    case alreadyServing(path: String)
    /// No socket file, or one whose server has gone.
    case notListening(path: String)
    case permissionDenied(path: String)
    case timedOut(path: String, after: Duration)
    case malformedReply(detail: String)
    /// The mount answered `ok:false`; its message, verbatim.
    case refused(String)
    case system(operation: String, path: String, errno: Int32)

    public var description: String {
        switch self {
        case .socketPathTooLong(let path):
            return "the control socket's file name is too long for a Unix socket address (at most \(UnixSocketAddress.maxIndirectNameBytes) bytes): \(path)"
        case .notASocket(let path):
            return "\(path) exists and is not a socket; not replacing it"
        case .alreadyServing(let path):
            return "another rangefs mount is already listening at \(path)"
        case .notListening(let path):
            return "no rangefs mount is listening at \(path)"
        case .permissionDenied(let path):
            return "permission denied: \(path) (only the mount's owner or root may control it)"
        case .timedOut(let path, let after):
            return "the mount did not answer at \(path) within \(Self.seconds(after))"
        case .malformedReply(let detail):
            return "unexpected reply from the mount: \(detail)"
        case .refused(let message):
            return message
        case .system(let operation, let path, let code):
            return "cannot \(operation) \(path): \(String(cString: strerror(code)))"
        }
    }

    static func seconds(_ duration: Duration) -> String {
        let milliseconds = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        return milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : "\(Double(milliseconds) / 1000) s"
    }
}
