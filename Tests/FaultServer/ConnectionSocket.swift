#if canImport(Glibc)
import Glibc
#endif

/// One accepted connection. Every wait is a `poll` that also watches the stop signal and
/// has a deadline, so no peer can pin a thread forever.
struct ConnectionSocket: Sendable {
    let fd: Int32

    init(fd: Int32) {
        self.fd = fd
        // Head and body go out in separate writes; without this, Nagle's algorithm and the
        // peer's delayed ACK add about 40 ms to small responses.
        var yes: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
    }

    enum ReceiveOutcome: Equatable {
        case received(Int)
        case closed
        case timedOut
        case stopped
    }

    /// Appends what arrives (at most `limit` bytes) to `buffer`.
    func receive(into buffer: inout [UInt8], limit: Int = 16 * 1024, timeout: Duration,
                 stop: StopSignal) -> ReceiveOutcome {
        let deadline = ContinuousClock.now + timeout
        while true {
            if stop.isFired { return .stopped }
            let left = ContinuousClock.now.duration(to: deadline)
            if left <= .zero { return .timedOut }
            guard waitFor(Int16(POLLIN), timeout: left, stop: stop) else { continue }
            var chunk = [UInt8](repeating: 0, count: limit)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 {
                buffer.append(contentsOf: chunk[..<n])
                return .received(n)
            }
            if n == 0 { return .closed }
            if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { continue }
            return .closed
        }
    }

    /// Writes all of `bytes`; false when the peer went away, the stop signal fired, or
    /// the peer accepted nothing for `timeout`.
    func send(_ bytes: some Collection<UInt8>, timeout: Duration, stop: StopSignal) -> Bool {
        let contiguous = Array(bytes)
        return contiguous.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                if stop.isFired { return false }
                guard waitFor(Int16(POLLOUT), timeout: timeout, stop: stop) else { return false }
                let n = Glibc.send(fd, raw.baseAddress! + offset, raw.count - offset,
                                   Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
                if n > 0 {
                    offset += n
                } else if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                    continue
                } else {
                    return false
                }
            }
            return true
        }
    }

    /// Closes so that what was sent still arrives: a plain `close` with unread input
    /// (a pipelined request) makes the kernel send RST, and the peer may then discard
    /// bytes it had not read yet. So: half-close, drain briefly, close.
    func closeGracefully(stop: StopSignal) {
        shutdown(fd, Int32(SHUT_WR))
        let deadline = ContinuousClock.now + .milliseconds(500)
        var sink: [UInt8] = []
        while ContinuousClock.now < deadline {
            sink.removeAll(keepingCapacity: true)
            let left = ContinuousClock.now.duration(to: deadline)
            guard case .received = receive(into: &sink, timeout: left, stop: stop) else { break }
        }
        close(fd)
    }

    /// True when `events` are ready; false on timeout or stop.
    private func waitFor(_ events: Int16, timeout: Duration, stop: StopSignal) -> Bool {
        var fds = [pollfd(fd: fd, events: events, revents: 0),
                   pollfd(fd: stop.wakeFD, events: Int16(POLLIN), revents: 0)]
        let ready = poll(&fds, 2, timeout.pollMilliseconds)
        // POLLHUP / POLLERR count as ready: the following recv or send reports them.
        return ready > 0 && fds[0].revents != 0 && !stop.isFired
    }
}
