#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A latch every wait of the server listens to: `fire()` makes one socket readable, and
/// every `poll` (accept, receive, send, stall, throttle) includes that socket, so all
/// threads notice a stop at once instead of after their own timeouts.
final class StopSignal: Sendable {
    /// Readable once fired.
    let wakeFD: Int32
    private let fireFD: Int32
    private let fired = Atomic<Bool>(false)

    init() throws(SocketError) {
        var pair: [Int32] = [-1, -1]
        // CLOEXEC: child processes the tests spawn must not inherit the server's sockets.
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw SocketError("socketpair", errno)
        }
        wakeFD = pair[0]
        fireFD = pair[1]
    }

    var isFired: Bool { fired.load(ordering: .acquiring) }

    func fire() {
        guard !fired.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var byte: UInt8 = 1
        _ = send(fireFD, &byte, 1, Int32(MSG_NOSIGNAL))
    }

    /// Waits `duration` unless fired first; true when the whole time passed.
    func sleep(_ duration: Duration) -> Bool {
        let deadline = ContinuousClock.now + duration
        while !isFired {
            let left = ContinuousClock.now.duration(to: deadline)
            if left <= .zero { return true }
            var fd = pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)
            _ = poll(&fd, 1, left.pollMilliseconds)
        }
        return false
    }

    deinit {
        close(wakeFD)
        close(fireFD)
    }
}

extension Duration {
    /// Rounded up to whole milliseconds and capped, as `poll` takes them.
    var pollMilliseconds: Int32 {
        let (seconds, attoseconds) = components
        let millis = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: max(0, min(millis, 60_000)))
    }
}
