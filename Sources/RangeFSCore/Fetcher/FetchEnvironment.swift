import Foundation
import Logging

/// Limits that shape the requests a mount makes.
public struct FetchPolicy: Sendable {
    /// A reader's missing blocks go out in requests of about `requestTime` at the speed one
    /// request to the host moved lately, between `minRequestBytes` (also while no speed is
    /// known) and `maxRequestBytes` (`FilePlan.requestBytes`), several at once: where a server
    /// or CDN limits each connection, each is another connection's worth of speed (rclone's
    /// `--vfs-read-chunk-streams`), and on any link a fault costs one request, not the file.
    /// Below the block size, a block goes out in several requests.
    public var requestTime: Duration = .milliseconds(500)
    public var minRequestBytes: UInt64 = 64 * 1024
    public var maxRequestBytes: UInt64 = 2 * 1024 * 1024
    /// A file's readers' requests in flight beyond which read-ahead waits: below the client's
    /// connections per server (8), so another reader's request finds one.
    public var maxReaderRequests = 7
    /// Background work leaves the blocks up to this far past a sequential reader to its
    /// read-ahead (the read-ahead window's largest size) while it read in the last
    /// `readerZoneIdle`: fetched there in background chunks, they would reach the reader at
    /// one connection's pace, held back while it reads, instead of in its read-ahead's streams.
    public var readerZoneBytes: UInt64 = 16 * 1024 * 1024
    public var readerZoneIdle: Duration = .seconds(2)
    /// After a file is opened, background work leaves it alone this long or until a read comes:
    /// the reader's first request, which usually follows at once, then gets the idle connection
    /// and the link, and a sequential reader's zone is known before background work picks a chunk.
    public var openGrace: Duration = .milliseconds(15)
    /// After a size probe a reader waited on ends, background probes wait this long: the reader's
    /// next request (the open and read after a `stat`) takes the connection that probe used,
    /// instead of opening another behind a collection's probes (`ProbeQueue`).
    public var probeGraceAfterReader: Duration = .milliseconds(20)
    /// Background transfers (heads and tails too) stand still this long after the mount: a
    /// program's first requests, which often follow the mount at once, then have the server and
    /// the link to themselves.
    public var mountGrace: Duration = .milliseconds(250)
    /// After a complete file is opened, background work (but heads and tails) stands still this
    /// long: the kernel reads the file from the cache disk at its own pace (passthrough or the
    /// page cache, unseen here), and background transfers would take CPU and disk from it.
    public var quietAfterCompleteOpen: Duration = .seconds(1)
    /// While programs read bytes the cache holds faster than `fastCachedReadBytesPerSecond`
    /// over `cachedReadWindow` (a copy, a checksum, fio over a cached region: bound by this
    /// machine, not the link), background work (heads and tails too) stands still until
    /// `quietAfterFastCachedReads` after the last such window: it would take their CPU and
    /// write their disk. A player reads far slower and never quiets it (`CachedReadPace`).
    /// Only where the file's server moved a reader's request at `slowestLinkQuietedByCachedReads`
    /// or faster lately, or no speed is known: from a slower server, background work (a few
    /// such requests) brings less than those reads take and costs the machine less, and
    /// holding it would leave the link idle; where mirrors or a server limit each connection,
    /// a reader's speed comes from background work beside its read-ahead.
    public var fastCachedReadBytesPerSecond: UInt64 = 64 * 1024 * 1024
    public var cachedReadWindow: Duration = .milliseconds(100)
    public var quietAfterFastCachedReads: Duration = .milliseconds(250)
    public var slowestLinkQuietedByCachedReads: UInt64 = 64 * 1024 * 1024
    /// While a program walks the tree without opening a file for `scanOpensWithin`, and no
    /// listing in that time took `distantListingTime` or longer (a near server: the walk is
    /// bound by the CPU), all background work stands still until `walkQuiet` after its last
    /// step (`FileCatalog.treeWalked`).
    public var walkQuiet: Duration = .milliseconds(300)
    /// Compared with the server's own time to answer the quickest of the latest listings (from
    /// the request sent to its first byte, `ListedDirectories.recentListingTime`): shorter than a distant link's
    /// round trip, longer than a near server's answer (a millisecond or two on loopback, however
    /// long the listing waited for a connection behind background transfers).
    public var distantListingTime: Duration = .milliseconds(25)
    public var scanOpensWithin: Duration = .seconds(2)
    /// Fetched data is synced and its blocks committed once the oldest uncommitted blocks of a
    /// file are this old (at once when the file is whole or nothing more is coming for it): a
    /// crash loses at most about this much fetching. A time, not a byte count, and not at each
    /// pause of a file's transfers: each sync makes the disk write what was fetched and commits
    /// the filesystem's journal, on a small machine beside the reader waiting for its next bytes
    /// (docs/benchmarks.md, "Fetched data is committed once a second, not every 8 MiB").
    public var commitInterval: Duration = .seconds(1)
    /// Attempts per request, the first included, for transient errors (5xx, resets, stalls).
    public var maxAttempts = 4
    /// First retry delay; each further retry doubles it, with jitter.
    public var retryBaseDelay: Duration = .milliseconds(250)
    /// A server's `Retry-After` is honoured up to this long; a longer one ends the attempts.
    public var maxRetryAfter: Duration = .seconds(30)
    /// A reader waits for a running transfer that should reach its bytes within `joinWaitLimit`
    /// at its speed (its own once measured, else its host's), or while no speed is known, for
    /// background work only `joinDistance` past where it stands (about what the reader's own
    /// first request would bring); otherwise it asks for its bytes itself (`FilePlan+Joining`).
    public var joinDistance: UInt64 = 64 * 1024
    public var joinWaitLimit: Duration = .milliseconds(250)
    /// A transfer's speed counts as known once its bytes have flowed this long, or this many
    /// of them have arrived, after its first ones.
    public var rateSample: Duration = .milliseconds(100)
    public var rateSampleBytes: UInt64 = 256 * 1024
    /// A mirror's speed is trusted this long after it was measured; then it counts as unknown,
    /// and the mirror gets work again as if it were fast (`FileSources.best`).
    public var sourceSpeedMemory: Duration = .seconds(30)
    /// A background transfer from a mirror that would take longer than this to finish, where
    /// another mirror is at least twice as fast, hands the tail of its bytes to that mirror
    /// once every missing byte of the file is on its way (`FilePlan.takeOverSlowTail`).
    public var slowTailLimit: Duration = .seconds(2)
    /// A read still waiting after this long fails with EIO instead of hanging.
    public var readDeadline: Duration = .seconds(120)
    /// Speed cap of each background transfer (`--max-rate` shared by the background slots).
    public var backgroundBytesPerSecond: UInt64?

    public init() {}

    /// The delay before attempt number `attempt` (2 for the first retry): doubling, with
    /// jitter so that many failed requests do not come back at the same moment.
    /// How long to wait before trying again after `attempts` tries ended in `error`, or nil when
    /// the error is final or the attempts are spent. A `Retry-After` longer than the backoff is
    /// honoured, up to `maxRetryAfter`. Every request kind (ranges, read-through, probes) asks here.
    func retryDelay(after error: RemoteError, attempts: Int) -> Duration? {
        guard error.isTransient, attempts < maxAttempts else { return nil }
        let backoff = retryDelay(attempt: attempts + 1)
        guard let asked = error.retryAfter else { return backoff }
        return asked <= maxRetryAfter ? max(backoff, asked) : nil
    }

    func retryDelay(attempt: Int) -> Duration {
        let base = retryBaseDelay * (1 << min(max(attempt - 2, 0), 6))
        return base * Double.random(in: 0.5...1.5)
    }
}

extension Duration {
    var timeInterval: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

/// The services every cached file of a mount shares.
public struct FetchEnvironment: Sendable {
    public var client: any RemoteClient
    public var store: MetadataStore
    public var directory: CacheDirectory
    public var committer: Committer
    public var policy: FetchPolicy
    public var logger: Logger
    /// The mount's counters (the same object its `CurlClient` counts requests in).
    public var metrics: MountMetrics
    /// How fast each host answered readers lately, shared by every file of the mount.
    let hostRates = HostRates()
    /// The head and tail sizes first scans taught, per file type (kept in the cache database).
    let learnedHeadTails: LearnedHeadTails
    /// Fails the reads that waited past `policy.readDeadline` (as the policy was at `init`).
    let readDeadlines: ReadDeadlines
    /// When files were opened, written a commit interval later (as the policy was at `init`).
    let accessTimes: AccessTimes
    /// How fast reads are answered from the cache (as the policy was at `init`).
    let cachedReadPace: CachedReadPace

    public init(client: any RemoteClient, store: MetadataStore, directory: CacheDirectory,
                committer: Committer, policy: FetchPolicy = FetchPolicy(), logger: Logger,
                metrics: MountMetrics = MountMetrics()) {
        self.metrics = metrics
        self.client = client
        self.store = store
        self.directory = directory
        self.committer = committer
        self.policy = policy
        self.logger = logger
        learnedHeadTails = LearnedHeadTails(store: store, committer: committer, logger: logger)
        readDeadlines = ReadDeadlines(readDeadline: policy.readDeadline)
        accessTimes = AccessTimes(store: store, committer: committer, delay: policy.commitInterval, logger: logger)
        cachedReadPace = CachedReadPace(window: policy.cachedReadWindow, quietBytesPerSecond: policy.fastCachedReadBytesPerSecond)
    }
}
