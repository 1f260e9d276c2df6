import Foundation
import Logging
import Synchronization

/// Keeping the cache within `--cache-max-size` and the free-space floor: what changes the
/// cached bytes, and eviction of least recently used files nobody has open.
extension FileCatalog {
    func cachedBytesChanged(by delta: Int64) {
        budget.add(delta)
        if delta > 0 { keepWithinLimits() }
    }

    /// Evicts (on the committer's queue) if the cache is over its limits: after it grew, or
    /// when another program took the free space below the floor.
    public func keepWithinLimits() {
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
        do {
            candidates = try environment.store.evictionCandidates()
        } catch {
            environment.logger.error("cannot choose files to evict: \(error)")
            return excess
        }
        for record in candidates where excess > 0 {
            guard let freed = evict(record) else { continue }
            environment.logger.info("evicted \(URL(string: record.url)?.redactedForDisplay ?? "a file") (\(freed) bytes) to keep the cache within its limits")
            excess = budget.shortfall(extra: extra)
        }
        // A read that finds no room is served without storing, and says so itself.
        if excess > 0, extra == 0 {
            environment.logger.warning("the cache is \(excess) bytes over its limits and every cached file is in use or pinned")
        }
        return excess
    }

    /// Drops a file's cached data if nobody uses it; returns the bytes freed.
    /// Runs on the committer's queue.
    @discardableResult
    func evict(_ record: CachedFileRecord) -> UInt64? {
        let key = record.url
        let freed = slots.withLock { slots -> UInt64? in
            if case .ready(let file) = slots[key] {
                return file.evictIfIdle()
            }
            // Not loaded: nothing can be using it; update what a later load will see.
            let layout = BlockLayout(fileSize: record.size, blockSize: record.blockSize)
            let empty = BlockBitmap(blockCount: layout.blockCount)
            let present = BlockBitmap(blockCount: layout.blockCount, serialized: [UInt8](record.bitmap))
            storedRecords.withLock { records in
                records[key]?.bitmap = Data(empty.serialized)
                records[key]?.state = .remote
            }
            unlink(environment.directory.dataPath(name: record.dataName, complete: false))
            unlink(environment.directory.dataPath(name: record.dataName, complete: true))
            return min(record.size, UInt64(present?.presentCount ?? 0) * record.blockSize)
        }
        guard let freed else { return nil }
        CrashPoint.reached(.eviction)
        let layout = BlockLayout(fileSize: record.size, blockSize: record.blockSize)
        do {
            try environment.store.commitBlocks(url: key, bitmap: BlockBitmap(blockCount: layout.blockCount).serialized,
                                               state: layout.blockCount == 0 ? .complete : .remote)
        } catch {
            environment.logger.error("cannot record the eviction of \(URL(string: key)?.redactedForDisplay ?? key): \(error)")
        }
        budget.add(-Int64(freed))
        environment.metrics.evicted()
        return freed
    }
}
