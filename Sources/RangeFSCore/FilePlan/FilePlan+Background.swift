import Foundation

/// Background work on a file: whether it may start anything, which bytes it takes next, and
/// what it leaves to readers — the blocks a sequential reader's read-ahead will ask for, and a
/// file just opened until its first read.
extension FilePlan {
    /// Whether background work may start anything on this file.
    var wantsBackgroundWork: Bool {
        !complete && layout.blockCount > 0 && invalidated == nil && !sources.allDropped
    }

    /// What background work does next on this file (`CachedFile.fetchNextMissing` performs it).
    enum BackgroundStep {
        /// Nothing to start: the file needs none, or every missing byte it may take is on its way.
        case none
        /// Start these: a server that ignores ranges gets one stream of the whole file; a slow
        /// mirror's tail moves to a faster one (`takeOverSlowTail`).
        case start([Action])
        /// Fetch these bytes, once the budget has promised them room (`startBackgroundTransfer`).
        case piece(Range<UInt64>)
    }

    mutating func nextBackgroundStep(maxBytes: UInt64, now: ContinuousClock.Instant,
                                     onFinish: @escaping @Sendable (Bool) -> Void) -> BackgroundStep {
        guard wantsBackgroundWork else { return .none }
        if streamOnly {
            let actions = planStream()
            return actions.isEmpty ? .none : .start(actions)
        }
        guard let piece = nextBackgroundPiece(maxBytes: maxBytes, now: now) else {
            // Every missing byte is on its way: a slow mirror's tail may go to a faster one.
            return takeOverSlowTail(now: now, onFinish: onFinish).map { .start($0) } ?? .none
        }
        return .piece(piece)
    }

    /// The next bytes background work should fetch to complete the file: its first gap that
    /// background work may take (`firstBackgroundGap`).
    func nextBackgroundPiece(maxBytes: UInt64, now: ContinuousClock.Instant = .now) -> Range<UInt64>? {
        firstBackgroundGap(in: 0..<layout.blockCount, maxBytes: maxBytes, now: now)
    }

    /// The first gap of `blocks` (at most `maxBytes` of blocks) that background work may take:
    /// neither here nor on its way, and outside the zone a sequential reader's read-ahead keeps
    /// (`readerZone`); none while the file was just opened (`isNewlyOpened`). Only the first
    /// gap: what a reader already brought into its blocks is not asked for again, and the next
    /// call takes the next gap.
    func firstBackgroundGap(in blocks: Range<Int>, maxBytes: UInt64, now: ContinuousClock.Instant) -> Range<UInt64>? {
        if isNewlyOpened(now: now) { return nil }
        let zone = readerZone(now: now) ?? 0..<0
        func isFree(_ block: Int) -> Bool { !isRequested(block) && !zone.contains(block) }
        let maxBlocks = max(1, Int(maxBytes / layout.blockSize))
        var start = blocks.lowerBound
        while let missing = available.nextMissingRun(from: start) {
            let run = missing.clamped(to: blocks)
            guard !run.isEmpty else { return nil }
            guard let free = run.first(where: isFree) else {
                start = run.upperBound
                continue
            }
            var end = free
            while end < run.upperBound, end - free < maxBlocks, isFree(end) { end += 1 }
            if let piece = missingPieces(of: layout.byteRange(ofBlocks: free..<end), allInFlight: true).first {
                return piece
            }
            start = end
        }
        return nil
    }

    /// The blocks a sequential reader's read-ahead will ask for (`readerZoneBytes` past its
    /// latest read), while it read within `readerZoneIdle`; nil when no reader keeps any.
    func readerZone(now: ContinuousClock.Instant) -> Range<Int>? {
        guard let reader = sequentialReader, now - reader.at < policy.readerZoneIdle,
              reader.end < layout.fileSize else { return nil }
        return layout.blocks(covering: reader.end..<min(layout.fileSize, reader.end + policy.readerZoneBytes))
    }

    /// Opened less than `openGrace` ago with no read since: background work waits for the
    /// reader's first request.
    func isNewlyOpened(now: ContinuousClock.Instant) -> Bool {
        guard let openedAt, !readSinceOpen else { return false }
        return now - openedAt < policy.openGrace
    }

    /// Whether background work waits for a reader: the file was just opened and its first read
    /// has not come, or blocks in a sequential reader's zone are missing and nobody fetches them
    /// (its read-ahead will, or background work once it stops).
    func backgroundWaitsForReader(now: ContinuousClock.Instant) -> Bool {
        guard wantsBackgroundWork else { return false }
        if isNewlyOpened(now: now) { return true }
        guard let zone = readerZone(now: now) else { return false }
        return zone.contains { !available.contains($0) && !isRequested($0) }
    }

    /// Starts a background transfer of `piece`, whose bytes the budget has promised it.
    /// `purpose`: `.background`, or `.headsAndTails` for what a scan reads next.
    mutating func startBackgroundTransfer(_ piece: Range<UInt64>, purpose: TransferPurpose = .background,
                                          onFinish: @escaping @Sendable (Bool) -> Void) -> [Action] {
        waitingForSpace = false
        return probeNewSources() + [addBackgroundTransfer(piece, reserved: UInt64(piece.count), purpose: purpose, onFinish: onFinish)]
    }

    /// Records a background transfer of `bytes`, for which the budget promised `reserved` bytes,
    /// held back while readers wait until one waits on it; returns its `.fetch`.
    mutating func addBackgroundTransfer(_ bytes: Range<UInt64>, reserved: UInt64, purpose: TransferPurpose = .background,
                                        onFinish: @escaping @Sendable (Bool) -> Void) -> Action {
        precondition(purpose.isBackgroundWork, "a background transfer is background work")
        let id = nextTransferID
        nextTransferID += 1
        var transfer = Transfer(bytes: bytes, blocks: layout.blocks(covering: bytes), purpose: purpose, onFinish: onFinish)
        transfer.reserved = reserved
        transfers[id] = transfer
        return .fetch(id: id, bytes: bytes, control: transfer.control)
    }
}
