/// Everything `rangefs status` shows about a running mount.
public struct MountStatus: Codable, Sendable, Equatable {
    public var mountpoint: String
    public var manifest: String
    /// Background completion is paused (foreground reads still work).
    public var paused: Bool
    /// `all`, `opened` or `none`.
    public var prefetch: String
    public var files: [FileStatus]
    /// The cache as a whole: its size, its limits and the free space on its disk.
    public var cache: CacheSpaceStatus?
    /// The samples `--metrics-address` serves (histogram buckets left out), by series, e.g.
    /// `rangefs_read_bytes_total{from="cache"}`; nil from a mount that does not count.
    public var metrics: [String: Double]?

    public init(mountpoint: String, manifest: String, paused: Bool, prefetch: String, files: [FileStatus],
                cache: CacheSpaceStatus? = nil, metrics: [String: Double]? = nil) {
        self.metrics = metrics
        self.mountpoint = mountpoint
        self.manifest = manifest
        self.paused = paused
        self.prefetch = prefetch
        self.files = files
        self.cache = cache
    }

    // Held at the largest UInt64 rather than overflowing: the sizes are servers' claims.
    public var totalBytes: UInt64 { files.saturatingSum { $0.size ?? 0 } }
    public var cachedBytes: UInt64 { files.saturatingSum(\.cachedBytes) }
    public var bytesPerSecond: UInt64 { files.saturatingSum(\.bytesPerSecond) }
}

/// The cache of a mount as a whole.
public struct CacheSpaceStatus: Codable, Sendable, Equatable {
    /// Cached data of every file in the cache (also files no longer in the manifest).
    public var cachedBytes: UInt64
    /// `--cache-max-size`, if given.
    public var maxBytes: UInt64?
    /// Free space on the cache's filesystem; nil when it cannot be read.
    public var freeBytes: UInt64?
    /// The floor: the cache stores no data that would leave less than this free.
    public var minFreeBytes: UInt64
    /// Bytes handed to readers straight from the network, without being stored, because the
    /// cache had no room for them.
    public var readThroughBytes: UInt64

    public init(cachedBytes: UInt64, maxBytes: UInt64?, freeBytes: UInt64?, minFreeBytes: UInt64, readThroughBytes: UInt64) {
        self.cachedBytes = cachedBytes
        self.maxBytes = maxBytes
        self.freeBytes = freeBytes
        self.minFreeBytes = minFreeBytes
        self.readThroughBytes = readThroughBytes
    }
}

/// One file of the manifest as the cache sees it.
public struct FileStatus: Codable, Sendable, Equatable {
    /// Path inside the mount.
    public var path: String
    /// The URL with any credentials removed.
    public var url: String
    public var state: CacheState
    /// nil while the size is not known yet.
    public var size: UInt64?
    public var cachedBytes: UInt64
    /// Receive rate over the last few seconds.
    public var bytesPerSecond: UInt64
    /// Why the last attempt failed, when `state` is `failed`.
    public var failure: String?
    /// For a file with mirrors, each of its sources (its URL first) and how it is doing; nil
    /// for a file with one URL.
    public var sources: [SourceStatus]?

    public init(path: String, url: String, state: CacheState, size: UInt64?, cachedBytes: UInt64,
                bytesPerSecond: UInt64, failure: String?, sources: [SourceStatus]? = nil) {
        self.path = path
        self.url = url
        self.state = state
        self.size = size
        self.cachedBytes = cachedBytes
        self.bytesPerSecond = bytesPerSecond
        self.failure = failure
        self.sources = sources
    }
}

/// What the control socket may ask of a running mount.
public protocol MountControl: Sendable {
    func status() -> MountStatus
    func setPaused(_ paused: Bool)
    /// `evict`, `pin` or `unpin` of paths inside the mount; returns what was done, in a sentence.
    func manage(_ command: ControlCommand, paths: [String]) throws(MountControlError) -> String
}

extension MountControl {
    public func manage(_ command: ControlCommand, paths: [String]) throws(MountControlError) -> String {
        throw MountControlError("this mount does not support \(command.rawValue)")
    }
}

/// Why a mount refused a command (unknown path, …); the text goes back to the user.
public struct MountControlError: Error, Sendable, CustomStringConvertible {
    public var description: String

    public init(_ description: String) {
        self.description = description
    }
}
