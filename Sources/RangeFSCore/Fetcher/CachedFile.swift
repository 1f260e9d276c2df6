import Foundation
import Logging
import Synchronization

/// Bytes a read may be answered with: they are in `file` at `range`.
public struct ReadyBytes: Sendable {
    public let file: DataFile
    public let range: Range<UInt64>
}

public typealias ReadCompletion = @Sendable (Result<ReadyBytes, FetchError>) -> Void

/// One remote file in the cache: which blocks are on disk, which are on their way, and who
/// waits for what. A read is answered as soon as its own bytes are written — also while the
/// transfer that brings them is still running — and never before.
public final class CachedFile: Sendable {
    public let url: URL
    public let layout: BlockLayout
    public let modified: Date?
    private let headers: [String: String]
    private let dataName: String
    private let environment: FetchEnvironment
    private let events: CachedFileEvents
    private let budget: CacheBudget
    private let state: Mutex<State>

    private struct State {
        /// Blocks whose bytes are written to the data file (maybe not synced yet).
        var available: BlockBitmap
        /// Blocks synced and committed to the database.
        var durable: BlockBitmap
        /// Bytes written so far into blocks that are not whole yet, per block (merged ranges).
        /// A reader whose bytes are here is answered before its block is complete.
        var partial: [Int: [Range<UInt64>]] = [:]
        /// Every block durable and the data file promoted to its final name.
        var complete: Bool
        var transfers: [Int: Transfer] = [:]
        var nextTransferID = 0
        var waiters: [Waiter] = []
        var uncommittedBytes: UInt64 = 0
        var commitScheduled = false
        var dataFile: DataFile?
        var openHandles = 0
        var lastFailure: String?
        /// The server ignores ranges: one stream from the start fills the file.
        var streamOnly: Bool
        var rate = RateMeter()
        /// Set when the remote file changed, or when its bytes do not match the manifest's
        /// sha256 (`rejected`): this version can never be completed or read again.
        var invalidated: String?
        var rejected = false
        /// What the whole file must hash to before it is promoted (the manifest's sha256).
        var expectedSHA256: String?
        var nextWaiterID = 0
        /// Where ranges are asked for, and the validator they must match there.
        var source: FetchSource
        /// Transfers that failed where `source` points, waiting while the manifest URL is asked
        /// again where it leads now (one probe at a time), with the error each one met.
        var awaitingSource: [Int: RemoteError] = [:]
        /// Background work on it stopped at the cache's limits; it goes on once there is room.
        var waitingForSpace = false
    }

    /// A range request in flight; `written` bytes from its start are in the data file.
    private struct Transfer {
        var bytes: Range<UInt64>
        var blocks: Range<Int>
        var urgency = TransferUrgency(.foreground)
        /// A plain GET of the whole file, for servers that ignore ranges.
        var wholeBody = false
        /// Told when the transfer ends (the prefetcher, for its own transfers).
        var onFinish: (@Sendable (Bool) -> Void)?
        var written: UInt64 = 0
        var attempts = 1
        /// How often a failure sent it to ask where the file is now (bounded: no endless loop).
        var sourceLookups = 0
        /// Bytes the budget promised this (background) transfer and that it has not written yet.
        var reserved: UInt64 = 0
        /// Stopped because the cache had no room for its bytes: not a failure.
        var stoppedForSpace = false
        /// When its first byte arrived, to tell how fast it moves.
        var firstByteAt: ContinuousClock.Instant?
        var frontier: UInt64 { bytes.lowerBound + written }

        /// When the transfer is expected to reach `offset`; nil while nothing is known of its speed.
        func expectedArrival(of offset: UInt64, now: ContinuousClock.Instant) -> Duration? {
            guard let firstByteAt, written > 0 else { return nil }
            let elapsed = (now - firstByteAt).timeInterval
            let bytesPerSecond = Double(written) / max(elapsed, 0.001)
            return .seconds(Double(offset &- min(offset, frontier)) / bytesPerSecond)
        }
    }

    private struct Waiter {
        var id: Int
        var bytes: Range<UInt64>
        var completion: ReadCompletion
    }

    /// Work decided under the lock and done after it is released.
    private enum Action {
        case fetch(id: Int, bytes: Range<UInt64>, urgency: TransferUrgency, wholeBody: Bool = false)
        case retry(id: Int, bytes: Range<UInt64>, urgency: TransferUrgency, wholeBody: Bool, after: Duration)
        case notify(@Sendable (Bool) -> Void, Bool)
        case expire(waiter: Int, after: Duration)
        case invalidated
        case rejected
        case rangesIgnored
        /// Ask the manifest URL where the file is now (`sourceFound` decides what follows).
        case findSource
        /// Remember the new source in the database.
        case saveSource(FetchSource)
        /// The cached bytes changed by this much (the catalog keeps the cache within its limits).
        case cachedBytes(Int64)
        case reply(ReadCompletion, Result<ReadyBytes, FetchError>)
        /// The cache has no room for these bytes: the reader gets them from the network, unstored.
        case readThrough(Range<UInt64>, ReadCompletion)
        case commit
    }

    init(record: CachedFileRecord, url: URL, headers: [String: String], expectedSHA256: String? = nil,
         environment: FetchEnvironment, budget: CacheBudget, serverIgnoresRanges: Bool, events: CachedFileEvents) {
        self.url = url
        self.headers = headers
        self.environment = environment
        self.events = events
        self.budget = budget
        dataName = record.dataName
        layout = BlockLayout(fileSize: record.size, blockSize: record.blockSize)
        modified = record.modified.map { Date(timeIntervalSince1970: $0) }
        let stored = BlockBitmap(blockCount: layout.blockCount, serialized: [UInt8](record.bitmap))
        var bitmap = stored ?? BlockBitmap(blockCount: layout.blockCount)
        let directory = environment.directory
        if bitmap.presentCount > 0, access(directory.dataPath(name: dataName, complete: false), F_OK) != 0,
           access(directory.dataPath(name: dataName, complete: true), F_OK) != 0 {
            // A process killed between removing the data (eviction) and updating the record
            // leaves blocks listed whose bytes are gone: they are fetched again, and the file
            // does not pass for complete meanwhile.
            let empty = BlockBitmap(blockCount: layout.blockCount)
            let missing = Int64(min(record.size, UInt64(bitmap.presentCount) * record.blockSize))
            bitmap = empty
            events.cachedBytesChanged(-missing)
            let store = environment.store
            environment.committer.schedule {
                try? store.commitBlocks(url: record.url, bitmap: empty.serialized, state: .remote)
            }
        }
        state = Mutex(State(available: bitmap, durable: bitmap,
                            complete: record.state == .complete && bitmap.isComplete,
                            streamOnly: serverIgnoresRanges, expectedSHA256: expectedSHA256?.lowercased(),
                            source: record.source))
    }

    // MARK: Looking

    public var snapshot: CachedFileSnapshot {
        let now = ContinuousClock.now
        return state.withLock { state in
            CachedFileSnapshot(size: layout.fileSize,
                                      cachedBytes: cachedBytes(of: state.available),
                                      complete: state.complete,
                                      activeTransfers: state.transfers.count,
                                      lastFailure: state.invalidated ?? state.lastFailure,
                                      bytesPerSecond: state.rate.bytesPerSecond(at: now),
                                      waitingForSpace: state.waitingForSpace)
        }
    }

    /// The bytes the blocks of `bitmap` hold (the last block is usually shorter than the rest).
    func cachedBytes(of bitmap: BlockBitmap) -> UInt64 {
        var bytes = UInt64(bitmap.presentCount) * layout.blockSize
        if let last = (0..<layout.blockCount).last, bitmap.contains(last) {
            bytes -= layout.blockSize - UInt64(layout.byteRange(ofBlock: last).count)
        }
        return bytes
    }

    // MARK: Opening and closing

    /// A file handle was opened on this file.
    public func opened() {
        state.withLock { $0.openHandles += 1 }
        let url = url.absoluteString
        let store = environment.store
        environment.committer.schedule {
            try? store.touch(url: url, at: Date())
        }
    }

    /// A file handle was closed; the data file is closed once nothing needs it.
    public func released() {
        state.withLock { state in
            state.openHandles -= 1
            closeIfIdle(&state)
        }
    }

    public var isComplete: Bool {
        state.withLock { $0.complete }
    }

    /// A new read-only descriptor of the complete data file, for the kernel to read from
    /// directly; nil unless the file is complete. Opened under the lock, so it cannot be a
    /// file that is being discarded and fetched again. The caller closes it.
    public func openCompleteData() -> Int32? {
        state.withLock { state in
            guard state.complete else { return nil }
            let descriptor = open(environment.directory.dataPath(name: dataName, complete: true), O_RDONLY | O_CLOEXEC)
            return descriptor >= 0 ? descriptor : nil
        }
    }

    /// True once the finished file failed its sha256 check: it stays failed, and fetches
    /// nothing more, until the catalog replaces it.
    public var isRejected: Bool {
        state.withLock { $0.rejected }
    }

    /// The sha256 the file must match before promotion (lowercase hex), if the manifest gives one.
    public var expectedSHA256: String? {
        state.withLock { $0.expectedSHA256 }
    }

    /// A refreshed manifest gives another sha256: the next promotion checks that one.
    func expect(sha256: String?) {
        state.withLock { $0.expectedSHA256 = sha256?.lowercased() }
    }

    // MARK: Reading

    /// Answers once every byte of `bytes` is in the data file, fetching what is missing
    /// (plus up to `readAhead` bytes after it, for a sequential reader) in as few requests as possible.
    public func read(_ requested: Range<UInt64>, readAhead: UInt64, completion: @escaping ReadCompletion) {
        let bytes = requested.clamped(to: 0..<layout.fileSize)
        var readAhead = readAhead
        switch roomForRead(bytes, readAhead: readAhead) {
        case .store: break
        case .storeWithoutReadAhead: readAhead = 0
        case .readThrough: return readThrough(bytes, completion)
        }
        let actions = state.withLock { state -> [Action] in
            if let reason = state.invalidated {
                let advice = state.rejected ? "" : "; open the file again"
                return [.reply(completion, .failure(FetchError("\(url.redactedForDisplay): \(reason)\(advice)")))]
            }
            let file: DataFile
            do {
                file = try openDataFile(&state)
            } catch {
                return [.reply(completion, .failure(FetchError("\(error)")))]
            }
            if state.complete || bytes.isEmpty {
                return [.reply(completion, .success(ReadyBytes(file: file, range: bytes)))]
            }
            var actions: [Action]
            if readAhead == 0, let sparse = planSparseRead(bytes, in: &state) {
                actions = sparse
            } else {
                let end = readAheadEnd(after: bytes.upperBound, window: readAhead, in: state) ?? bytes.upperBound
                actions = planTransfers(covering: bytes.lowerBound..<end, readerNeedsUntil: bytes.upperBound, in: &state)
            }
            if isAvailable(bytes, in: state) {
                actions.append(.reply(completion, .success(ReadyBytes(file: file, range: bytes))))
            } else {
                let id = state.nextWaiterID
                state.nextWaiterID += 1
                state.waiters.append(Waiter(id: id, bytes: bytes, completion: completion))
                // A reader now waits on these transfers: none of them may be held back any more.
                let blocks = layout.blocks(covering: bytes)
                for transfer in state.transfers.values where transfer.blocks.overlaps(blocks) {
                    transfer.urgency.raise()
                }
                actions.append(.expire(waiter: id, after: environment.policy.readDeadline))
            }
            return actions
        }
        perform(actions)
    }

    private enum ReadRoom { case store, storeWithoutReadAhead, readThrough }

    /// Whether the cache has room for the blocks a read would store (and its read-ahead),
    /// after evicting least recently used files nobody has open if it has not. Outside the
    /// lock: eviction takes other files' locks.
    private func roomForRead(_ bytes: Range<UInt64>, readAhead: UInt64) -> ReadRoom {
        let missing = state.withLock { state -> UInt64 in
            guard !state.complete, !state.streamOnly, state.invalidated == nil, !bytes.isEmpty,
                  !isAvailable(bytes, in: state) else { return 0 }
            return UInt64(layout.byteRange(ofBlocks: layout.blocks(covering: bytes)).count)
        }
        guard missing > 0 else { return .store }
        if !budget.hasRoom(forRead: missing + readAhead) { events.makeRoom(missing + readAhead) }
        if budget.hasRoom(forRead: missing + readAhead) {
            budget.storing()
            return .store
        }
        return budget.hasRoom(forRead: missing) ? .storeWithoutReadAhead : .readThrough
    }

    /// Serves `bytes` from the network without storing them (the cache has no room).
    private func readThrough(_ bytes: Range<UInt64>, _ completion: @escaping ReadCompletion) {
        let source = state.withLock { $0.source }
        let reader = ReadThrough(url: source.requestURL(origin: url), headers: source.requestHeaders(headers, origin: url),
                                 fileSize: layout.fileSize, validator: source.validator, environment: environment, budget: budget)
        reader.fetch(bytes, changed: { [self] why in
            perform(state.withLock { state in invalidate(because: why, in: &state) })
        }, completion: completion)
    }

    /// Background work on this file stopped (or may go on) for lack of room, as the
    /// prefetcher found; a complete file waits for nothing.
    public func setWaitingForSpace(_ waiting: Bool) {
        state.withLock { state in state.waitingForSpace = waiting && !state.complete }
    }

    /// True when every byte is in the data file: in an available block, or already written
    /// into a block that is still arriving.
    private func isAvailable(_ bytes: Range<UInt64>, in state: State) -> Bool {
        for block in layout.blocks(covering: bytes) where !state.available.contains(block) {
            let needed = bytes.clamped(to: layout.byteRange(ofBlock: block))
            let written = state.partial[block] ?? []
            if !written.contains(where: { $0.lowerBound <= needed.lowerBound && needed.upperBound <= $0.upperBound }) {
                return false
            }
        }
        return true
    }

    /// Records bytes just written; returns how many bytes of blocks became whole.
    private func recordWritten(_ bytes: Range<UInt64>, in state: inout State) -> UInt64 {
        var completed: UInt64 = 0
        for block in layout.blocks(covering: bytes) where !state.available.contains(block) {
            let blockBytes = layout.byteRange(ofBlock: block)
            let merged = ((state.partial[block] ?? []) + [bytes.clamped(to: blockBytes)]).merged()
            if merged.count == 1, merged[0] == blockBytes {
                state.available.insert(block)
                state.partial[block] = nil
                completed += UInt64(blockBytes.count)
            } else {
                state.partial[block] = merged
            }
        }
        return completed
    }

    private func isRequested(_ block: Int, in state: State) -> Bool {
        state.transfers.values.contains { $0.blocks.contains(block) }
    }

    /// A reader joins a transfer that brings its block if that transfer will get there soon:
    /// it is close, or it moves fast enough. Waiting for a long transfer to crawl there on a slow
    /// link would cost more than asking for the block again.
    private func isComingSoon(_ block: Int, in state: State) -> Bool {
        let start = layout.byteRange(ofBlock: block).lowerBound
        let distance = environment.policy.joinDistanceBlocks * layout.blockSize
        let now = ContinuousClock.now
        return state.transfers.values.contains { transfer in
            guard transfer.blocks.contains(block) else { return false }
            if start <= transfer.frontier + distance { return true }
            guard let arrival = transfer.expectedArrival(of: start, now: now) else { return true }
            return arrival <= environment.policy.joinWaitLimit
        }
    }

    /// Starts requests for the blocks of `bytes` that are neither here nor on their way,
    /// one request per run of adjacent blocks (split at `maxRequestBytes`).
    /// Blocks that start before `readerNeedsUntil` are a reader's own: those join only a
    /// transfer that is close (`isComingSoon`); the rest join any transfer that brings them.
    private func planTransfers(covering bytes: Range<UInt64>, readerNeedsUntil: UInt64 = 0,
                               in state: inout State) -> [Action] {
        if state.streamOnly {
            return planStream(in: &state)
        }
        let maxBlocks = max(1, Int(environment.policy.maxRequestBytes / layout.blockSize))
        var actions: [Action] = []
        var runStart: Int?
        let blocks = layout.blocks(covering: bytes)
        for block in blocks.lowerBound...blocks.upperBound {
            let onItsWay = block < blocks.upperBound
                && (layout.byteRange(ofBlock: block).lowerBound < readerNeedsUntil
                    ? isComingSoon(block, in: state) : isRequested(block, in: state))
            let wanted = block < blocks.upperBound && !state.available.contains(block) && !onItsWay
            if wanted, runStart == nil { runStart = block }
            guard let start = runStart else { continue }
            if !wanted || block + 1 - start == maxBlocks {
                let run = start..<(wanted ? block + 1 : block)
                runStart = nil
                for var piece in missingPieces(of: layout.byteRange(ofBlocks: run), in: state) {
                    // A reader that lands deep inside a missing block (a seek) should not wait for
                    // the block's start to arrive first: its request starts at its own bytes, and a
                    // second one brings the head of the block so that the block becomes whole.
                    let seek = pageAligned(bytes).lowerBound
                    if readerNeedsUntil > 0, piece.contains(seek), seek - piece.lowerBound >= Self.seekSplitThreshold {
                        let head = piece.lowerBound..<seek
                        actions.append(startTransfer(bytes: head, blocks: layout.blocks(covering: head), in: &state))
                        piece = seek..<piece.upperBound
                    }
                    actions.append(startTransfer(bytes: piece, blocks: layout.blocks(covering: piece), in: &state))
                }
            }
        }
        return actions
    }

    /// The parts of `bytes` still to ask for: not available blocks, not the bytes already
    /// written into unfinished blocks, nor those a page-sized read is bringing (nobody joins
    /// those, see `planSparseRead`), nor, with `allInFlight`, anything any transfer is bringing.
    private func missingPieces(of bytes: Range<UInt64>, in state: State, allInFlight: Bool = false) -> [Range<UInt64>] {
        var taken: [Range<UInt64>] = []
        for block in layout.blocks(covering: bytes) {
            if state.available.contains(block) {
                taken.append(layout.byteRange(ofBlock: block))
            } else {
                taken += state.partial[block] ?? []
            }
        }
        for transfer in state.transfers.values where allInFlight || transfer.blocks.isEmpty {
            taken.append(transfer.frontier..<transfer.bytes.upperBound)
        }
        return bytes.subtracting(taken)
    }

    /// A reader that jumped (no read-ahead) into blocks that are not on their way gets only its
    /// own pages: random 4 KiB reads would otherwise cost a whole block each. Once a block holds
    /// a sixteenth of its bytes from such reads, the reader keeps coming back there and the
    /// usual path fetches the rest of the block. Returns nil when the usual path should run.
    private func planSparseRead(_ bytes: Range<UInt64>, in state: inout State) -> [Action]? {
        guard !state.streamOnly, !bytes.isEmpty else { return nil }
        let blocks = layout.blocks(covering: bytes)
        let blockBytes = layout.byteRange(ofBlocks: blocks)
        guard blocks.allSatisfy({ !state.available.contains($0) }),
              !state.transfers.values.contains(where: { !$0.blocks.isEmpty && $0.bytes.overlaps(blockBytes) })
        else { return nil }
        let scattered = blocks.reduce(UInt64(0)) { total, block in
            total + (state.partial[block] ?? []).reduce(0) { $0 + UInt64($1.count) }
        }
        guard scattered < UInt64(blocks.count) * layout.blockSize / 16 else { return nil }
        return missingPieces(of: pageAligned(bytes), in: state).map { startPageTransfer(bytes: $0, in: &state) }
    }

    /// `bytes` widened to whole pages (the last one stops at the end of the file).
    private func pageAligned(_ bytes: Range<UInt64>) -> Range<UInt64> {
        let start = bytes.lowerBound & ~(Self.pageSize - 1)
        return start..<min(layout.fileSize, (bytes.upperBound + Self.pageSize - 1) & ~(Self.pageSize - 1))
    }

    /// A transfer of a few pages that brings no whole block: other readers of its blocks
    /// do not join it (`isRequested` does not see it), and nobody waits for it but its own.
    private func startPageTransfer(bytes: Range<UInt64>, in state: inout State) -> Action {
        let first = layout.blocks(covering: bytes).lowerBound
        return startTransfer(bytes: bytes, blocks: first..<first, in: &state)
    }

    private static let pageSize: UInt64 = 4096
    /// How deep into a missing block a read must land before its block is fetched in two parts.
    private static let seekSplitThreshold: UInt64 = 32 * 1024

    private func startTransfer(bytes: Range<UInt64>, blocks: Range<Int>, in state: inout State) -> Action {
        let id = state.nextTransferID
        state.nextTransferID += 1
        let transfer = Transfer(bytes: bytes, blocks: blocks)
        state.transfers[id] = transfer
        return .fetch(id: id, bytes: transfer.bytes, urgency: transfer.urgency)
    }

    /// For a server that ignores ranges: one GET of the whole file, unless one is running.
    /// Readers are answered as the stream passes their bytes.
    private func planStream(in state: inout State) -> [Action] {
        guard !state.transfers.values.contains(where: \.wholeBody), !state.available.isComplete,
              state.invalidated == nil else { return [] }
        let id = state.nextTransferID
        state.nextTransferID += 1
        let all = 0..<layout.blockCount
        let transfer = Transfer(bytes: layout.byteRange(ofBlocks: all), blocks: all, wholeBody: true)
        state.transfers[id] = transfer
        return [.fetch(id: id, bytes: transfer.bytes, urgency: transfer.urgency, wholeBody: true)]
    }

    /// Where read-ahead for a sequential reader should stop, or nil when none is due yet.
    /// It waits until half the window is free, so the leading edge moves in large requests
    /// (joined with the reader's own) instead of one small request per read.
    private func readAheadEnd(after offset: UInt64, window: UInt64, in state: State) -> UInt64? {
        guard window > 0, offset < layout.fileSize else { return nil }
        let end = min(layout.fileSize, offset + window)
        let blocks = layout.blocks(covering: offset..<end)
        guard let first = blocks.first(where: { !state.available.contains($0) && !isRequested($0, in: state) }) else {
            return nil
        }
        let firstOffset = layout.byteRange(ofBlock: first).lowerBound
        guard firstOffset < offset + window / 2 || end == layout.fileSize else { return nil }
        return end
    }

    // MARK: Background completion

    /// Starts a background transfer of the next missing blocks nobody is fetching yet (at
    /// most `maxBytes`), and tells `onFinish` when it ends. Returns false when there is nothing
    /// left to start: the file is complete, or every missing block is already on its way.
    public func fetchNextMissing(maxBytes: UInt64, onFinish: @escaping @Sendable (Bool) -> Void) -> Bool {
        let actions = state.withLock { state -> [Action]? in
            guard !state.complete, layout.blockCount > 0, state.invalidated == nil else { return nil }
            if state.streamOnly {
                let actions = planStream(in: &state)
                return actions.isEmpty ? nil : actions
            }
            var start = 0
            while let run = state.available.nextMissingRun(from: start) {
                guard let free = run.first(where: { !isRequested($0, in: state) }) else {
                    start = run.upperBound
                    continue
                }
                do {
                    _ = try openDataFile(&state)
                } catch {
                    environment.logger.error("\(error)")
                    return nil
                }
                let maxBlocks = max(1, Int(maxBytes / layout.blockSize))
                var end = free
                while end < run.upperBound, end - free < maxBlocks, !isRequested(end, in: state) { end += 1 }
                // Only the first gap: what a reader already brought into these blocks is not
                // asked for again, and the next call takes the next gap.
                guard let piece = missingPieces(of: layout.byteRange(ofBlocks: free..<end), in: state, allInFlight: true).first else {
                    start = end
                    continue
                }
                // Background work never digs below the floor: it waits for room instead.
                guard budget.reserve(UInt64(piece.count)) else {
                    state.waitingForSpace = true
                    return nil
                }
                state.waitingForSpace = false
                let id = state.nextTransferID
                state.nextTransferID += 1
                var transfer = Transfer(bytes: piece, blocks: layout.blocks(covering: piece),
                                        urgency: TransferUrgency(.background), onFinish: onFinish)
                transfer.reserved = UInt64(piece.count)
                state.transfers[id] = transfer
                return [.fetch(id: id, bytes: transfer.bytes, urgency: transfer.urgency)]
            }
            return nil
        }
        guard let actions else { return false }
        perform(actions)
        return true
    }

    // MARK: Transfers

    private func perform(_ actions: [Action]) {
        for action in actions {
            switch action {
            case .fetch(let id, let bytes, let urgency, let wholeBody):
                startFetch(id: id, bytes: bytes, urgency: urgency, wholeBody: wholeBody)
            case .retry(let id, let bytes, let urgency, let wholeBody, let delay):
                DispatchQueue.global().asyncAfter(deadline: .now() + delay.timeInterval) { [self] in
                    startFetch(id: id, bytes: bytes, urgency: urgency, wholeBody: wholeBody)
                }
            case .expire(let waiter, let delay):
                DispatchQueue.global().asyncAfter(deadline: .now() + delay.timeInterval) { [self] in
                    expire(waiter: waiter)
                }
            case .invalidated:
                events.invalidated(self)
            case .rejected:
                events.rejected(self)
            case .rangesIgnored:
                events.rangesIgnored(self)
            case .findSource:
                environment.client.probe(url: url, headers: headers) { [self] result in
                    sourceFound(result)
                }
            case .saveSource(let source):
                let store = environment.store
                let key = url.absoluteString
                environment.committer.schedule { try? store.updateSource(url: key, source) }
            case .cachedBytes(let delta):
                events.cachedBytesChanged(delta)
            case .notify(let observer, let succeeded):
                observer(succeeded)
            case .reply(let completion, let result):
                completion(result)
            case .readThrough(let bytes, let completion):
                readThrough(bytes, completion)
            case .commit:
                environment.committer.schedule { [self] in commit() }
            }
        }
    }

    private func startFetch(id: Int, bytes: Range<UInt64>, urgency: TransferUrgency, wholeBody: Bool) {
        let source = state.withLock { $0.source }
        let request = RangeRequest(url: source.requestURL(origin: url), headers: source.requestHeaders(headers, origin: url),
                                   range: bytes, expectedSize: layout.fileSize, validator: source.validator, urgency: urgency,
                                   maxBytesPerSecond: urgency.priority == .background ? environment.policy.backgroundBytesPerSecond : nil,
                                   wholeBody: wholeBody)
        environment.client.fetch(request, sink: { [self] data, offset in
            receive(transfer: id, data, at: offset)
        }, completion: { [self] result in
            finished(transfer: id, result)
        })
    }

    /// Stores bytes as they arrive and answers every read they complete.
    private func receive(transfer id: Int, _ data: UnsafeRawBufferPointer, at offset: UInt64) -> Bool {
        let count = UInt64(data.count)
        guard let target = state.withLock({ state -> (file: DataFile, promised: UInt64)? in
            guard let file = state.dataFile else { return nil }
            let promised = min(state.transfers[id]?.reserved ?? 0, count)
            state.transfers[id]?.reserved -= promised
            return (file, promised)
        }) else { return false }
        let (file, promised) = target
        // Nothing is written below the floor, also when another program filled the disk meanwhile.
        guard budget.claim(count, reservedPart: promised) else { return stopForSpace(transfer: id) }
        do {
            try file.write(data, at: offset)
        } catch {
            if CacheBudget.isOutOfSpace(error) { return stopForSpace(transfer: id) }
            environment.logger.error("\(error)")
            state.withLock { $0.lastFailure = "\(error)" }
            return false
        }
        let actions = state.withLock { state -> [Action]? in
            guard var transfer = state.transfers[id], transfer.frontier == offset else { return nil }
            transfer.written += UInt64(data.count)
            let now = ContinuousClock.now
            if transfer.firstByteAt == nil { transfer.firstByteAt = now }
            state.rate.record(data.count, at: now)
            state.transfers[id] = transfer
            let added = recordWritten(offset..<(offset + UInt64(data.count)), in: &state)
            state.uncommittedBytes += added
            var actions = answerWaiters(in: &state, overlapping: transfer.bytes)
            if added > 0 { actions.append(.cachedBytes(Int64(added))) }
            if state.uncommittedBytes >= environment.policy.commitIntervalBytes, !state.commitScheduled {
                state.commitScheduled = true
                actions.append(.commit)
            }
            return actions
        }
        guard let actions else { return false }
        perform(actions)
        return true
    }

    /// Ends a transfer whose bytes the cache has no room for (its client sees a refusing sink).
    private func stopForSpace(transfer id: Int) -> Bool {
        state.withLock { $0.transfers[id]?.stoppedForSpace = true }
        return false
    }

    /// A transfer stopped for lack of room: nothing failed. Its readers get their bytes from the
    /// network unstored; background work on the file waits for space.
    private func endedForSpace(_ transfer: Transfer, id: Int, in state: inout State) -> [Action] {
        state.transfers[id] = nil
        budget.release(transfer.reserved)
        var actions = answerWaiters(in: &state, overlapping: transfer.bytes)
        actions += readThroughOrphanedWaiters(in: &state)
        if let observer = transfer.onFinish {
            state.waitingForSpace = true
            actions.append(.notify(observer, true))
        }
        if state.uncommittedBytes > 0, !state.commitScheduled, state.transfers.isEmpty {
            state.commitScheduled = true
            actions.append(.commit)
        }
        return actions
    }

    /// Readers waiting for bytes that no transfer brings any more get them from the network
    /// without storing (the cache had no room to keep them).
    private func readThroughOrphanedWaiters(in state: inout State) -> [Action] {
        takeOrphanedWaiters(in: &state).map { .readThrough($0.bytes, $0.completion) }
    }

    private func finished(transfer id: Int, _ result: Result<Void, RemoteError>) {
        let actions = state.withLock { state -> [Action] in
            guard var transfer = state.transfers[id] else { return [] }
            if transfer.stoppedForSpace { return endedForSpace(transfer, id: id, in: &state) }
            var actions: [Action] = []
            var ended = true
            switch result {
            case .success:
                state.transfers[id] = nil
                budget.release(transfer.reserved)
                state.lastFailure = nil
            case .failure(let error):
                let remainder = transfer.frontier..<transfer.bytes.upperBound
                if !remainder.isEmpty, shouldFindSource(after: error, of: transfer, in: state) {
                    // Kept in `transfers`, so its readers keep waiting for it.
                    transfer.sourceLookups += 1
                    state.transfers[id] = transfer
                    if state.awaitingSource.isEmpty { actions.append(.findSource) }
                    state.awaitingSource[id] = error
                    ended = false
                } else if let delay = retryDelay(after: error, attempts: transfer.attempts), !remainder.isEmpty {
                    transfer.attempts += 1
                    // A stream without ranges can only start over; its bytes so far are kept.
                    if transfer.wholeBody { transfer.written = 0 }
                    transfer.firstByteAt = nil
                    state.transfers[id] = transfer
                    let retried = transfer.wholeBody ? transfer.bytes : remainder
                    environment.logger.warning("GET \(url.redactedForDisplay) bytes \(retried.lowerBound)-\(retried.upperBound - 1): \(error); retry \(transfer.attempts - 1) in \(delay)")
                    actions.append(.retry(id: id, bytes: retried, urgency: transfer.urgency,
                                          wholeBody: transfer.wholeBody, after: delay))
                    ended = false
                } else {
                    state.transfers[id] = nil
                    budget.release(transfer.reserved)
                    actions += handleFinalFailure(error, of: remainder, in: &state)
                }
            }
            actions += answerWaiters(in: &state, overlapping: transfer.bytes)
            var unmounting = false
            if case .failure(.cancelled) = result { unmounting = true }
            if !unmounting {
                actions += refetchForOrphanedWaiters(in: &state)
            }
            if ended, let observer = transfer.onFinish {
                actions.append(.notify(observer, result.isSuccess))
            }
            if state.uncommittedBytes > 0, !state.commitScheduled, state.transfers.isEmpty || state.uncommittedBytes >= environment.policy.commitIntervalBytes {
                state.commitScheduled = true
                actions.append(.commit)
            }
            return actions
        }
        perform(actions)
    }

    /// Whether a failed transfer should first ask the manifest URL where the file is now: a
    /// redirect led to another copy, or the place a redirect once led to no longer answers
    /// (a mirror gone). Twice at most per transfer.
    private func shouldFindSource(after error: RemoteError, of transfer: Transfer, in state: State) -> Bool {
        guard state.invalidated == nil, transfer.sourceLookups < 2 else { return false }
        switch error {
        case .servedElsewhere:
            return true
        case .changed, .cancelled, .rangesNotSupported, .localStorage:
            return false
        case .status, .transport, .refused, .protocolViolation:
            // Transient trouble is retried where it is first; a final one leaves that mirror.
            return state.source.location != nil && retryDelay(after: error, attempts: transfer.attempts) == nil
        }
    }

    /// The manifest URL said where the file is now: carry on there when it holds the same
    /// version (another mirror of the same size), start over when the file really changed.
    private func sourceFound(_ result: Result<RemoteFileInfo, RemoteError>) {
        let actions = state.withLock { state -> [Action] in
            let waiting = state.awaitingSource
            state.awaitingSource = [:]
            var actions: [Action] = []
            let verdict: FetchSource.Verdict
            switch result {
            case .success(let info):
                verdict = state.source.verdict(on: info, probedURL: url, origin: url, size: layout.fileSize)
            case .failure(let error):
                // Nowhere to go: each transfer fails with what it met.
                environment.logger.warning("\(url.redactedForDisplay): cannot find where it is served now: \(error)")
                verdict = .same
            }
            switch verdict {
            case .changed(let why):
                for id in waiting.keys { actions += endTransfer(id, succeeded: false, in: &state) }
                return actions + invalidate(because: why, in: &state)
            case .moved(let source):
                environment.logger.notice("\(url.redactedForDisplay) is served from \(source.location?.redactedForDisplay ?? url.redactedForDisplay) now (\(waiting.values.first.map { "\($0)" } ?? "moved"))")
                state.source = source
                actions.append(.saveSource(source))
            case .same:
                break
            }
            for (id, error) in waiting.sorted(by: { $0.key < $1.key }) {
                guard var transfer = state.transfers[id] else { continue }
                let remainder = transfer.frontier..<transfer.bytes.upperBound
                let stillThere: Bool
                if case .moved = verdict { stillThere = false } else { stillThere = true }
                if stillThere, case .failure = result {
                    actions += endTransfer(id, succeeded: false, in: &state)
                    actions += handleFinalFailure(error, of: remainder, in: &state)
                    continue
                }
                if stillThere, case .servedElsewhere = error, transfer.sourceLookups >= 2 {
                    actions += endTransfer(id, succeeded: false, in: &state)
                    actions += handleFinalFailure(error, of: remainder, in: &state)
                    continue
                }
                transfer.attempts = 1
                if transfer.wholeBody { transfer.written = 0 }
                transfer.firstByteAt = nil
                state.transfers[id] = transfer
                let retried = transfer.wholeBody ? transfer.bytes : remainder
                actions.append(.retry(id: id, bytes: retried, urgency: transfer.urgency,
                                      wholeBody: transfer.wholeBody, after: .zero))
            }
            return actions
        }
        perform(actions)
    }

    /// Forgets a transfer that will not go on, telling its observer.
    private func endTransfer(_ id: Int, succeeded: Bool, in state: inout State) -> [Action] {
        guard let transfer = state.transfers.removeValue(forKey: id) else { return [] }
        return transfer.onFinish.map { [.notify($0, succeeded)] } ?? []
    }

    /// How long to wait before trying again, or nil when the error is final or the attempts are spent.
    /// A `Retry-After` longer than the backoff is honoured, up to `maxRetryAfter`.
    private func retryDelay(after error: RemoteError, attempts: Int) -> Duration? {
        let policy = environment.policy
        guard error.isTransient, attempts < policy.maxAttempts else { return nil }
        let backoff = policy.retryDelay(attempt: attempts + 1)
        guard let asked = error.retryAfter else { return backoff }
        return asked <= policy.maxRetryAfter ? max(backoff, asked) : nil
    }

    private func handleFinalFailure(_ error: RemoteError, of remainder: Range<UInt64>, in state: inout State) -> [Action] {
        // This version was already given up (changed or rejected) and said so once.
        if let reason = state.invalidated {
            return failWaiters(in: &state, overlapping: remainder, error: FetchError("\(url.redactedForDisplay): \(reason)"))
        }
        switch error {
        case .cancelled:
            return failWaiters(in: &state, overlapping: remainder, error: FetchError("\(url.redactedForDisplay): unmounting"))
        case .rangesNotSupported:
            // Nothing was written from that reply. From now on one stream fills the file; its
            // readers wait for the stream (another transfer may have started it already).
            guard !state.streamOnly else { return planStream(in: &state) }
            environment.logger.warning("\(url.redactedForDisplay): the server ignores ranges; reading the file as one stream")
            state.streamOnly = true
            return planStream(in: &state) + [.rangesIgnored]
        case .changed(let why):
            return invalidate(because: why, in: &state)
        default:
            environment.logger.error("GET \(url.redactedForDisplay) bytes \(remainder.lowerBound)-\(remainder.upperBound &- 1) failed: \(error)")
            state.lastFailure = error.description
            return failWaiters(in: &state, overlapping: remainder, error: FetchError("\(url.redactedForDisplay): \(error)"))
        }
    }

    /// This version of the file is gone from the server: fail its readers, forget its data.
    private func invalidate(because why: String, in state: inout State) -> [Action] {
        guard state.invalidated == nil else { return [] }
        environment.logger.error("\(url.redactedForDisplay) changed on the server (\(why)); its cached data is discarded and it starts over")
        state.invalidated = "remote file changed (\(why))"
        state.lastFailure = state.invalidated
        let failure = FetchError("\(url.redactedForDisplay): remote file changed; open the file again")
        // The catalog forgets this version before its readers hear of the change: a reader that
        // opens the file again at once must find the new version, not this one.
        var actions: [Action] = [.cachedBytes(-Int64(cachedBytes(of: state.available))), .invalidated]
        actions += failWaiters(in: &state, overlapping: 0..<UInt64.max, error: failure, evenIfAvailable: true)
        return actions
    }

    /// Where `rangefs verify` asks about this file: the place its ranges come from.
    public var verificationRequest: (url: URL, headers: [String: String]) {
        let source = state.withLock { $0.source }
        return (source.requestURL(origin: url), source.requestHeaders(headers, origin: url))
    }

    /// Compares the cached version with what the server says now (`rangefs verify`, which
    /// probed `verificationRequest.url`); a different size, or another validator from the same
    /// place, discards this version. Returns why it differs, or nil.
    func verify(against info: RemoteFileInfo, probedURL: URL) -> String? {
        let actions = state.withLock { state -> (String?, [Action]) in
            switch state.source.verdict(on: info, probedURL: probedURL, origin: url, size: layout.fileSize) {
            case .same:
                return (nil, [])
            case .moved(let source):
                state.source = source
                return (nil, [.saveSource(source)])
            case .changed(let why):
                // A rejected version is unreadable already: the catalog only has to forget it, so
                // that the server's new version is fetched.
                return (why, state.rejected ? [.invalidated] : invalidate(because: why, in: &state))
            }
        }
        perform(actions.1)
        return actions.0
    }

    /// A read that waited past the deadline fails rather than hang.
    private func expire(waiter id: Int) {
        let completion = state.withLock { state -> ReadCompletion? in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return state.waiters.remove(at: index).completion
        }
        guard let completion else { return }
        environment.logger.error("read of \(url.redactedForDisplay) timed out after \(environment.policy.readDeadline)")
        completion(.failure(FetchError("\(url.redactedForDisplay): timed out")))
    }

    private func answerWaiters(in state: inout State, overlapping bytes: Range<UInt64>) -> [Action] {
        guard let file = state.dataFile else { return [] }
        var actions: [Action] = []
        var waiting: [Waiter] = []
        for waiter in state.waiters {
            if waiter.bytes.overlaps(bytes), isAvailable(waiter.bytes, in: state) {
                actions.append(.reply(waiter.completion, .success(ReadyBytes(file: file, range: waiter.bytes))))
            } else {
                waiting.append(waiter)
            }
        }
        state.waiters = waiting
        return actions
    }

    private func failWaiters(in state: inout State, overlapping bytes: Range<UInt64>, error: FetchError,
                             evenIfAvailable: Bool = false) -> [Action] {
        var actions: [Action] = []
        var waiting: [Waiter] = []
        for waiter in state.waiters {
            if waiter.bytes.overlaps(bytes), evenIfAvailable || !isAvailable(waiter.bytes, in: state) {
                actions.append(.reply(waiter.completion, .failure(error)))
            } else {
                waiting.append(waiter)
            }
        }
        state.waiters = waiting
        return actions
    }

    /// Fails the readers waiting for bytes that nothing will bring (after a failed commit:
    /// fetching again into a cache that cannot keep data would not end).
    private func failOrphanedWaiters(in state: inout State, error: FetchError) -> [Action] {
        takeOrphanedWaiters(in: &state).map { .reply($0.completion, .failure(error)) }
    }

    /// Removes and returns the readers waiting for bytes that nothing will bring. Normally
    /// nothing is unbrought for a waiting reader; a failed commit can drop bytes a running
    /// transfer has already passed, and a transfer stopped for lack of room leaves its rest.
    private func takeOrphanedWaiters(in state: inout State) -> [Waiter] {
        var orphaned: [Waiter] = []
        var waiting: [Waiter] = []
        for waiter in state.waiters {
            if missingPieces(of: waiter.bytes, in: state, allInFlight: true).isEmpty {
                waiting.append(waiter)
            } else {
                orphaned.append(waiter)
            }
        }
        state.waiters = waiting
        return orphaned
    }

    /// When a transfer ends, readers still waiting for bytes that nothing will bring ask for
    /// exactly those pages again, so no reader is left to its deadline.
    private func refetchForOrphanedWaiters(in state: inout State) -> [Action] {
        guard state.invalidated == nil, !state.streamOnly else { return [] }
        var actions: [Action] = []
        for waiter in state.waiters {
            for piece in missingPieces(of: pageAligned(waiter.bytes), in: state, allInFlight: true) {
                actions.append(startPageTransfer(bytes: piece, in: &state))
            }
        }
        return actions
    }

    // MARK: Durability

    /// Syncs the data, then commits its blocks; promotes the file once every block is durable.
    private func commit() {
        let (snapshot, durable, file, invalidated) = state.withLock { state in
            state.commitScheduled = false
            state.uncommittedBytes = 0
            return (state.available, state.durable, state.dataFile, state.invalidated != nil)
        }
        guard let file, snapshot != durable, !invalidated else { return }
        do {
            try file.synchronize()
            let complete = snapshot.isComplete
            if complete, let mismatch = try digestMismatch(of: file) {
                return reject(because: mismatch)
            }
            if complete {
                try promote()
                CrashPoint.reached(.promotion)
            }
            try environment.store.commitBlocks(url: url.absoluteString, bitmap: snapshot.serialized,
                                               state: complete ? .complete : .partial)
            state.withLock { state in
                state.durable = snapshot
                state.complete = complete
                if complete { state.waitingForSpace = false }
                closeIfIdle(&state)
            }
            if complete {
                environment.logger.info("complete: \(url.redactedForDisplay) (\(layout.fileSize) bytes)")
            }
        } catch {
            // The data may not be on disk (a full disk shows up here, at writeback): trust only
            // what is durable, so those blocks are fetched again rather than served from a hole.
            environment.logger.error("cannot commit cached blocks of \(url.redactedForDisplay): \(error)")
            let outOfSpace = CacheBudget.isOutOfSpace(error)
            let (dropped, actions) = state.withLock { state -> (UInt64, [Action]) in
                let dropped = cachedBytes(of: state.available) - cachedBytes(of: state.durable)
                state.available = state.durable
                state.partial = [:]
                // Readers whose bytes were just dropped and that no transfer will bring again
                // are answered now: from the network, unstored, when the disk is full (that is
                // no failure of the file); else they fail, as fetching again into a cache that
                // cannot keep data would not end.
                let orphaned: [Action]
                if outOfSpace {
                    state.waitingForSpace = true
                    orphaned = readThroughOrphanedWaiters(in: &state)
                } else {
                    state.lastFailure = "\(error)"
                    orphaned = failOrphanedWaiters(in: &state, error: FetchError("\(url.redactedForDisplay): cannot keep fetched data: \(error)"))
                }
                closeIfIdle(&state)
                return (dropped, orphaned)
            }
            events.cachedBytesChanged(-Int64(dropped))
            perform(actions)
        }
    }

    /// Hashes the finished file when the manifest gives a sha256; returns why it does not
    /// match, or nil. It runs inside `commit()` on the committer's queue: off the read path
    /// (readers go on being answered from the blocks meanwhile), and in line with eviction and
    /// every other commit of this file, so the data cannot be dropped or promoted mid-hash.
    private func digestMismatch(of file: DataFile) throws -> String? {
        guard let expected = state.withLock({ $0.expectedSHA256 }) else { return nil }
        let actual = try file.sha256(size: layout.fileSize)
        return actual == expected ? nil : "sha256 mismatch: expected \(expected), got \(actual)"
    }

    /// The finished file is not what the manifest promised: its readers fail, its data and
    /// blocks are forgotten, and it stays failed (fetching nothing) until the catalog replaces
    /// it — after a refresh with another sha256, or a `verify` that finds a new version.
    private func reject(because reason: String) {
        let actions = state.withLock { state -> [Action] in
            guard state.invalidated == nil else { return [] }
            state.invalidated = reason
            state.rejected = true
            let failure = FetchError("\(url.redactedForDisplay): \(reason)")
            var actions = failWaiters(in: &state, overlapping: 0..<UInt64.max, error: failure, evenIfAvailable: true)
            actions.append(.cachedBytes(-Int64(cachedBytes(of: state.available))))
            discardData(in: &state)
            actions.append(.rejected)
            return actions
        }
        guard !actions.isEmpty else { return }
        environment.logger.error("\(url.redactedForDisplay): \(reason); its cached data is discarded")
        do {
            try environment.store.commitBlocks(url: url.absoluteString, bitmap: emptyBitmap, state: .remote)
            try environment.store.recordFailure(url: url.absoluteString, reason: reason)
        } catch {
            environment.logger.error("cannot record the failure of \(url.redactedForDisplay): \(error)")
        }
        perform(actions)
    }

    /// Moves the finished data file to its final name (the open descriptor follows it).
    private func promote() throws {
        let directory = environment.directory
        let partial = directory.dataPath(name: dataName, complete: false)
        let final = directory.dataPath(name: dataName, complete: true)
        guard rename(partial, final) == 0 || errno == ENOENT else {
            throw CacheError.system("cannot promote \(partial)")
        }
        let folder = open(directory.dataDirectory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folder >= 0 {
            fsync(folder)
            close(folder)
        }
    }

    // MARK: Eviction

    /// Drops every cached block and the data file, unless a reader or a transfer uses the
    /// file. Returns the bytes freed, or nil when the file is busy. Runs on the committer's
    /// queue, so no commit of this file can race with it.
    func evictIfIdle() -> UInt64? {
        state.withLock { state -> UInt64? in
            guard state.openHandles == 0, state.transfers.isEmpty, state.waiters.isEmpty,
                  !state.commitScheduled, state.invalidated == nil else { return nil }
            let freed = cachedBytes(of: state.available)
            discardData(in: &state)
            state.complete = layout.blockCount == 0
            state.uncommittedBytes = 0
            return freed
        }
    }

    /// Forgets every block of this version and removes its data file. Under the lock, so no
    /// read can reopen the old file in between.
    private func discardData(in state: inout State) {
        state.dataFile = nil
        unlink(environment.directory.dataPath(name: dataName, complete: false))
        unlink(environment.directory.dataPath(name: dataName, complete: true))
        state.available = BlockBitmap(blockCount: layout.blockCount)
        state.durable = state.available
        state.partial = [:]
    }

    var emptyBitmap: [UInt8] {
        BlockBitmap(blockCount: layout.blockCount).serialized
    }

    // MARK: Data file

    private func openDataFile(_ state: inout State) throws -> DataFile {
        if let file = state.dataFile { return file }
        let directory = environment.directory
        let partial = directory.dataPath(name: dataName, complete: false)
        let final = directory.dataPath(name: dataName, complete: true)
        // A crash between promotion and its commit leaves the final name with a partial state.
        let path = state.complete || (access(partial, F_OK) != 0 && access(final, F_OK) == 0) ? final : partial
        let existed = access(path, F_OK) == 0
        if !existed, state.durable.presentCount > 0 {
            // The data was removed behind our back: what the bitmap says is no longer true.
            environment.logger.warning("cache data of \(url.redactedForDisplay) is missing; fetching it again")
            events.cachedBytesChanged(-Int64(cachedBytes(of: state.available)))
            state.available = BlockBitmap(blockCount: layout.blockCount)
            state.durable = state.available
            state.partial = [:]
            state.complete = false
            try environment.store.commitBlocks(url: url.absoluteString, bitmap: state.durable.serialized, state: .remote)
            return try openDataFile(&state)
        }
        let file = try DataFile(path: path, size: layout.fileSize)
        state.dataFile = file
        return file
    }

    private func closeIfIdle(_ state: inout State) {
        if state.openHandles == 0, state.transfers.isEmpty, state.waiters.isEmpty, !state.commitScheduled {
            state.dataFile = nil
        }
    }
}

/// What a cached file tells its catalog.
struct CachedFileEvents: Sendable {
    /// The remote file changed: the catalog forgets this version.
    var invalidated: @Sendable (CachedFile) -> Void
    /// Its bytes failed the sha256 check and were dropped: whatever the kernel kept of them must go.
    var rejected: @Sendable (CachedFile) -> Void
    /// Its server ignores ranges: the catalog remembers that for the host.
    var rangesIgnored: @Sendable (CachedFile) -> Void
    /// Its cached bytes grew or shrank by this much.
    var cachedBytesChanged: @Sendable (Int64) -> Void
    /// A read needs room for this many bytes: evict idle files until they fit (or nothing more can go). Returns when done.
    var makeRoom: @Sendable (UInt64) -> Void
}

/// A point-in-time view of a cached file, for status and extended attributes.
public struct CachedFileSnapshot: Sendable {
    public var size: UInt64
    public var cachedBytes: UInt64
    public var complete: Bool
    public var activeTransfers: Int
    public var lastFailure: String?
    public var bytesPerSecond: UInt64
    /// Background work stopped at the cache's limits and goes on when there is room.
    public var waitingForSpace = false

    public var state: CacheState {
        if complete { return .complete }
        if waitingForSpace { return .waitingForSpace }
        if lastFailure != nil, activeTransfers == 0 { return .failed }
        return cachedBytes > 0 ? .partial : .remote
    }
}
