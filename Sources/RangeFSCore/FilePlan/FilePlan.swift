import Foundation
import Logging

// Design note: the file plan, where every decision about one file is made.
//
// - `FilePlan` is a value with no I/O, no lock and no clock: written and durable blocks,
//   transfers in flight, waiting readers, the file's sources. Every event (a read, bytes written,
//   a transfer's end, a mirror found, a commit or its rollback, a remote change) returns the
//   actions to take (`FilePlan.Action`); the shell performs them. Unit tests drive it directly,
//   and `FilePlanModelTests` checks random event sequences against a simple reference model.
// - Reading (`+Reading`): cached bytes are answered at once; missing ones are asked for in
//   several requests at once, sized from the host's recent speed, with read-ahead for a
//   sequential reader. A running transfer that would bring a reader's bytes late is cut where
//   they begin (`Scheduling/FilePlan+Joining`).
// - Sources (`FileSources`, `+Sources`): the file's URL and mirrors, each with its health and its
//   speed (measured over a sample's time as a transfer runs; a short reply's is only a floor
//   beside that); each attempt goes to the usable source that would serve it soonest, a slow mirror's
//   tail is handed to a faster one, and with piece hashes a piece comes from one source, so a
//   bad piece names it (`+Pieces`: a piece's bytes are shown only once its sha-256 matched).
// - Background (`+Background`, `+Heads`): which bytes background work takes next, what it leaves
//   to readers (a sequential reader's zone, a file just opened), and which bytes a file's head
//   and tail are (`HeadTailSizes`).
// - Versions (`+Version`): a file made from a listing's stated size takes its version from its
//   first range reply, and replies to requests sent before that are checked against it.
// - Durability (`+Durability`): when a commit is due and what a failed one rolls back to.
// - Decisions the shell asks before acting (`usablePieces`, `readRoom`, `nextBackgroundStep`,
//   `startAttempt`) live here too, so each is tested without a file or a server.

/// What one cached file knows and decides, with no I/O: which blocks are written and durable,
/// the transfers in flight, the readers waiting. Each event (a read, bytes written, a transfer
/// ending, a commit, a remote change) updates it and returns the `Action`s to take; `CachedFile`
/// performs them after its lock is released. It reads no clock (`now` comes in), opens no file
/// and logs nothing itself, so tests drive it directly.
struct FilePlan {
    let url: URL
    let layout: BlockLayout
    let policy: FetchPolicy

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
    var nextWaiterID = 0
    /// When the oldest bytes written but not yet committed were written; nil when every
    /// written byte is committed or on its way (`commitIfDue`).
    var uncommittedSince: ContinuousClock.Instant?
    /// A commit is on the commit queue: the file is not idle until it has started.
    var commitScheduled = false
    /// A commit waits on the commit queue's clock (`.commitLater`). It does not keep the file
    /// from being idle: it finds nothing to do if the file was evicted or committed meanwhile.
    var commitDeferred = false
    var openHandles = 0
    var lastFailure: String?
    /// The server ignores ranges: one stream from the start fills the file.
    var streamOnly: Bool
    /// Range requests name the version they want (`If-Range`, `If-Match`); false once the
    /// server answered one with the whole body of that same version (`conditionNotHonoured`).
    var sendsCondition = true
    var rate = RateMeter()
    /// Set when the remote file changed (`.remoteChanged`), or when its bytes do not match the
    /// manifest's sha256 (`.rejected`): this version can never be completed or read again.
    var invalidated: FetchError.Reason?
    var rejected: Bool {
        if case .rejected = invalidated { return true }
        return false
    }
    /// What the whole file must hash to before it is promoted (the manifest's sha256).
    var expectedSHA256: String?
    /// Where the file is served from: the manifest URL and its mirrors, each with its own
    /// validator and health (`FilePlan+Sources`).
    var sources: FileSources
    /// The source the cache record describes (the manifest URL's, unless a mirror answered the
    /// size probe): where ranges go for a file with one URL, and what the database remembers.
    var source: FetchSource {
        get { sources.recordedSource }
        set { sources.recordedSource = newValue }
    }
    /// Transfers that failed where `source` points, waiting while the manifest URL is asked
    /// again where it leads now (one probe at a time), with the error each one met.
    var awaitingSource: [Int: RemoteError] = [:]
    /// Background work on it stopped at the cache's limits; it goes on once there is room.
    var waitingForSpace = false
    /// The latest sequential read (one with read-ahead): background work leaves the blocks past
    /// it to read-ahead for a while (`readerZone`), and the read-ahead it asked for and the cap
    /// held back goes out as its requests end (`continueReadAhead`).
    var sequentialReader: SequentialRead?
    /// When a handle was last opened, and whether a read came since (`isNewlyOpened`).
    var openedAt: ContinuousClock.Instant?
    var readSinceOpen = false
    /// The SHA-256 of each piece, when the manifest gives them: a piece's bytes reach readers
    /// and the bitmap only once they match (`FilePlan+Pieces`).
    let pieces: PieceHashes?
    /// Pieces hashed and found right whose blocks are not all available yet (a block waits for
    /// every piece it holds part of).
    var verifiedPieces: Set<Int> = []
    /// Pieces being hashed, each with the token its answer must bring (an answer about bytes
    /// forgotten since is ignored).
    var verifyingPieces: [Int: Int] = [:]
    var nextVerificationToken = 0
    /// The sources that wrote into each piece not checked yet: a bad piece is theirs.
    var pieceWriters: [Int: Set<Int>] = [:]
    /// A commit is between `commitStarting` and its end: blocks forgotten meanwhile (a dropped
    /// source's, a bad piece's) are taken out of what it made durable.
    var committing = false
    var forgottenWhileCommitting: [Int] = []

    init(url: URL, layout: BlockLayout, policy: FetchPolicy, blocks: BlockBitmap, complete: Bool,
         streamOnly: Bool, expectedSHA256: String?, source: FetchSource, mirrors: [URL] = [],
         pieces: PieceHashes? = nil) {
        self.url = url
        self.layout = layout
        self.policy = policy
        available = blocks
        durable = blocks
        self.complete = complete
        self.streamOnly = streamOnly
        self.expectedSHA256 = expectedSHA256?.lowercased()
        sources = FileSources(origin: url, mirrors: mirrors, stored: source)
        self.pieces = pieces
    }

    /// The file's URL as logs and errors show it (no credentials).
    var name: String { url.redactedForDisplay }

    /// A range request in flight; `written` bytes from its start are in the data file.
    struct Transfer {
        var bytes: Range<UInt64>
        /// The blocks it brings bytes of (whole, or in parts where a slow link's requests split
        /// a block); empty for a few pages that complete no block (nobody joins those).
        var blocks: Range<Int>
        /// What it was started as: a reader's own bytes or its read-ahead
        /// (`TransferPurpose.isForReader`), else background work. Never changes.
        let startedAs: TransferPurpose
        /// What it is for now, as the plan decided: raised to `.reader` in the step that returns
        /// `.raise` (a read waits on it). The plan's own copy, so that it decides without a lock.
        var purpose: TransferPurpose
        /// The same purpose and the transfer's cut, as the client sees them while it runs. Held
        /// here only to be handed out in actions: the plan never reads or changes it (the shell
        /// does, after the file's lock is released; see `TransferControl`).
        let control: TransferControl
        /// A plain GET of the whole file, for servers that ignore ranges.
        var wholeBody: Bool
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
        /// Cut short at a reader's blocks, which the reader's own request brings: it ends, without
        /// failing, once it reaches `bytes.upperBound` (see `FilePlan+Joining`).
        var cut = false
        /// When the first bytes of its current attempt arrived and `written` then: its speed is
        /// measured from there, as that first burst arrives all at once and would overrate it.
        /// Background work measures afresh from its raise (`raise(at:)`).
        var rateSample: (at: ContinuousClock.Instant, written: UInt64)?
        /// The source its current attempt asks (an index into `sources.all`); nil before it starts.
        var source: Int?
        /// When its current attempt started, and `written` then: what its reply brought (and a mirror's speed, for a
        /// transfer too quick for `rateSample`, is measured from its whole attempt).
        var attemptStarted: (at: ContinuousClock.Instant, written: UInt64)?
        /// Waiting for a source to be found usable (its probe): it starts again when one is.
        var parked = false
        var frontier: UInt64 { bytes.lowerBound + written }

        init(bytes: Range<UInt64>, blocks: Range<Int>, purpose: TransferPurpose = .reader, wholeBody: Bool = false,
             onFinish: (@Sendable (Bool) -> Void)? = nil) {
            self.bytes = bytes
            self.blocks = blocks
            startedAs = purpose
            self.purpose = purpose
            control = TransferControl(purpose)
            self.wholeBody = wholeBody
            self.onFinish = onFinish
        }

        /// How fast its bytes arrive, once they have flowed for the policy's `rateSample` or
        /// `rateSampleBytes` of them have arrived after its first ones; nil before.
        func bytesPerSecond(at now: ContinuousClock.Instant, policy: FetchPolicy) -> Double? {
            guard let rateSample, now > rateSample.at else { return nil }
            let bytes = written - rateSample.written
            guard now - rateSample.at >= policy.rateSample || bytes >= policy.rateSampleBytes else { return nil }
            return Double(bytes) / (now - rateSample.at).timeInterval
        }

        /// How fast the reply of its current attempt brought what it brought, from its first
        /// byte to `now` (its end); nil before a byte came. Its bytes, not its range: one cut
        /// short brings less than it asked for, and counted whole it would make its host look
        /// many times faster (a host keeps its fastest recent measure). From the first byte: the
        /// time a server takes to answer says nothing of how fast its bytes come.
        func replyBytesPerSecond(at now: ContinuousClock.Instant) -> Double? {
            guard let rateSample else { return nil }
            let elapsed = (now - rateSample.at).timeInterval
            let afterFirst = written - rateSample.written
            if elapsed >= Self.shortestMeasure, afterFirst >= Self.leastMeasuredBytes {
                // The first burst arrived at once (over TLS a whole record before its first byte
                // shows): counted, it would overrate the link by its size.
                return Double(afterFirst) / elapsed
            }
            // A reply of a few bytes (a small file, a file's last bytes) takes about as long as
            // any: its speed would be its size per millisecond, nothing of the link's.
            let brought = written - (attemptStarted?.written ?? 0)
            guard brought >= Self.leastMeasuredBytes else { return nil }
            return Double(brought) / max(elapsed, Self.shortestMeasure)
        }

        /// A read waits on it now: it is a reader's. Background work may have stood still until
        /// now (held, quieted): its pace so far is not the pace it moves at from here, and judged
        /// by it the next read would cut it as late (`firstLateByte`). Its speed is measured
        /// afresh from `now`; one that brings nothing from here still shows as late once a
        /// sample's time has passed.
        mutating func raise(at now: ContinuousClock.Instant) {
            if purpose.isBackgroundWork, rateSample != nil { rateSample = (now, written) }
            purpose = .reader
        }

        /// How long its speed is measured over at `now`: from its current attempt's first burst.
        func measuredSpan(at now: ContinuousClock.Instant) -> Duration {
            rateSample.map { max(.zero, now - $0.at) } ?? .zero
        }

        /// Fewer bytes than this after the first burst say too little to measure without it, and
        /// a reply of fewer in all says nothing of its link's speed.
        static let leastMeasuredBytes: UInt64 = 16 * 1024

        /// A reply whose bytes came at once counts as having taken this long: fast, not infinitely so.
        static let shortestMeasure = 0.001
    }

    /// Where a sequential read ended, when, the read-ahead window it asked for and its host's
    /// speed then.
    struct SequentialRead {
        var end: UInt64
        var at: ContinuousClock.Instant
        var window: UInt64
        var hostBytesPerSecond: Double?
    }

    /// A read waiting for its bytes, failed if they are not here by `deadline`.
    struct Waiter {
        var id: Int
        var bytes: Range<UInt64>
        var completion: ReadCompletion
        var deadline: ContinuousClock.Instant
    }

    /// Work decided under the lock and done after it is released.
    enum Action {
        /// `readAheadFrom`: the transfer's bytes from there on are fetched ahead of the reader
        /// whose read started it (the metrics count them apart); nil when all are its own, or
        /// background work's.
        case fetch(id: Int, bytes: Range<UInt64>, control: TransferControl, wholeBody: Bool = false, readAheadFrom: UInt64? = nil)
        case retry(id: Int, bytes: Range<UInt64>, control: TransferControl, wholeBody: Bool, after: Duration)
        /// A reader waits on this transfer now: it is a reader's (`TransferControl.raise`).
        case raise(TransferControl)
        /// This transfer was cut short (`cut`): its request for the rest, if it has to ask
        /// again, ends at this offset.
        case endEarly(TransferControl, at: UInt64)
        case notify(@Sendable (Bool) -> Void, Bool)
        /// A reader waits now: the file's late reads are to be looked for (`ReadDeadlines`).
        case awaitDeadline(waiter: Int)
        case invalidated
        case rejected
        case rangesIgnored
        /// Ask the manifest URL where the file is now (`sourceFound` decides what follows).
        case findSource
        /// Hash the bytes of piece `index` in the data file and compare them with `expected`
        /// (`pieceChecked` takes the answer, with `token`).
        case verifyPiece(Int, Range<UInt64>, expected: [UInt8], token: Int)
        /// Remember the new source in the database.
        case saveSource(FetchSource)
        /// Ask source number `index` (`sources.all`), at its URL, for the file's size and
        /// validator, after `after` (`sourceProbed` takes the answer).
        case probeSource(Int, URL, after: Duration)
        /// The cached bytes changed by this much (the catalog keeps the cache within its limits).
        case cachedBytes(Int64)
        /// Give back what the budget promised a background transfer and it did not write.
        case unreserve(UInt64)
        /// The reader's bytes are in the data file at `range`.
        case answer(ReadCompletion, Range<UInt64>)
        case fail(ReadCompletion, FetchError)
        /// The cache has no room for these bytes: the reader gets them from the network, unstored.
        case readThrough(Range<UInt64>, ReadCompletion)
        case commit
        /// Commit after this long (`commitIfDue`).
        case commitLater(after: Duration)
        case log(Logger.Level, String)
    }

    // MARK: Looking

    func snapshot(now: ContinuousClock.Instant) -> CachedFileSnapshot {
        CachedFileSnapshot(size: layout.fileSize, cachedBytes: cachedBytes(of: available), complete: complete,
                           activeTransfers: transfers.count, lastFailure: invalidated?.description ?? lastFailure,
                           bytesPerSecond: rate.bytesPerSecond(at: now), waitingForSpace: waitingForSpace)
    }

    /// The bytes the blocks of `bitmap` hold (the last block is usually shorter than the rest).
    func cachedBytes(of bitmap: BlockBitmap) -> UInt64 {
        var bytes = UInt64(bitmap.presentCount) * layout.blockSize
        if let last = (0..<layout.blockCount).last, bitmap.contains(last) {
            bytes -= layout.blockSize - UInt64(layout.byteRange(ofBlock: last).count)
        }
        return bytes
    }

    /// True when every byte may be given to a reader: in an available block, or already
    /// written into a block that is still arriving (where the manifest gives piece hashes,
    /// only in pieces that matched theirs).
    func isAvailable(_ bytes: Range<UInt64>) -> Bool {
        isWritten(bytes, checkingPieces: pieces != nil)
    }

    /// True when every byte is in the data file, checked against its piece hash or not.
    func isWritten(_ bytes: Range<UInt64>, checkingPieces: Bool = false) -> Bool {
        for block in layout.blocks(covering: bytes) where !available.contains(block) {
            let needed = bytes.clamped(to: layout.byteRange(ofBlock: block))
            let written = partial[block] ?? []
            if !written.contains(where: { $0.lowerBound <= needed.lowerBound && needed.upperBound <= $0.upperBound }) {
                return false
            }
            if checkingPieces, !piecesVerified(covering: needed) { return false }
        }
        return true
    }

    /// True when some byte is marked as in the data file (written, durable or part of a block):
    /// that file must exist, and is never made anew.
    var holdsWrittenBytes: Bool {
        available.presentCount > 0 || durable.presentCount > 0 || !partial.isEmpty
    }

    /// True when a transfer brings some of the block's bytes.
    func isRequested(_ block: Int) -> Bool {
        transfers.values.contains { $0.blocks.contains(block) }
    }

    /// The parts of `bytes` still to ask for: not available blocks, not the bytes already
    /// written into unfinished blocks, nor those a page-sized read is bringing (nobody joins
    /// those, see `planSparseRead`), nor, with `allInFlight`, anything any transfer is bringing.
    func missingPieces(of bytes: Range<UInt64>, allInFlight: Bool = false) -> [Range<UInt64>] {
        var taken: [Range<UInt64>] = []
        for block in layout.blocks(covering: bytes) {
            if available.contains(block) {
                taken.append(layout.byteRange(ofBlock: block))
            } else {
                taken += partial[block] ?? []
            }
        }
        for transfer in transfers.values where allInFlight || transfer.blocks.isEmpty {
            taken.append(transfer.frontier..<transfer.bytes.upperBound)
        }
        return bytes.subtracting(taken)
    }

    /// `bytes` widened to whole pages (the last one stops at the end of the file).
    func pageAligned(_ bytes: Range<UInt64>) -> Range<UInt64> {
        let start = bytes.lowerBound & ~(Self.pageSize - 1)
        return start..<min(layout.fileSize, (bytes.upperBound + Self.pageSize - 1) & ~(Self.pageSize - 1))
    }

    static let pageSize: UInt64 = 4096
    /// How deep into a missing block a read must land before its block is fetched in two parts.
    static let seekSplitThreshold: UInt64 = 32 * 1024

    /// Nothing reads, writes or commits the data file: it may be closed (or dropped).
    var isIdle: Bool {
        openHandles == 0 && transfers.isEmpty && waiters.isEmpty && !commitScheduled && verifyingPieces.isEmpty
    }
}
