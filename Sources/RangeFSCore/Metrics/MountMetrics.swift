import CoreMetrics
import Foundation
import Prometheus
import Synchronization

/// The counters of one mount, kept in its own Prometheus registry (never the process-wide
/// `MetricsSystem`, so two mounts in one process — the tests — count apart).
///
/// Every metric is made once here; a hook is one call on it. Counters and gauges are relaxed
/// atomics in swift-prometheus; a histogram observation takes the histogram's own lock (a leaf:
/// nothing is called while it is held). Labels are fixed words: no URL, path or file name, so
/// the number of series is bounded and nothing secret leaves the machine.
public final class MountMetrics: Sendable {
    /// Why an HTTP request was made.
    public enum RequestKind: String, Sendable, CaseIterable {
        /// A size probe (HEAD, or its one-byte GET fallback).
        case probe
        /// Blocks a reader waits for, and its read-ahead.
        case range
        /// Background completion by the prefetcher.
        case background
        /// A read the cache has no room for, served from the network without being stored.
        case readThrough = "read_through"
        /// A manifest, feed or directory listing fetched whole.
        case document
    }

    /// Where fetched bytes went: the blocks a reader asked for, those fetched ahead of a
    /// sequential reader, or background completion.
    public enum FetchedKind: String, Sendable, CaseIterable {
        case foreground
        case readAhead = "read_ahead"
        case background
    }

    public let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory
    private let requests: [RequestKind: [String: CoreMetrics.Counter]]
    private let fetched: [FetchedKind: CoreMetrics.Counter]
    private let hitBytes: CoreMetrics.Counter
    private let missBytes: CoreMetrics.Counter
    private let cachedLatency: CoreMetrics.Timer
    private let waitedLatency: CoreMetrics.Timer
    private let inFlight: Meter
    private let retries: CoreMetrics.Counter
    private let evictions: CoreMetrics.Counter
    private let sourcesMarkedBad: CoreMetrics.Counter
    private let handOversOutOfTime: CoreMetrics.Counter
    private let cachedBytes: CoreMetrics.Gauge
    private let filesByState: [CacheState: CoreMetrics.Gauge]

    /// The status classes a request ends with: the HTTP status class, `error` when no reply
    /// came (connection refused, timeout, reset), `cancelled` at unmount.
    static let statusClasses = ["1xx", "2xx", "3xx", "4xx", "5xx", "error", "cancelled"]

    static let fileStates: [CacheState] = [.remote, .partial, .complete, .failed, .waitingForSpace]

    /// Read latency buckets, from a page-cache-speed answer to a slow mirror.
    static let latencyBuckets: [Duration] = [
        .microseconds(50), .microseconds(200), .milliseconds(1), .milliseconds(5), .milliseconds(25),
        .milliseconds(100), .milliseconds(500), .seconds(2), .seconds(10),
    ]

    public init() {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = Self.latencyBuckets
        self.registry = registry
        self.factory = factory
        func counter(_ name: String, _ dimensions: [(String, String)] = []) -> CoreMetrics.Counter {
            CoreMetrics.Counter(label: name, dimensions: dimensions, factory: factory)
        }
        func gauge(_ name: String, _ dimensions: [(String, String)] = []) -> CoreMetrics.Gauge {
            CoreMetrics.Gauge(label: name, dimensions: dimensions, factory: factory)
        }
        var requests: [RequestKind: [String: CoreMetrics.Counter]] = [:]
        for kind in RequestKind.allCases {
            for status in Self.statusClasses {
                requests[kind, default: [:]][status] = counter("rangefs_http_requests_total", [("kind", kind.rawValue), ("status", status)])
            }
        }
        self.requests = requests
        fetched = Dictionary(uniqueKeysWithValues: FetchedKind.allCases.map {
            ($0, counter("rangefs_fetched_bytes_total", [("kind", $0.rawValue)]))
        })
        hitBytes = counter("rangefs_read_bytes_total", [("from", "cache")])
        missBytes = counter("rangefs_read_bytes_total", [("from", "network")])
        cachedLatency = CoreMetrics.Timer(label: "rangefs_read_duration_seconds", dimensions: [("answer", "cached")], factory: factory)
        waitedLatency = CoreMetrics.Timer(label: "rangefs_read_duration_seconds", dimensions: [("answer", "waited")], factory: factory)
        inFlight = Meter(label: "rangefs_http_transfers_in_flight", factory: factory)
        retries = counter("rangefs_retries_total")
        evictions = counter("rangefs_evictions_total")
        sourcesMarkedBad = counter("rangefs_sources_marked_bad_total")
        handOversOutOfTime = counter(Self.handOversOutOfTimeSeries)
        cachedBytes = gauge("rangefs_cached_bytes")
        filesByState = Dictionary(uniqueKeysWithValues: Self.fileStates.map {
            ($0, gauge("rangefs_files", [("state", $0.rawValue.replacingOccurrences(of: " ", with: "_"))]))
        })
    }

    // MARK: Hooks

    func requestStarted() { inFlight.increment(by: 1) }

    /// A request ended with HTTP status `status` (0: no reply came).
    func requestEnded(_ kind: RequestKind, status: Int, cancelled: Bool) {
        inFlight.decrement(by: 1)
        let statusClass = cancelled ? "cancelled" : (100...599).contains(status) ? "\(status / 100)xx" : "error"
        requests[kind]?[statusClass]?.increment()
    }

    /// `count` bytes at `offset` arrived: background completion's, or a reader's, split at
    /// `readAheadFrom` into its own and those fetched ahead of it.
    func fetched(_ count: Int, at offset: UInt64, readAheadFrom: UInt64?, background: Bool) {
        if background { return fetched[.background]!.increment(by: count) }
        let end = offset + UInt64(count)
        let own = readAheadFrom.map { Int(min(max($0, offset), end) - offset) } ?? count
        if own > 0 { fetched[.foreground]!.increment(by: own) }
        if own < count { fetched[.readAhead]!.increment(by: count - own) }
    }

    /// A read was answered: at once from the cache, or after waiting for the network.
    func readAnswered(bytes: UInt64, waited: Bool, after duration: Duration) {
        (waited ? missBytes : hitBytes).increment(by: Int(clamping: bytes))
        (waited ? waitedLatency : cachedLatency).recordNanoseconds(Self.nanoseconds(duration))
    }

    func retried() { retries.increment() }

    func evicted() { evictions.increment() }

    /// A lookup of where a file's ranges come from found its source moved or failing.
    func sourceMarkedBad() { sourcesMarkedBad.increment() }

    static let handOversOutOfTimeSeries = "rangefs_hand_overs_out_of_time_total"

    /// A held background transfer gave its connection up to a reader's request before it took
    /// all its server had sent meanwhile (`HandOver.longest` ran out: a loaded machine did not
    /// run the loop in time): those bytes are asked for again.
    func handOverRanOutOfTime() { handOversOutOfTime.increment() }

    /// How many hand-overs ran out of time so far.
    public var handOversThatRanOutOfTime: Int {
        Int(samples()[Self.handOversOutOfTimeSeries] ?? 0)
    }

    /// The gauges of the cache as a whole, set from a status snapshot just before a scrape.
    public func update(cachedBytes bytes: UInt64, files: [CacheState: Int]) {
        cachedBytes.record(Int64(clamping: bytes))
        for (state, gauge) in filesByState { gauge.record(files[state] ?? 0) }
    }

    // MARK: Exposition

    /// The Prometheus text exposition format (version 0.0.4).
    public func exposition() -> String {
        registry.emitToString()
    }

    /// Every sample of the exposition but the histograms' buckets, by series (e.g.
    /// `rangefs_read_bytes_total{from="cache"}`), for `rangefs status --json`.
    public func samples() -> [String: Double] {
        Self.samples(in: exposition())
    }

    static func samples(in exposition: String) -> [String: Double] {
        var samples: [String: Double] = [:]
        for line in exposition.split(separator: "\n") where !line.hasPrefix("#") {
            // Label values here are fixed words without spaces: the value follows the last space.
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            let series = String(line[..<space])
            if series.contains("_bucket{") { continue }
            samples[series] = value
        }
        return samples
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000
    }
}

/// Times one read and tells whether it was answered from the cache (on the asking thread,
/// before its call returned) or had to wait for the network (any other answer).
final class ReadTiming: Sendable {
    private let metrics: MountMetrics
    private let started = ContinuousClock.now
    private let caller = pthread_self()
    private let hasReturned = Atomic<Bool>(false)

    init(metrics: MountMetrics) {
        self.metrics = metrics
    }

    func returned() { hasReturned.store(true, ordering: .releasing) }

    func answered(_ result: Result<ReadyBytes, FetchError>) {
        guard case .success(let bytes) = result else { return }
        let waited = pthread_equal(pthread_self(), caller) == 0 || hasReturned.load(ordering: .acquiring)
        metrics.readAnswered(bytes: UInt64(bytes.range.count), waited: waited, after: .now - started)
    }
}
