import Foundation

/// Commits, promotion, rejection and eviction as the state sees them: which blocks a commit
/// covers, what a failed commit rolls back, what a rejected or evicted version forgets.
extension FilePlan {
    /// What a commit starting now covers: the written blocks, the durable ones, and whether
    /// this version was given up (nothing is committed then).
    mutating func commitStarting() -> (available: BlockBitmap, durable: BlockBitmap, invalidated: Bool) {
        commitScheduled = false
        commitDeferred = false
        uncommittedSince = nil
        committing = invalidated == nil && available != durable
        forgottenWhileCommitting = []
        return (available, durable, invalidated != nil)
    }

    /// Blocks became whole at `now` and wait for a commit.
    mutating func uncommitted(at now: ContinuousClock.Instant) {
        if uncommittedSince == nil { uncommittedSince = now }
    }

    /// Schedules the commit of the blocks written since the last one: at once when the file
    /// has every block (it is promoted then), when nothing more is coming (no transfer runs and
    /// no handle is open) or when asked (`atOnce`: at unmount, or when the cache ran out of
    /// room); while transfers run, once the oldest of those blocks have waited `commitInterval`;
    /// and when the transfers pause before that, at that time, from the commit queue
    /// (`FetchPolicy.commitInterval` says why not sooner).
    mutating func commitIfDue(now: ContinuousClock.Instant, atOnce: Bool = false) -> [Action] {
        guard let since = uncommittedSince, !commitScheduled else { return [] }
        let waited = now - since
        let nothingMoreComing = transfers.isEmpty && openHandles == 0
        if atOnce || nothingMoreComing || available.isComplete || waited >= policy.commitInterval {
            commitScheduled = true
            return [.commit]
        }
        guard transfers.isEmpty, !commitDeferred else { return [] }
        commitDeferred = true
        return [.commitLater(after: policy.commitInterval - waited)]
    }

    /// A handle on the file was closed: what it fetched is committed now if nothing more is coming.
    mutating func handleClosed(now: ContinuousClock.Instant) -> [Action] {
        openHandles -= 1
        return commitIfDue(now: now)
    }

    /// The blocks of `snapshot` are synced and in the database; `complete` once it holds them all.
    /// Returns the bitmap the database must hold instead when blocks of `snapshot` were forgotten
    /// meanwhile (their source's copy differed): they are not kept.
    @discardableResult
    mutating func committed(_ snapshot: BlockBitmap, complete: Bool) -> BlockBitmap? {
        var trusted = snapshot
        for block in forgottenWhileCommitting { trusted.remove(block) }
        committing = false
        forgottenWhileCommitting = []
        durable = trusted
        self.complete = complete && trusted == snapshot
        if self.complete { waitingForSpace = false }
        let layout = layout
        sources.settle { bytes in layout.blocks(covering: bytes).allSatisfy(trusted.contains) }
        return trusted == snapshot ? nil : trusted
    }

    /// A commit failed: only what is durable is trusted, so those blocks are fetched again
    /// rather than served from a hole. Readers whose bytes were just dropped and that no transfer
    /// will bring again are answered now: from the network, unstored, when the disk is full
    /// (that is no failure of the file); else they fail, as fetching again into a cache that
    /// cannot keep data would not end. Returns the bytes dropped and what to do.
    mutating func commitRolledBack(outOfSpace: Bool, error: String) -> (dropped: UInt64, actions: [Action]) {
        let dropped = cachedBytes(of: available) - cachedBytes(of: durable)
        available = durable
        partial = [:]
        committing = false
        forgottenWhileCommitting = []
        // What no block holds any more needs no forgetting if its source's copy turns out to
        // differ, and no piece check is about the bytes still there.
        sources.settle { _ in true }
        forgetPieceChecks()
        let actions: [Action]
        if outOfSpace {
            waitingForSpace = true
            actions = readThroughOrphanedWaiters()
        } else {
            lastFailure = error
            actions = failOrphanedWaiters(error: FetchError(name, .cache(CacheError("cannot keep fetched data: \(error)"))))
        }
        return (dropped, actions)
    }

    /// The finished file is not what the manifest promised: its readers fail and its blocks are
    /// forgotten (the caller removes the data file when this returns actions). Nothing when this
    /// version was given up already.
    mutating func reject(because reason: String) -> [Action] {
        guard invalidated == nil else { return [] }
        invalidated = .rejected(reason)
        let failure = FetchError(name, .rejected(reason))
        var actions = failWaiters(overlapping: 0..<UInt64.max, error: failure, evenIfAvailable: true)
        actions.append(.cachedBytes(-Int64(cachedBytes(of: available))))
        forgetBlocks()
        actions.append(.rejected)
        return actions
    }

    /// Forgets every block of this version (its data file is gone or going).
    mutating func forgetBlocks() {
        available = BlockBitmap(blockCount: layout.blockCount)
        durable = available
        partial = [:]
        forgetPieceChecks()
    }

    /// Forgets every block unless a reader, a transfer or a commit uses the file; returns the
    /// bytes freed (the caller removes the data file), or nil when the file is busy.
    mutating func evictIfIdle() -> UInt64? {
        guard isIdle, invalidated == nil else { return nil }
        let freed = cachedBytes(of: available)
        forgetBlocks()
        complete = layout.blockCount == 0
        uncommittedSince = nil
        return freed
    }

    /// The data file vanished behind our back: what the bitmap says is no longer true. Returns
    /// the bytes that were counted as cached.
    mutating func dataLost() -> UInt64 {
        let lost = cachedBytes(of: available)
        forgetBlocks()
        complete = false
        return lost
    }
}
