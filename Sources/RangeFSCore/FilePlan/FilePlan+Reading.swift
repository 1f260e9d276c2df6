import Foundation

/// Reads: which requests to start for them, and who waits for what.
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
            // A reader now waits on these transfers: none of them may be held back any more, and
            // read-ahead among them now holds background work back as a reader's request does.
            // With piece hashes it waits for its whole pieces, so also for the transfers bringing
            // the rest of them: one held back there would hold the reader (and, as background
            // work waits while a reader does, both) until the read's deadline.
            let blocks = layout.blocks(covering: pieceAligned(bytes))
            for (id, transfer) in transfers where (transfer.mayBeHeldBack || transfer.isReadAhead) && transfer.blocks.overlaps(blocks) {
                transfers[id]?.mayBeHeldBack = false
                transfers[id]?.isReadAhead = false
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
        let (cutActions, cutAny) = cutLateTransfers(bringing: layout.blocks(covering: bytes.lowerBound..<readerEnd),
                                                    withReadAhead: layout.blocks(covering: bytes), now: now,
                                                    hostBytesPerSecond: hostBytesPerSecond)
        var actions = cutActions
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
                    // A request that brings none of the reader's own blocks is read-ahead.
                    actions.append(startTransfer(bytes: piece, blocks: layout.blocks(covering: piece),
                                                 readAhead: readerNeedsUntil > 0 && piece.lowerBound >= readerNeedsUntil))
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

    mutating func startTransfer(bytes: Range<UInt64>, blocks: Range<Int>, readAhead: Bool = false) -> Action {
        let id = nextTransferID
        nextTransferID += 1
        var transfer = Transfer(bytes: bytes, blocks: blocks)
        if readAhead {
            transfer.urgency = TransferUrgency(.readAhead)
            transfer.isReadAhead = true
        }
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
    /// It waits until more than half the window is free (neither here nor on its way), so the
    /// leading edge moves in large requests (joined with the reader's own) instead of one small
    /// request per read. So a first read of half a block whose block is already on its way (the
    /// head the prefetcher fetched for scanners) asks for nothing more: a tag reader that reads
    /// only the head costs no read-ahead, and a player's read-ahead starts with its second read
    /// (a library's first scan over a distant link took 9.6 s instead of 7.3 with exactly half
    /// enough; a read-through at 96 KB/s per connection gained 16 % from it).
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
}
