import Foundation

/// A real HTTP/1.1 server on 127.0.0.1 that misbehaves on request: it drops connections,
/// stalls, lies about ranges and sizes, redirects in loops, changes files between
/// requests. Tests publish files, queue faults, run a client (curl, the rangefs daemon)
/// against `url(_:)`, and then check `requests`, the log of what arrived.
///
/// One thread accepts, one thread serves each connection (keep-alive supported). Every
/// wait is bounded and ends at once on `stop()`, which `deinit` also calls.
public final class FaultServer: Sendable {
    private let core: ServerCore

    /// Binds 127.0.0.1 on a port the kernel picks and starts serving.
    /// - Parameter idleTimeout: how long a connection may stay silent before it is closed.
    public init(idleTimeout: Duration = .seconds(30)) throws {
        core = try ServerCore(limits: ServerLimits(idleTimeout: idleTimeout))
        core.start()
    }

    deinit { core.shutdown(timeout: .seconds(5)) }

    public var port: Int { core.listener.port }

    /// `http://127.0.0.1:PORT/path`, the path percent-encoded (so any published path works).
    public func url(_ path: String) -> URL {
        let key = Self.key(path)
        let encoded = key.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? key
        return URL(string: "http://127.0.0.1:\(port)\(encoded)")!
    }

    // MARK: Files and options

    /// Publishes (or replaces) the file at `path`. Unless given, the ETag is new and strong,
    /// and Last-Modified is now, at least one second after the previous default date (so
    /// a date in `If-Range` also tells versions apart). `etag` may come with or without quotes.
    public func publish(_ path: String, bytes: [UInt8], etag: String? = nil, lastModified: Date? = nil,
                        weakETag: Bool = false) {
        core.state.withLock {
            $0.publish(Self.key(path), bytes: bytes, etag: etag, lastModified: lastModified, weakETag: weakETag)
        }
    }

    /// Later requests for `path` get its `goneStatus` (404 unless configured).
    public func remove(_ path: String) {
        core.state.withLock { $0.remove(Self.key(path)) }
    }

    /// Replaces the options of `path` (defaults: a well-behaved server).
    public func configure(_ path: String, _ options: PathOptions) {
        core.state.withLock { $0.configure(Self.key(path), options) }
    }

    /// The ETag header value currently sent for `path` (quotes and `W/` included).
    public func etag(of path: String) -> String? {
        core.state.withLock { $0.files[Self.key(path)]?.etag }
    }

    /// The Last-Modified header value currently sent for `path`.
    public func lastModified(of path: String) -> String? {
        core.state.withLock { $0.files[Self.key(path)]?.lastModified }
    }

    // MARK: Faults

    /// Queues `fault` for the next `times` requests of `path` (nil: any path) and, if given,
    /// only of that `method` ("GET", "HEAD") and of a `Range` starting at `rangeFrom`. Queued
    /// faults apply in order, one per request.
    public func inject(_ fault: Fault, times: Int = 1, for path: String? = nil, method: String? = nil,
                       rangeFrom: Int? = nil) {
        core.state.withLock {
            $0.inject(fault, times: times, path: path.map(Self.key), method: method, rangeFrom: rangeFrom)
        }
    }

    public func clearFaults() {
        core.state.withLock { $0.clearFaults() }
    }

    /// How many fault applications are still queued.
    public var pendingFaults: Int { core.state.withLock { $0.pendingFaultCount } }

    // MARK: What happened

    /// Every request since the start or the last `resetLog()`, in arrival order.
    public var requests: [RecordedRequest] { core.state.withLock { $0.log } }

    public func requests(for path: String) -> [RecordedRequest] {
        let key = Self.key(path)
        return requests.filter { $0.path == key }
    }

    public func resetLog() {
        core.state.withLock { $0.resetLog() }
    }

    /// Connections accepted so far (not reset by `resetLog`): fewer than requests means reuse.
    public var acceptedConnections: Int { core.state.withLock { $0.acceptedConnections } }

    /// Waits until every logged response has been sent completely (or abandoned), so that
    /// `bodyBytesSent` is final. False after `timeout`.
    @discardableResult
    public func waitUntilQuiet(timeout: Duration = .seconds(5)) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while core.state.withLock({ $0.log.contains { !$0.finished } }) {
            if ContinuousClock.now >= deadline { return false }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return true
    }

    /// Closes the listening socket and every connection and waits (at most 5 s) for the
    /// server's threads. Idempotent.
    @discardableResult
    public func stop() -> Bool { core.shutdown(timeout: .seconds(5)) }

    /// Paths are keys with a leading slash: `publish("a.bin")` serves `/a.bin`.
    private static func key(_ path: String) -> String {
        path.hasPrefix("/") ? path : "/" + path
    }
}
