import Foundation

/// A failed system call's `errno`, captured at once before anything can overwrite it.
struct SystemErrno: Error {
    var code: Int32
}

/// One Unix stream socket and the few operations the control channel needs. Every wait is
/// bounded by a deadline: before each call the socket's send and receive timeouts are set to
/// the time that is left (for `connect` on a Unix socket the kernel uses the send timeout too).
struct UnixSocket: Sendable {
    let descriptor: Int32

    enum Received: Equatable {
        /// The bytes before the first newline.
        case line([UInt8])
        /// More than the limit arrived without a newline.
        case tooLarge
        /// End of file before a newline.
        case closed
        case timedOut
        case failed(Int32)
    }

    static func stream() throws(SystemErrno) -> UnixSocket {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw SystemErrno(code: errno) }
        return UnixSocket(descriptor: descriptor)
    }

    func close() {
        _ = Foundation.close(descriptor)
    }

    /// Makes the next blocking call give up with `EAGAIN` after `remaining`.
    func limitWaits(to remaining: Duration) {
        // Zero would mean "wait forever"; the smallest real wait is one microsecond.
        let microseconds = max(1, remaining.components.seconds * 1_000_000 + remaining.components.attoseconds / 1_000_000_000_000)
        var limit = timeval(tv_sec: Int(microseconds / 1_000_000), tv_usec: Int(microseconds % 1_000_000))
        let size = socklen_t(MemoryLayout<timeval>.size)
        _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &limit, size)
        _ = setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &limit, size)
    }

    /// Sends every byte, or returns the `errno` that stopped it (`EAGAIN` once the deadline passes).
    func sendAll(_ bytes: [UInt8], until deadline: ContinuousClock.Instant) -> Int32? {
        var offset = 0
        while offset < bytes.count {
            let remaining = deadline - .now
            guard remaining > .zero else { return EAGAIN }
            limitWaits(to: remaining)
            // MSG_NOSIGNAL: a peer that hung up is an error to report, not a SIGPIPE to die of.
            let sent = bytes.withUnsafeBytes { buffer in
                send(descriptor, buffer.baseAddress! + offset, buffer.count - offset, Int32(MSG_NOSIGNAL))
            }
            if sent < 0 {
                let code = errno
                if code == EINTR { continue }
                return code
            }
            offset += sent
        }
        return nil
    }

    /// Reads up to the first newline, never keeping more than `limit + 1` bytes.
    func receiveLine(limit: Int, until deadline: ContinuousClock.Instant) -> Received {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 << 10)
        // Bounded: every pass either ends or adds at least one byte, and at most limit + 1 are read.
        while true {
            let remaining = deadline - .now
            guard remaining > .zero else { return .timedOut }
            limitWaits(to: remaining)
            let wanted = min(chunk.count, limit + 1 - bytes.count)
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, wanted, 0) }
            if count < 0 {
                let code = errno
                if code == EINTR { continue }
                return code == EAGAIN || code == EWOULDBLOCK ? .timedOut : .failed(code)
            }
            if count == 0 { return .closed }
            let received = chunk[..<count]
            if let newline = received.firstIndex(of: UInt8(ascii: "\n")) {
                bytes += received[..<newline]
                return bytes.count <= limit ? .line(bytes) : .tooLarge
            }
            bytes += received
            if bytes.count > limit { return .tooLarge }
        }
    }

    /// The user id of the process at the other end, as the kernel recorded it at `connect`.
    func peerUserID() -> uid_t? {
        var credentials = PeerCredentials()
        var size = socklen_t(MemoryLayout<PeerCredentials>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_PEERCRED, &credentials, &size) == 0,
              Int(size) == MemoryLayout<PeerCredentials>.size else { return nil }
        return credentials.uid
    }
}

/// Linux's `struct ucred` (pid_t, uid_t, gid_t), which Glibc only declares under `_GNU_SOURCE`
/// and so does not reach Swift; the layout is fixed by the kernel ABI.
private struct PeerCredentials {
    var pid: pid_t = 0
    var uid: uid_t = 0
    var gid: gid_t = 0
}

/// Socket addresses for filesystem paths. `sun_path` holds 107 bytes and a NUL; a longer path is
/// reached through its directory instead: the directory is opened and the socket is named
/// `/proc/self/fd/N/<file name>`, which the kernel resolves to the very same file for `bind`
/// and `connect`. Only the file name then has to be short.
enum UnixSocketAddress {
    static let capacity = MemoryLayout.size(ofValue: sockaddr_un().sun_path)
    /// The longest file name the `/proc/self/fd/N/` route leaves room for.
    static let maxIndirectNameBytes = capacity - 1 - "/proc/self/fd/2147483647/".utf8.count

    /// Runs `call` (a `bind` or `connect`) on the address of `path` and returns 0 or its `errno`;
    /// the `errno` of opening the directory, for a long path, comes back the same way.
    static func perform(_ path: String, _ call: (UnsafePointer<sockaddr>, socklen_t) -> Int32) throws(ControlError) -> Int32 {
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, !bytes.contains(0) else { return EINVAL }
        if bytes.count < capacity { return withAddress(bytes, call) }

        let slash = bytes.lastIndex(of: UInt8(ascii: "/"))
        let name = slash.map { bytes[($0 + 1)...] } ?? bytes[...]
        guard !name.isEmpty, name.count <= maxIndirectNameBytes else { throw .socketPathTooLong(path: path) }
        let directory = slash.map { $0 == 0 ? "/" : String(decoding: bytes[..<$0], as: UTF8.self) } ?? "."
        let directoryDescriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directoryDescriptor >= 0 else { return errno }
        defer { close(directoryDescriptor) }
        return withAddress(Array("/proc/self/fd/\(directoryDescriptor)/".utf8) + name, call)
    }

    private static func withAddress(_ pathBytes: [UInt8], _ call: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
        precondition(pathBytes.count < capacity, "socket path must fit sun_path")
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: pathBytes)
            buffer[pathBytes.count] = 0
        }
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { call($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }
}
