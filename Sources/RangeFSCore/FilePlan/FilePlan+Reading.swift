import Foundation

/// Reads and background work: which requests to start for them, and who waits for what.
extension FilePlan {
    /// Why no read of this version can be answered any more, or nil while it can.
    var readRefusal: FetchError? {
        invalidated.map { FetchError(name, $0) }
    }

    /// A read of `bytes` (already clamped to the file): answers it when its bytes are here,
    /// else queues it and starts what is missing (plus up to `readAhead` bytes after it, for a
    /// sequential reader) in as few requests as possible. The data file is open.
    /// `hostBytesPerSecond`: how fast the file's host moved lately (nil when unknown), for
    /// choosing between waiting for a running transfer and asking for the bytes (`isComingSoon`).
    mutating func read(_ bytes: Range<UInt64>, readAhead: UInt64, now: ContinuousClock.Instant,
                       hostBytesPerSecond: Double? = nil, completion: @escaping ReadCompletion) -> [Action] {
        if complete || bytes.isEmpty {
            return [.answer(completion, bytes)]
        }
        // No source is left: what is cached stays readable, nothing more can be fetched.
        if sources.allDropped {
            return [isAvailable(bytes) ? .answer(completion, bytes) : .fail(completion, noSourceError)]
        }
        var actions = probeNewSources()
        readSinceOpen = true
        if readAhead > 0 { sequentialReader = (bytes.upperBound, now) }
        if readAhead == 0, let sparse = planSparseRead(bytes) {
            actions += sparse
        } else {
            // With piece hashes a reader is answered once its whole pieces are here and checked.
            let needed = pieceAligned(bytes)
            let end = max(readAheadEnd(after: bytes.upperBound, window: readAhead) ?? needed.upperBound, needed.upperBound)
            actions += planTransfers(covering: needed.lowerBound..<end, readerNeedsUntil: needed.upperBound, now: now,
                                    hostBytesPerSecond: hostBytesPerSecond)
        }
        if isAvailable(bytes) {
            actions.append(.answer(completion, bytes))
        } else {
            let id = nextWaiterID
            nextWaiterID += 1
            waiters.append(Waiter(id: id, bytes: bytes, completion: completion))
            // A reader now waits on these transfers: none of them may be held back any more. With
            // piece hashes it waits for its whole pieces, so also for the transfers bringing the
            // rest of them: one held back there would hold the reader (and, as background work
            // waits while a reader does, both) until the read's deadline.
            let blocks = layout.blocks(covering: pieceAligned(bytes))
            for (id, transfer) in transfers where transfer.mayBeHeldBack && transfer.blocks.overlaps(blocks) {
                transfers[id]?.mayBeHeldBack = false
                actions.append(.raise(transfer.urgency))
            }
            actions.append(.expire(waiter: id, after: policy.readDeadline))
        }
        return actions
    }

    /// The bytes of the blocks a read of `bytes` would store (0 when nothing is to be stored).
    func bytesToStore(for bytes: Range<UInt64>) -> UInt64 {
        guard !complete, !streamOnly, invalidated == nil, !bytes.isEmpty, !isAvailable(bytes) else { return 0 }
        return UInt64(layout.byteRange(ofBlocks: layout.blocks(covering: bytes)).count)
    }

    /// Starts requests for the blocks of `bytes` that are neither here nor on their way, one
    /// per run of adjacent blocks, split into requests of `requestBytes` that go out at once.
    /// Blocks that start before `readerNeedsUntil` are a reader's own: a transfer that would
    /// bring one of them late is cut before it first (`cutLateTransfers`), so those blocks are
    /// asked for again here; the rest join any transfer that brings them. So is background
    /// work that would bring read-ahead's blocks late (one started before the reader came:
    /// later ones leave its zone alone), or the reader would follow it at one request's pace.
    mutating func planTransfers(covering bytes: Range<UInt64>, readerNeedsUntil: UInt64 = 0,
                                now: ContinuousClock.Instant, hostBytesPerSecond: Double? = nil) -> [Action] {
        if streamOnly {
            return planStream()
        }
        let maxBlocks = max(1, Int(requestBytes(hostBytesPerSecond: hostBytesPerSecond) / layout.blockSize))
        let readerEnd = min(max(readerNeedsUntil, bytes.lowerBound), bytes.upperBound)
        let own = cutLateTransfers(bringing: layout.blocks(covering: bytes.lowerBound..<readerEnd),
                                   now: now, hostBytesPerSecond: hostBytesPerSecond)
        let ahead = cutLateTransfers(bringing: layout.blocks(covering: readerEnd..<bytes.upperBound),
                                     now: now, hostBytesPerSecond: hostBytesPerSecond, backgroundOnly: true)
        let cutAny = own.cutAny || ahead.cutAny
        var actions = own.actions + ahead.actions
        var runStart: Int?
        let blocks = layout.blocks(covering: bytes)
        // Read-ahead (blocks the reader does not need yet) stops at `maxReaderRequests` in flight;
        // the reader's next reads ask for the rest as those end.
        let firstAheadBlock = Int((readerNeedsUntil + layout.blockSize - 1) / layout.blockSize)
        var readerRequests = transfers.values.count { $0.forReader && !$0.wholeBody }
        for block in blocks.lowerBound...blocks.upperBound {
            let wanted = block < blocks.upperBound && !available.contains(block) && !isRequested(block)
            if wanted, runStart == nil {
                if block >= firstAheadBlock, readerRequests >= policy.maxReaderRequests { break }
                runStart = block
            }
            guard let start = runStart else { continue }
            if !wanted || block + 1 - start == maxBlocks {
                let run = start..<(wanted ? block + 1 : block)
                runStart = nil
                readerRequests += 1
                for var piece in missingPieces(of: layout.byteRange(ofBlocks: run)) {
                    // A reader that lands deep inside a missing block (a seek) should not wait for
                    // the block's start to arrive first: its request starts at its own bytes, and a
                    // second one brings the head of the block so that the block becomes whole.
                    let seek = pageAligned(bytes).lowerBound
                    if readerNeedsUntil > 0, piece.contains(seek), seek - piece.lowerBound >= Self.seekSplitThreshold {
                        let head = piece.lowerBound..<seek
                        actions.append(startTransfer(bytes: head, blocks: layout.blocks(covering: head)))
                        piece = seek..<piece.upperBound
                    }
                    actions.append(startTransfer(bytes: piece, blocks: layout.blocks(covering: piece)))
                }
            }
        }
        // Other readers that waited for what a cut transfer no longer brings ask for it again.
        if cutAny { actions += refetchForOrphanedWaiters() }
        return actions
    }

    /// The size of a reader's requests: `requestTime` at the host's recent speed per request,
    /// between `minRequestBytes` (also when the speed is unknown) and `maxRequestBytes`. Short
    /// on a slow link, so that a reader's next bytes are never far behind a request's start
    /// and its read-ahead is many requests at once; on a fast one, few large requests.
    func requestBytes(hostBytesPerSecond: Double?) -> UInt64 {
        let upper = max(policy.minRequestBytes, policy.maxRequestBytes)
        let wanted = (hostBytesPerSecond ?? 0) * policy.requestTime.timeInterval
        guard wanted.isFinite else { return upper }
        return max(UInt64(min(max(wanted, 0), Double(upper))), policy.minRequestBytes)
    }

    /// A reader that jumped (no read-ahead) into blocks that are not on their way gets only its
    /// own pages: random 4 KiB reads would otherwise cost a whole block each. Once a block holds
    /// a sixteenth of its bytes from such reads, the reader keeps coming back there and the
    /// usual path fetches the rest of the block. Returns nil when the usual path should run.
    mutating func planSparseRead(_ bytes: Range<UInt64>) -> [Action]? {
        // Pages alone never complete a piece to check: with piece hashes, whole pieces are fetched.
        guard !streamOnly, !bytes.isEmpty, pieces == nil else { return nil }
        let blocks = layout.blocks(covering: bytes)
        let blockBytes = layout.byteRange(ofBlocks: blocks)
        guard blocks.allSatisfy({ !available.contains($0) }),
              !transfers.values.contains(where: { !$0.blocks.isEmpty && $0.bytes.overlaps(blockBytes) })
        else { return nil }
        let scattered = blocks.reduce(UInt64(0)) { total, block in
            total + (partial[block] ?? []).reduce(0) { $0 + UInt64($1.count) }
        }
        guard scattered < UInt64(blocks.count) * layout.blockSize / 16 else { return nil }
        return missingPieces(of: pageAligned(bytes)).map { startPageTransfer(bytes: $0) }
    }

    /// A transfer of a few pages that brings no whole block: other readers of its blocks
    /// do not join it (`isRequested` does not see it), and nobody waits for it but its own.
    mutating func startPageTransfer(bytes: Range<UInt64>) -> Action {
        let first = layout.blocks(covering: bytes).lowerBound
        return startTransfer(bytes: bytes, blocks: first..<first)
    }

    mutating func startTransfer(bytes: Range<UInt64>, blocks: Range<Int>) -> Action {
        let id = nextTransferID
        nextTransferID += 1
        let transfer = Transfer(bytes: bytes, blocks: blocks)
        transfers[id] = transfer
        return .fetch(id: id, bytes: transfer.bytes, urgency: transfer.urgency)
    }

    /// For a server that ignores ranges: one GET of the whole file, unless one is running.
    /// Readers are answered as the stream passes their bytes.
    mutating func planStream() -> [Action] {
        guard !transfers.values.contains(where: \.wholeBody), !available.isComplete,
              invalidated == nil else { return [] }
        let id = nextTransferID
        nextTransferID += 1
        let all = 0..<layout.blockCount
        let transfer = Transfer(bytes: layout.byteRange(ofBlocks: all), blocks: all, wholeBody: true)
        transfers[id] = transfer
        return [.fetch(id: id, bytes: transfer.bytes, urgency: transfer.urgency, wholeBody: true)]
    }

    /// Where read-ahead for a sequential reader should stop, or nil when none is due yet.
    /// It waits until half the window is free, so the leading edge moves in large requests
    /// (joined with the reader's own) instead of one small request per read.
    func readAheadEnd(after offset: UInt64, window: UInt64) -> UInt64? {
        guard window > 0, offset < layout.fileSize else { return nil }
        let end = min(layout.fileSize, offset + window)
        let blocks = layout.blocks(covering: offset..<end)
        guard let first = blocks.first(where: { !available.contains($0) && !isRequested($0) }) else {
            return nil
        }
        let firstOffset = layout.byteRange(ofBlock: first).lowerBound
        guard firstOffset < offset + window / 2 || end == layout.fileSize else { return nil }
        return end
    }

    // MARK: Background completion

    /// Whether background work may start anything on this file.
    var wantsBackgroundWork: Bool {
        !complete && layout.blockCount > 0 && invalidated == nil && !sources.allDropped
    }

    /// The next bytes background work should fetch: the first gap (at most `maxBytes` of
    /// blocks) that is neither here nor on its way, outside the zone a sequential reader's
    /// read-ahead keeps (`readerZone`); nil when there is none.
    func nextBackgroundPiece(maxBytes: UInt64, now: ContinuousClock.Instant = .now) -> Range<UInt64>? {
        if isNewlyOpened(now: now) { return nil }
        let zone = readerZone(now: now) ?? 0..<0
        func isFree(_ block: Int) -> Bool { !isRequested(block) && !zone.contains(block) }
        var start = 0
        while let run = available.nextMissingRun(from: start) {
            guard let free = run.first(where: isFree) else {
                start = run.upperBound
                continue
            }
            let maxBlocks = max(1, Int(maxBytes / layout.blockSize))
            var end = free
            while end < run.upperBound, end - free < maxBlocks, isFree(end) { end += 1 }
            // Only the first gap: what a reader already brought into these blocks is not
            // asked for again, and the next call takes the next gap.
            guard let piece = missingPieces(of: layout.byteRange(ofBlocks: free..<end), allInFlight: true).first else {
                start = end
                continue
            }
            return piece
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
    mutating func startBackgroundTransfer(_ piece: Range<UInt64>, onFinish: @escaping @Sendable (Bool) -> Void) -> [Action] {
        waitingForSpace = false
        return probeNewSources() + [addBackgroundTransfer(piece, reserved: UInt64(piece.count), onFinish: onFinish)]
    }

    /// Records a background transfer of `bytes`, for which the budget promised `reserved` bytes,
    /// held back while readers wait until one waits on it; returns its `.fetch`.
    mutating func addBackgroundTransfer(_ bytes: Range<UInt64>, reserved: UInt64,
                                        onFinish: @escaping @Sendable (Bool) -> Void) -> Action {
        let id = nextTransferID
        nextTransferID += 1
        var transfer = Transfer(bytes: bytes, blocks: layout.blocks(covering: bytes),
                                urgency: TransferUrgency(.background), onFinish: onFinish)
        transfer.forReader = false
        transfer.reserved = reserved
        transfer.mayBeHeldBack = true
        transfers[id] = transfer
        return .fetch(id: id, bytes: bytes, urgency: transfer.urgency)
    }
}
