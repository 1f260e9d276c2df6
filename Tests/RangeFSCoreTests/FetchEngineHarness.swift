import FaultServer
import Foundation
import Logging
import Synchronization
@testable import RangeFSCore

/// The fetch engine without a mount: a real catalog, its cached files and a prefetcher that
/// fetch from a `FaultServer` on loopback into a cache directory of their own. Retries are
/// short and stalls are noticed after a second (unless a test sets its client otherwise), so a
/// fault costs milliseconds, not the real limits' seconds. `close()` (also `deinit`) stops the
/// transfers and removes the directory.
final class FetchEngineHarness {
    let server: FaultServer
    let catalog: FileCatalog
    let prefetcher: Prefetcher
    let mount: RunningMount
    let store: MetadataStore
    let directory: CacheDirectory
    let policy: FetchPolicy
    let limits: CacheLimits
    let committer = Committer()
    let client: CurlClient
    /// The client's metrics (`handOversThatRanOutOfTime`).
    let clientMetrics: MountMetrics
    private var closed = false

    static let blockSize: UInt64 = 64 * 1024

    /// Retries within tens of milliseconds; a read that waits longer than 10 s fails.
    static var quickPolicy: FetchPolicy {
        var policy = FetchPolicy()
        policy.retryBaseDelay = .milliseconds(10)
        policy.readDeadline = .seconds(10)
        // Background work starts when a test starts the prefetcher (one test sets a grace).
        policy.mountGrace = .zero
        return policy
    }

    /// The prefetcher does nothing unless a test starts it with a policy of its own.
    static var idlePrefetch: Prefetcher.Configuration {
        var configuration = Prefetcher.Configuration()
        configuration.policy = .none
        return configuration
    }

    /// Publishes `files` (name → bytes) and makes a manifest with one entry per name of
    /// `entries` (default: every published name, sorted), each at path = its name, or one per
    /// element of `paths` (path in the mount → published name; several paths may share a name).
    /// `urls` replaces an entry's URL (name → URL); `mirrors` gives it URLs after that one
    /// (name → mirrors, best first); `sizes` the size it states, `pieces` its piece hashes;
    /// `sha256` gives an entry a checksum.
    convenience init(files: [String: [UInt8]], entries: [String]? = nil, paths: [(path: String, name: String)]? = nil,
                     urls: [String: URL] = [:], mirrors: [String: [URL]] = [:], sizes: [String: UInt64] = [:],
                     pieces: [String: PieceHashes] = [:], sha256: [String: String] = [:],
                     policy: FetchPolicy = FetchEngineHarness.quickPolicy, limits: CacheLimits = CacheLimits(),
                     prefetch: Prefetcher.Configuration = FetchEngineHarness.idlePrefetch,
                     statedSizesAreExact: Bool = false,
                     client: @escaping (inout CurlClient.Configuration) -> Void = { _ in }) throws {
        let server = try FaultServer()
        for (name, bytes) in files { server.publish(name, bytes: bytes) }
        let pairs = paths ?? (entries ?? files.keys.sorted()).map { (path: $0, name: $0) }
        let manifestEntries = try pairs.enumerated().map { line, pair in
            var entry = ManifestEntry(path: try EntryPath(validating: pair.path), url: urls[pair.name] ?? server.url(pair.name),
                                      sha256: sha256[pair.name], line: line + 1)
            entry.mirrors = mirrors[pair.name] ?? []
            entry.pieces = pieces[pair.name]
            entry.size = sizes[pair.name]
            return entry
        }
        try self.init(server: server, cachePath: NSTemporaryDirectory() + "rangefs-engine-\(UUID().uuidString.prefix(8))",
                      manifest: Manifest(source: "test", entries: manifestEntries), policy: policy, limits: limits, prefetch: prefetch,
                      statedSizesAreExact: statedSizesAreExact, client: client)
    }

    /// A mount of `manifest` over the cache at `cachePath` (created if need be).
    private init(server: FaultServer, cachePath: String, manifest: Manifest, policy: FetchPolicy, limits: CacheLimits,
                 prefetch: Prefetcher.Configuration, statedSizesAreExact: Bool,
                 client configureClient: (inout CurlClient.Configuration) -> Void = { _ in }) throws {
        self.server = server
        self.policy = policy
        self.limits = limits
        var logger = Logger(label: "rangefs-test")
        logger.logLevel = .critical
        directory = try CacheDirectory(creatingAt: cachePath)
        store = try MetadataStore(path: directory.metadataPath)
        var clientConfiguration = CurlClient.Configuration()
        clientConfiguration.stallTimeoutSeconds = 1
        configureClient(&clientConfiguration)
        client = CurlClient(configuration: clientConfiguration, logger: logger)
        clientMetrics = clientConfiguration.metrics
        let environment = FetchEnvironment(client: client, store: store, directory: directory, committer: committer,
                                           policy: policy, logger: logger)
        catalog = try FileCatalog(manifest: manifest, blockSize: Self.blockSize, limits: limits,
                                  statedSizesAreExact: statedSizesAreExact, environment: environment)
        prefetcher = Prefetcher(catalog: catalog, client: client, store: store, configuration: prefetch, logger: logger)
        mount = RunningMount(mountpoint: "/mnt/test", catalog: catalog, prefetcher: prefetcher)
    }

    /// Unmounts (stops the transfers, makes what was fetched durable) and mounts the same
    /// manifest again over the same cache and server, which the new harness then owns; its
    /// prefetcher is configured as this one's unless `prefetch` says otherwise.
    func remount(prefetch: Prefetcher.Configuration? = nil) throws -> FetchEngineHarness {
        prefetcher.stop()
        catalog.shutdown()
        closed = true
        return try FetchEngineHarness(server: server, cachePath: directory.path, manifest: catalog.manifest, policy: policy,
                                      limits: limits, prefetch: prefetch ?? prefetcher.configuration,
                                      statedSizesAreExact: catalog.statedSizesAreExact)
    }

    func close() {
        guard !closed else { return }
        closed = true
        prefetcher.stop()
        catalog.shutdown()
        server.stop()
        try? FileManager.default.removeItem(atPath: directory.path)
    }

    deinit { close() }

    /// The manifest index of the entry named `name`.
    func entry(_ name: String) -> Int {
        catalog.manifest.entries.firstIndex { $0.path.description == name }!
    }

    /// The cached file of `name`, its size found first if need be (at most 10 s).
    func file(_ name: String) throws -> Result<CachedFile, FetchError> {
        try FilesystemHarness.wait(timeout: 10) { catalog.file(forEntry: entry(name), completion: $0) }
    }

    /// Opens a handle on `name`, as a reader would.
    func open(_ name: String) throws -> Result<OpenFile, FetchError> {
        try FilesystemHarness.wait(timeout: 10) { catalog.open(entry: entry(name), completion: $0) }
    }

    /// The bytes `CachedFile.read` answers with, copied out of the `ReadyBytes` it hands back.
    func read(_ file: CachedFile, _ bytes: Range<UInt64>, readAhead: UInt64 = 0,
              timeout: Double = 15) throws -> Result<[UInt8], FetchError> {
        try Self.read(file, bytes, readAhead: readAhead, timeout: timeout)
    }

    /// `read` for a thread that has the file but not the harness.
    static func read(_ file: CachedFile, _ bytes: Range<UInt64>, readAhead: UInt64 = 0,
                     timeout: Double = 15) throws -> Result<[UInt8], FetchError> {
        let ready = try FilesystemHarness.wait(timeout: timeout) { file.read(bytes, readAhead: readAhead, completion: $0) }
        return ready.flatMap { ready in
            Result { try ready.file.read(count: ready.range.count, at: ready.range.lowerBound) }
                .mapError { FetchError(file.url, .cache(.from($0))) }
        }
    }

    /// GET requests for `name` so far (probes are HEAD unless refused).
    func gets(_ name: String) -> [RecordedRequest] {
        server.requests(for: name).filter { $0.method == "GET" }
    }

    /// The record the cache database holds for `name`'s URL, once its saves have run.
    func record(_ name: String) -> CachedFileRecord? {
        let key = catalog.manifest.entries[entry(name)].urlString
        return try? store.allRecords()[key]
    }

    /// Returns once the commit queue has run everything scheduled before this call.
    func drainCommits() {
        committer.drain()
    }

    /// The sha256 of `bytes` as 64 lowercase hex digits, computed the way the cache does it.
    static func sha256(of bytes: [UInt8]) throws -> String {
        let path = NSTemporaryDirectory() + "rangefs-digest-\(UUID().uuidString.prefix(8))"
        defer { unlink(path) }
        let file = try DataFile(path: path, size: UInt64(bytes.count))
        try bytes.withUnsafeBytes { try file.write($0, at: 0) }
        return try file.sha256(size: UInt64(bytes.count))
    }

    /// The SHA-256 of each `pieceLength` bytes of `bytes`, as a manifest states them.
    static func pieceHashes(of bytes: [UInt8], pieceLength: Int) throws -> PieceHashes {
        let hexDigests = try stride(from: 0, to: bytes.count, by: pieceLength).map { start in
            try sha256(of: Array(bytes[start..<min(bytes.count, start + pieceLength)]))
        }
        return PieceHashes(pieceLength: UInt64(pieceLength), hexDigests: hexDigests)!
    }

    /// `count` bytes that differ from block to block and from `seed` to `seed`.
    static func bytes(_ count: Int, seed: UInt8 = 7) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: ($0 &* 31) ^ ($0 >> 16) &+ Int(seed)) }
    }
}

/// The `Range` header's first byte, for "where did the retry start".
extension RecordedRequest {
    var rangeStart: UInt64? {
        guard let range, range.hasPrefix("bytes=") else { return nil }
        return UInt64(range.dropFirst(6).prefix { $0 != "-" })
    }
}
