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
    /// choosing between waiting for a running transfer and asking for the bytes (`firstLateByte`).
    mutating func read(_ bytes: Range<UInt64>, readAhead: UInt64, now: ContinuousClock.Instant,
                       hostBytesPerSecond: Double? = nil, completion: @escaping ReadCompletion) -> [Action] {
        if complete || bytes.isEmpty {
            return [.answer(completion, bytes)]
        }
        // A version that changed on the server (or failed its sha256): what is cached of it
        // still reads, for a reader holding its bytes; nothing more of it is asked for.
        if let invalidated {
            return [isAvailable(bytes) ? .answer(completion, bytes) : .fail(completion, FetchError(name, invalidated))]
        }
        // No source is left: what is cached stays readable, nothing more can be fetched.
        if sources.allDropped {
            return [isAvailable(bytes) ? .answer(completion, bytes) : .fail(completion, noSourceError)]
        }
        var actions = probeNewSources()
        readSinceOpen = true
        if readAhead > 0 {
            sequentialReader = SequentialRead(end: bytes.upperBound, at: now, window: readAhead,
                                              hostBytesPerSecond: hostBytesPerSecond)
        } else {
            // A jump (or a read the cache has no room to read ahead for): nothing more is
            // fetched ahead until the reader reads in a row again (`continueReadAhead`).
            sequentialReader?.window = 0
        }
        if readAhead == 0, let sparse = planSparseRead(bytes) {
            actions += sparse
        } else {
            // With piece hashes a reader is answered once its whole pieces are here and checked.
            let needed = pieceAligned(bytes)
            // A transfer that would bring the reader's own blocks late is cut first, and those
            // bytes are asked for again below: read-ahead is judged by what comes soon (a slow
            // head the reader would have waited on does not count as on its way). So is background
            // work (one started before the reader came: later ones leave its zone alone) that
            // would bring the first half of the read-ahead window late: counted as on its way to
            // its end, one transfer covering the window (an opened file's completion) would keep
            // read-ahead from ever being due, and the reader would follow it at one connection's
            // pace. Only the half that decides whether read-ahead is due: a cut past it would
            // leave bytes nobody asks for.
            let ownBlocks = layout.byteRange(ofBlocks: layout.blocks(covering: needed))
            let judged = ownBlocks.lowerBound..<max(ownBlocks.upperBound, min(layout.fileSize, bytes.upperBound + readAhead / 2))
            var cut = cutLateTransfers(bringing: ownBlocks, withReadAhead: readAhead > 0 ? judged : nil,
                                       now: now, hostBytesPerSecond: hostBytesPerSecond)
            let end = max(readAheadEnd(after: bytes.upperBound, window: readAhead) ?? needed.upperBound, needed.upperBound)
            if end > needed.upperBound {
                // Read-ahead goes out: background work bringing the rest of its blocks late is cut
                // too, or the reader would follow it there.
                let ahead = cutLateBackgroundWork(in: layout.byteRange(ofBlocks: layout.blocks(covering: needed.lowerBound..<end)),
                                                  now: now, hostBytesPerSecond: hostBytesPerSecond)
                cut = (cut.actions + ahead.actions, cut.cutAny || ahead.cutAny)
            }
            actions += cut.actions
            actions += planTransfers(covering: needed.lowerBound..<end, readerNeedsUntil: needed.upperBound,
                                     hostBytesPerSecond: hostBytesPerSecond)
            // Other readers that waited for what a cut transfer no longer brings ask for it again.
            if cut.cutAny { actions += refetchForOrphanedWaiters() }
        }
        if isAvailable(bytes) {
            actions.append(.answer(completion, bytes))
        } else {
            let id = nextWaiterID
            nextWaiterID += 1
            waiters.append(Waiter(id: id, bytes: bytes, completion: completion, deadline: now + policy.readDeadline))
            // A reader now waits on these transfers: none of them may be held back any more, and
            // read-ahead among them now holds background work back as a reader's request does.
            // With piece hashes it waits for its whole pieces, so also for the transfers bringing
            // the rest of them: one held back there would hold the reader (and, as background
            // work waits while a reader does, both) until the read's deadline.
            let waitedFor = pieceAligned(bytes)
            for (id, transfer) in transfers where transfer.purpose.mayBeRaised && transfer.bytes.overlaps(waitedFor) {
                transfers[id]?.raise(at: now)
                actions.append(.raise(transfer.control))
            }
            actions.append(.awaitDeadline(waiter: id))
        }
        // What the transfers this read starts bring past its end is read-ahead.
        return actions.map { $0.fetchingAhead(from: bytes.upperBound) }
    }

    /// Whether a read is stored with its read-ahead, stored without it, or read through
    /// unstored (`ReadThrough`), by what the cache has room for after evicting what it could.
    enum ReadRoom { case store, storeWithoutReadAhead, readThrough }

    static func readRoom(fitsWithReadAhead: Bool, fitsAlone: Bool) -> ReadRoom {
        fitsWithReadAhead ? .store : fitsAlone ? .storeWithoutReadAhead : .readThrough
    }

    /// The bytes of the blocks a read of `bytes` would store (0 when nothing is to be stored).
    func bytesToStore(for bytes: Range<UInt64>) -> UInt64 {
        guard !complete, !streamOnly, invalidated == nil, !bytes.isEmpty, !isAvailable(bytes) else { return 0 }
        return UInt64(layout.byteRange(ofBlocks: layout.blocks(covering: bytes)).count)
    }

    /// Starts requests for the bytes of the blocks of `bytes` that are neither here nor on their
    /// way: one per run of adjacent blocks, split into requests of `requestBytes` that go out at
    /// once (on a slow link a block goes out in several, `requestParts`). Bytes before
    /// `readerNeedsUntil` are a reader's own, the rest read-ahead. The caller has cut what would
    /// bring any of them late (`cutLateTransfers`); what any transfer still brings is joined.
    mutating func planTransfers(covering bytes: Range<UInt64>, readerNeedsUntil: UInt64,
                                hostBytesPerSecond: Double?) -> [Action] {
        if streamOnly {
            return planStream()
        }
        var actions: [Action] = []
        let request = requestBytes(hostBytesPerSecond: hostBytesPerSecond)
        // Read-ahead (bytes the reader does not need yet) stops at `maxReaderRequests` in flight;
        // the reader's next reads ask for the rest as those end.
        var readerRequests = transfers.values.count { $0.startedAs.isForReader && !$0.wholeBody }
        let seek = pageAligned(bytes).lowerBound
        requesting: for var piece in missingPieces(of: layout.byteRange(ofBlocks: layout.blocks(covering: bytes)), allInFlight: true) {
            // A reader that lands deep inside a missing block (a seek) should not wait for the
            // block's start to arrive first: its request starts at its own bytes, and a second
            // one brings the head of the block so that the block becomes whole.
            if readerNeedsUntil > bytes.lowerBound, piece.contains(seek), seek - piece.lowerBound >= Self.seekSplitThreshold {
                let head = piece.lowerBound..<seek
                actions.append(startTransfer(bytes: head, blocks: layout.blocks(covering: head)))
                readerRequests += 1
                piece = seek..<piece.upperBound
            }
            for part in requestParts(of: piece, requestBytes: request) {
                // A request that brings none of the reader's own bytes is read-ahead.
                let isReadAhead = part.lowerBound >= readerNeedsUntil
                if isReadAhead, readerRequests >= policy.maxReaderRequests { break requesting }
                actions.append(startTransfer(bytes: part, blocks: layout.blocks(covering: part), readAhead: isReadAhead))
                readerRequests += 1
            }
        }
        return actions
    }

    /// A reader's request ended: the read-ahead its file's latest sequential read asked for and
    /// the cap held back goes out now. The reader's next read may be a whole request's time
    /// away (it waits on bytes still coming), and meanwhile the connection just freed would
    /// stand idle. Nothing past that read's window: a reader that stopped gets no more.
    mutating func continueReadAhead(now: ContinuousClock.Instant) -> [Action] {
        guard let reader = sequentialReader, openHandles > 0, !complete, !streamOnly, invalidated == nil,
              now - reader.at < policy.readerZoneIdle,
              let end = readAheadEnd(after: reader.end, window: reader.window) else { return [] }
        // None of the bytes are the reader's own: only background work in the window is cut.
        let cut = cutLateBackgroundWork(in: layout.byteRange(ofBlocks: layout.blocks(covering: reader.end..<end)),
                                        now: now, hostBytesPerSecond: reader.hostBytesPerSecond)
        var actions = cut.actions + planTransfers(covering: reader.end..<end, readerNeedsUntil: reader.end,
                                                  hostBytesPerSecond: reader.hostBytesPerSecond)
        if cut.cutAny { actions += refetchForOrphanedWaiters() }
        return actions
    }

    /// `piece` in requests of about `requestBytes`: on a fast link, runs of whole blocks as many
    /// as fit in one (a piece that starts inside a block ends its first at a block's edge); on
    /// a slow one, each block in equal parts of whole pages, where each is another connection's
    /// worth of speed and a reader's first bytes come a part's time after its request instead
    /// of a block's.
    func requestParts(of piece: Range<UInt64>, requestBytes: UInt64) -> [Range<UInt64>] {
        let blockSize = layout.blockSize
        let blocksPerRequest = max(1, requestBytes / blockSize)
        var parts: [Range<UInt64>] = []
        var cursor = piece.lowerBound
        while cursor < piece.upperBound {
            let blockStart = cursor - cursor % blockSize
            if requestBytes >= blockSize {
                let end = min(piece.upperBound, blockStart + blocksPerRequest * blockSize)
                parts.append(cursor..<end)
                cursor = end
                continue
            }
            let blockPart = cursor..<min(piece.upperBound, blockStart + blockSize)
            let length = UInt64(blockPart.count)
            let count = (length + requestBytes - 1) / requestBytes
            let partBytes = max(Self.pageSize, ((length + count - 1) / count + Self.pageSize - 1) & ~(Self.pageSize - 1))
            while cursor < blockPart.upperBound {
                let end = min(blockPart.upperBound, cursor + partBytes)
                parts.append(cursor..<end)
                cursor = end
            }
        }
        return parts
    }

    /// The size of a reader's requests: `requestTime` at the host's recent speed per request,
    /// between `minRequestBytes` (also when the speed is unknown) and `maxRequestBytes`. Short
    /// on a slow link, so that a reader's next bytes are never far behind a request's start
    /// and its read-ahead is many requests at once; on a fast one, few large requests.
    func requestBytes(hostBytesPerSecond: Double?) -> UInt64 {
        let upper = max(policy.minRequestBytes, policy.maxRequestBytes)
        let wanted = (hostBytesPerSecond ?? 0) * policy.requestTime.timeInterval
        guard wanted.isFinite else { return upper }
        return max(UInt64(min(max(wanted, 0), Double(upper))), policy.minRequestBytes, 1)
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
        let transfer = Transfer(bytes: bytes, blocks: blocks, purpose: readAhead ? .readAhead : .reader)
        transfers[id] = transfer
        // Read-ahead no read started itself (`continueReadAhead`) is read-ahead whole.
        return .fetch(id: id, bytes: transfer.bytes, control: transfer.control, readAheadFrom: readAhead ? bytes.lowerBound : nil)
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
        return [.fetch(id: id, bytes: transfer.bytes, control: transfer.control, wholeBody: true)]
    }

    /// Where read-ahead for a sequential reader should stop, or nil when none is due yet.
    /// It waits until more than half the window is free (neither here nor on its way), so the
    /// leading edge moves in large requests (joined with the reader's own) instead of one small
    /// request per read. So a first read of half a block whose block is already on its way (the
    /// head the prefetcher fetched for scanners) asks for nothing more: a tag reader that reads
    /// only the head costs no read-ahead, and a player's read-ahead starts with its second read
    /// (the scan is what the heads are for; docs/benchmarks.md has what exactly half enough
    /// cost the scan and gained a read-through).
    func readAheadEnd(after offset: UInt64, window: UInt64) -> UInt64? {
        guard window > 0, offset < layout.fileSize else { return nil }
        let end = min(layout.fileSize, offset + window)
        // The first byte neither here nor on its way (read-ahead may have asked for a block's
        // first parts only).
        guard let firstOffset = missingPieces(of: layout.byteRange(ofBlocks: layout.blocks(covering: offset..<end)),
                                              allInFlight: true).first?.lowerBound else {
            return nil
        }
        guard firstOffset < offset + window / 2 || end == layout.fileSize else { return nil }
        return end
    }
}

extension FilePlan.Action {
    /// A `.fetch` started by a read that ends at `offset`: its bytes from there on are read-ahead.
    func fetchingAhead(from offset: UInt64) -> Self {
        guard case .fetch(let id, let bytes, let control, let wholeBody, _) = self else { return self }
        return .fetch(id: id, bytes: bytes, control: control, wholeBody: wholeBody, readAheadFrom: offset)
    }
}
