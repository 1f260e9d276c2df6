import Foundation
import Logging
import Synchronization

/// Keeps the cache within `--cache-max-size` and the free-space floor: counts what changes the
/// cached bytes, and evicts least recently used files nobody has open, partial ones first.
/// Every eviction runs on the committer's queue, one at a time, after the commits before it.
final class CacheEviction: Sendable {
    /// The limits and the bytes counted against them.
    let budget: CacheBudget
    private let files: LoadedFiles
    private let environment: FetchEnvironment
    /// An eviction pass is queued on the committer (leaf lock).
    private let evictionScheduled = Mutex(false)
    /// When a read last found nothing to evict: reads at the limits do not search again at
    /// once (leaf lock).
    private let futileEviction = Mutex<ContinuousClock.Instant?>(nil)

    init(budget: CacheBudget, files: LoadedFiles, environment: FetchEnvironment) {
        self.budget = budget
        self.files = files
        self.environment = environment
    }

    func cachedBytesChanged(by delta: Int64) {
        budget.add(delta)
        if delta > 0 { keepWithinLimits() }
    }

    /// A file was closed and may be evicted now: the next read at the limits looks again.
    func fileClosed() {
        futileEviction.withLock { $0 = nil }
    }

    /// Evicts (on the committer's queue) if the cache is over its limits: after it grew, or
    /// when another program took the free space below the floor.
    func keepWithinLimits() {
        guard budget.excess > 0 else { return }
        let first = evictionScheduled.withLock { scheduled in
            defer { scheduled = true }
            return !scheduled
        }
        guard first else { return }
        environment.committer.schedule { [self] in
            evictionScheduled.withLock { $0 = false }
            makeRoom()
        }
    }

    /// A read (or a pinned file) needs `bytes` more than fit: evicts for it and waits, unless
    /// a search a moment ago found nothing that could go. Not on the committer's queue.
    func makeRoom(forRead bytes: UInt64) {
        if let last = futileEviction.withLock({ $0 }), ContinuousClock.now - last < .seconds(1) { return }
        let left = environment.committer.sync { makeRoom(extra: bytes) }
        futileEviction.withLock { $0 = left > 0 ? ContinuousClock.now : nil }
    }

    /// Evicts least recently used files nobody is using, partial ones first, until the cache is
    /// within its limits with room for `extra` more bytes (or nothing more can go). Returns the
    /// bytes still missing. Runs on the committer's queue.
    @discardableResult
    func makeRoom(extra: UInt64 = 0) -> UInt64 {
        var excess = budget.shortfall(extra: extra)
        guard excess > 0 else { return 0 }
        let candidates: [CachedFileRecord]
        // Files opened lately count as used lately, also before their times' own write.
        environment.accessTimes.writeNoted()
        do {
            candidates = try environment.store.evictionCandidates()
        } catch {
            environment.logger.error("cannot choose files to evict: \(error)")
            return excess
        }
        for record in candidates where excess > 0 {
            guard let freed = evict(record) else { continue }
            environment.logger.info("evicted \(CacheKey.shown(record.url)) (\(freed) bytes) to keep the cache within its limits")
            excess = budget.shortfall(extra: extra)
        }
        // A read that finds no room is served without storing, and says so itself.
        if excess > 0, extra == 0 {
            environment.logger.warning("the cache is \(excess) bytes over its limits and every cached file is in use or pinned")
        }
        return excess
    }

    /// Drops the cached data of the file of `record` (its database record) if nobody uses it;
    /// returns the bytes freed, or nil when it is in use. Runs on the committer's queue; no
    /// lock is held across its system calls or database calls.
    @discardableResult
    func evict(_ record: CachedFileRecord) -> UInt64? {
        let key = record.url
        let layout = BlockLayout(fileSize: record.size, blockSize: record.blockSize)
        let empty = BlockBitmap(blockCount: layout.blockCount).serialized
        let state: CacheState = layout.blockCount == 0 ? .complete : .remote
        let freed: UInt64
        var newDataName: String?
        if case let (emptied, previousDataName)? = files.emptyStoredRecord(record) {
            // Not loaded, so nobody is using it; a load from now on uses the new data name.
            for name in Set([previousDataName, record.dataName]) {
                unlink(environment.directory.dataPath(name: name, complete: false))
                unlink(environment.directory.dataPath(name: name, complete: true))
            }
            let present = BlockBitmap(blockCount: layout.blockCount, serialized: [UInt8](record.bitmap))?.presentCount ?? 0
            freed = min(record.size, UInt64(present) * record.blockSize)
            newDataName = emptied.dataName
        } else if let file = files.loadedFile(key), let bytes = file.evictIfIdle() {
            freed = bytes
        } else {
            return nil
        }
        CrashPoint.reached(.eviction)
        do {
            if let newDataName {
                try environment.store.emptyBlocks(url: key, bitmap: empty, state: state, dataName: newDataName)
            } else {
                try environment.store.commitBlocks(url: key, bitmap: empty, state: state)
            }
        } catch {
            environment.logger.error("cannot record the eviction of \(CacheKey.shown(key)): \(error)")
        }
        budget.add(-Int64(freed))
        environment.metrics.evicted()
        return freed
    }
}
