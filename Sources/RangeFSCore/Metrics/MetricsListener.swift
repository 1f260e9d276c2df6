import Foundation
import Logging
import Synchronization

/// A small HTTP/1.x listener that answers `GET /metrics` with the Prometheus text format, on
/// one thread (`rangefs-metrics`), one connection at a time. A request is read up to
/// `maxRequestBytes` within `clientTimeout`; anything else gets a short error status and the
/// connection is closed after each answer. Scrapes are rare and small: no framework needed.
public final class MetricsListener: Sendable {
    public static let maxRequestBytes = 8192
    public static let clientTimeout: Duration = .seconds(5)

    /// Where it listens, with the port the kernel chose when asked for port 0.
    public let address: MetricsAddress
    private let descriptor: Int32
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    /// Binds and listens at once (so a taken port fails the mount), then serves on its thread;
    /// `body` makes each answer.
    public init(address: MetricsAddress, logger: Logger, body: @escaping @Sendable () -> String) throws(MetricsAddressError) {
        guard let family = MetricsAddress.family(of: address.host) else {
            throw MetricsAddressError(address.description, "the host must be an IP address")
        }
        let descriptor = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw MetricsAddressError(address.description, String(cString: strerror(errno))) }
        var on: Int32 = 1
        _ = setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        var (storage, length) = address.socketAddress(family: family)
        let bound = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard bound == 0, listen(descriptor, 16) == 0 else {
            let reason = String(cString: strerror(errno))
            _ = close(descriptor)
            throw MetricsAddressError(address.description, "cannot listen there: \(reason)")
        }
        var local = sockaddr_storage()
        var localLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &localLength) }
        }
        let port = withUnsafeBytes(of: local) { bytes in
            // sin_port and sin6_port sit at the same offset, right after the family.
            UInt16(bigEndian: bytes.load(fromByteOffset: 2, as: UInt16.self))
        }
        self.address = MetricsAddress(host: address.host, port: port)
        self.descriptor = descriptor
        ThreadNames.start("rangefs-metrics") { [self] in
            serve(logger: logger, body: body)
        }
    }

    /// Stops accepting and returns once the thread has ended (within a poll interval and the
    /// answer being written, which is bounded by `clientTimeout`).
    public func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        finished.wait()
        _ = close(descriptor)
    }

    private func serve(logger: Logger, body: @Sendable () -> String) {
        defer { finished.signal() }
        while !stopping.load(ordering: .acquiring) {
            var waiting = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&waiting, 1, 200) > 0 else { continue }
            let client = accept(descriptor, nil, nil)
            guard client >= 0 else { continue }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            // UnixSocket's bounded waits and sends work on any stream socket, TCP too.
            answer(UnixSocket(descriptor: client), body: body, logger: logger)
            _ = close(client)
        }
    }

    private func answer(_ client: UnixSocket, body: () -> String, logger: Logger) {
        let deadline = ContinuousClock.now + Self.clientTimeout
        let reply: MetricsHTTP.Reply
        switch MetricsHTTP.readHead(from: client, until: deadline) {
        case .head(let head): reply = MetricsHTTP.reply(to: head, body: body)
        case .tooLarge: reply = .init(status: "431 Request Header Fields Too Large")
        case .incomplete: return
        }
        if let failure = client.sendAll(reply.bytes, until: deadline) {
            logger.debug("metrics: a scrape's answer was not delivered (errno \(failure))")
        }
    }
}
