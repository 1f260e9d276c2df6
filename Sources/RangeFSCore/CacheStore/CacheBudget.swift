import Foundation
import GRDB
import Synchronization

/// How much space the cache leaves free on its filesystem.
public enum FreeSpaceFloor: Sendable, Equatable {
    /// A fixed number of bytes (`--cache-min-free 5G`; 0 leaves only the database's room).
    case bytes(UInt64)
    /// A share of the filesystem's size, at most `cap` bytes.
    case share(percent: UInt64, cap: UInt64)

    /// The default: 15% of the filesystem, at most 4 GiB, the free space journald keeps by
    /// default (`SystemKeepFree=`). A 32 GB SD card keeps 4 GiB free, a 4 TB disk 4 GiB rather
    /// than 600 GB, and a 200 MB partition 30 MB.
    public static let standard = FreeSpaceFloor.share(percent: 15, cap: 4 << 30)

    /// Room kept apart above the floor for the cache database's own commits (and the log):
    /// data writes stop this much above the floor, so those small writes never take the
    /// floor's space either. SQLite's write-ahead log grows to about 4 MiB between
    /// checkpoints, and a commit that finds no room fails with "database or disk is full".
    public static let databaseRoom: UInt64 = 4 << 20

    /// The floor on a filesystem of `size` bytes.
    public func bytes(ofFilesystem size: UInt64) -> UInt64 {
        switch self {
        case .bytes(let bytes): return bytes
        case .share(let percent, let cap): return min(cap, size / 100 * percent + size % 100 * percent / 100)
        }
    }

    /// The free space data writes leave: the floor and `room` above it (the database's).
    func dataLimit(ofFilesystem size: UInt64, room: UInt64 = Self.databaseRoom) -> UInt64 {
        bytes(ofFilesystem: size) &+ room
    }
}

/// How much the cache may hold: at most `maxBytes` of cached data, and at least `minFree`
/// left free on the cache's filesystem.
public struct CacheLimits: Sendable, Equatable {
    public var maxBytes: UInt64?
    public var minFree: FreeSpaceFloor

    public init(maxBytes: UInt64? = nil, minFree: FreeSpaceFloor = .bytes(0)) {
        self.maxBytes = maxBytes
        self.minFree = minFree
    }

    /// Bytes that must be evicted before `extra` more may be stored (0 when they fit), keeping
    /// `room` free above the floor. `reserved` bytes are promised to running background transfers.
    public func shortfall(cached: UInt64, reserved: UInt64 = 0, extra: UInt64 = 0, space: FilesystemSpace?,
                          room: UInt64 = FreeSpaceFloor.databaseRoom) -> UInt64 {
        var missing: UInt64 = 0
        if let maxBytes {
            missing = (cached &+ reserved &+ extra).subtractingClamped(maxBytes)
        }
        if let space {
            let floor = minFree.dataLimit(ofFilesystem: space.size, room: room)
            missing = max(missing, (floor &+ reserved &+ extra).subtractingClamped(space.free))
        }
        return missing
    }
}

/// What `statvfs` says of the cache's filesystem.
public struct FilesystemSpace: Sendable, Equatable {
    /// Free for unprivileged users.
    public var free: UInt64
    public var size: UInt64

    public init(free: UInt64, size: UInt64) {
        self.free = free
        self.size = size
    }

    static func of(_ path: String) -> FilesystemSpace? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        return FilesystemSpace(free: UInt64(info.f_bavail) * UInt64(info.f_frsize),
                               size: UInt64(info.f_blocks) * UInt64(info.f_frsize))
    }
}

extension UInt64 {
    func subtractingClamped(_ other: UInt64) -> UInt64 {
        self > other ? self - other : 0
    }
}

/// Counts the cached bytes of a mount, the space promised to running background transfers and
/// the free space left, and decides whether more data may be stored. Data writes stop at the
/// floor, so the free space below it (and the database's room) is never taken by the cache.
public final class CacheBudget: Sendable {
    public let limits: CacheLimits
    private let directory: String
    /// A leaf lock: taken under a cached file's state lock (reservations as transfers start and
    /// end), and nothing is called while it is held.
    private let counters: Mutex<Counters>

    private struct Counters {
        var cached: UInt64
        /// Bytes promised to background transfers and not written yet.
        var reserved: UInt64 = 0
        /// The last `statvfs`, and the bytes this mount wrote since: between samples the free
        /// space is estimated, so a check per arriving buffer costs no system call.
        var sample: FilesystemSpace?
        var sampledAt: ContinuousClock.Instant?
        var writtenSinceSample: UInt64 = 0
        var readThroughBytes: UInt64 = 0
        /// A read went to the network without storing since the cache last had room (logged once).
        var readingThrough = false
    }

    /// How old a `statvfs` sample may be before it is taken again.
    static let sampleLifetime: Duration = .milliseconds(20)

    public init(limits: CacheLimits, directory: String, initialBytes: UInt64) {
        self.limits = limits
        self.directory = directory
        counters = Mutex(Counters(cached: initialBytes))
    }

    public var cachedBytes: UInt64 {
        counters.withLock { $0.cached }
    }

    func add(_ delta: Int64) {
        counters.withLock { counters in
            counters.cached = delta >= 0 ? counters.cached + UInt64(delta) : counters.cached.subtractingClamped(UInt64(-delta))
            // Eviction freed space: look again rather than trust the estimate.
            if delta < 0 { counters.sampledAt = nil }
        }
    }

    /// Bytes to evict now to get back within the limits; 0 when within them. Eviction starts
    /// only once the free space is halfway into the database's room (another program took it:
    /// a write rounded up to whole pages must not cost a file), and then gives back all of it.
    public var excess: UInt64 {
        counters.withLock { counters in
            let space = estimatedSpace(&counters)
            guard limits.shortfall(cached: counters.cached, space: space, room: FreeSpaceFloor.databaseRoom / 2) > 0 else {
                return 0
            }
            return limits.shortfall(cached: counters.cached, space: space)
        }
    }

    /// Bytes to evict before `bytes` more fit.
    func shortfall(extra bytes: UInt64) -> UInt64 {
        shortfall(extra: bytes, countingReserved: false)
    }

    /// Whether `bytes` more fit without evicting anything (besides what running background
    /// transfers were promised): background work never makes room by evicting, or it would
    /// chase its own tail.
    public func hasRoom(for bytes: UInt64) -> Bool {
        shortfall(extra: bytes, countingReserved: true) == 0
    }

    /// Whether a reader's `bytes` fit: what background transfers were promised does not count,
    /// as a reader goes first (their writes stop at the limits instead).
    func hasRoom(forRead bytes: UInt64) -> Bool {
        shortfall(extra: bytes, countingReserved: false) == 0
    }

    private func shortfall(extra: UInt64, countingReserved: Bool) -> UInt64 {
        counters.withLock { counters in
            let space = estimatedSpace(&counters)
            return limits.shortfall(cached: counters.cached, reserved: countingReserved ? counters.reserved : 0,
                                    extra: extra, space: space)
        }
    }

    /// Promises `bytes` to a background transfer if they fit; false when they do not.
    func reserve(_ bytes: UInt64) -> Bool {
        counters.withLock { counters in
            let space = estimatedSpace(&counters)
            guard limits.shortfall(cached: counters.cached, reserved: counters.reserved, extra: bytes, space: space) == 0 else {
                return false
            }
            counters.reserved += bytes
            return true
        }
    }

    /// Gives back what a background transfer was promised and did not write.
    func unreserve(_ bytes: UInt64) {
        counters.withLock { $0.reserved = $0.reserved.subtractingClamped(bytes) }
    }

    /// Asks to write `bytes` that just arrived (of which `reservedPart` were promised to their
    /// transfer). False when writing them would take free space below the floor, or the cache
    /// past its size limit: they must not be written. Another program may have filled the disk
    /// since the transfer started. What others were promised does not count here: a reader's
    /// bytes go before background work.
    func claim(_ bytes: UInt64, reservedPart: UInt64) -> Bool {
        counters.withLock { counters in
            counters.reserved = counters.reserved.subtractingClamped(reservedPart)
            let space = estimatedSpace(&counters)
            if limits.shortfall(cached: counters.cached, extra: bytes, space: space) > 0 { return false }
            counters.writtenSinceSample += bytes
            return true
        }
    }

    /// The free space now: a fresh sample when the last is too old, else the last one less
    /// what this mount wrote since.
    private func estimatedSpace(_ counters: inout Counters) -> FilesystemSpace? {
        let now = ContinuousClock.now
        if counters.sampledAt.map({ now - $0 > Self.sampleLifetime }) ?? true {
            counters.sample = FilesystemSpace.of(directory)
            counters.sampledAt = now
            counters.writtenSinceSample = 0
        }
        guard var space = counters.sample else { return nil }
        space.free = space.free.subtractingClamped(counters.writtenSinceSample)
        return space
    }

    // MARK: Reads served without storing

    /// Counts bytes a reader got from the network without them being stored; true the first
    /// time since the cache last had room (when the log should say so).
    func readThrough(_ bytes: UInt64) -> Bool {
        counters.withLock { counters in
            counters.readThroughBytes += bytes
            defer { counters.readingThrough = true }
            return !counters.readingThrough
        }
    }

    /// A read found room again: the next read-through is logged again.
    func storing() {
        counters.withLock { $0.readingThrough = false }
    }

    /// Size, limits and free space, for `rangefs status`.
    public var status: CacheSpaceStatus {
        let space = FilesystemSpace.of(directory)
        return counters.withLock { counters in
            CacheSpaceStatus(cachedBytes: counters.cached, maxBytes: limits.maxBytes, freeBytes: space?.free,
                             minFreeBytes: space.map { limits.minFree.bytes(ofFilesystem: $0.size) } ?? 0,
                             readThroughBytes: counters.readThroughBytes)
        }
    }

    /// True for a failure that means the disk (or the user's quota) is full.
    static func isOutOfSpace(_ error: any Error) -> Bool {
        if let error = error as? CacheError, let code = error.errorNumber { return code == ENOSPC || code == EDQUOT }
        if let error = error as? DatabaseError { return error.resultCode == .SQLITE_FULL }
        return false
    }
}
