import Foundation
import Logging
import Synchronization

// Design note: the fetcher, each remote file's I/O shell.
//
// - `CachedFile` keeps its file's `FilePlan` and open data file under one lock (`state`) and
//   performs what the plan decides, after the lock is released: the data file, range requests
//   and their bytes (`+Transfers`), commits, the sha-256 check, promotion and eviction
//   (`+Durability`), the background work the prefetcher starts on it (`+Background`). It
//   decides nothing the plan can: a cold read takes the lock once before the network, to ask
//   the plan.
// - `ReadThrough`: reads served without storing, when the cache has no room.
// - `OpenFile`: one open handle, its read-ahead (`ReadAheadWindow`) and, for a handle given no
//   byte yet, the switch to the server's new version when the one it opened changed (a shorter
//   one is refused: the handle fails with `EIO` rather than read zeros).
// - `FirstScan`: what the first reader of a file touched near its start and end, which
//   `LearnedHeadTails` turns into the head and tail sizes of its file type, kept in the cache
//   database.
// - What files share: `FetchEnvironment` (client, store, committer, `FetchPolicy`),
//   `Committer` (the commit queue: `fdatasync`, then the bitmap, at most once a second a file),
//   `AccessTimes` (when files were opened, written a commit interval later),
//   `HostRates` (readers' recent speed per host), `ReadDeadlines` (one sweep a mount fails the
//   reads that waited past the read deadline, rather than a timer per read) and `FetchError`,
//   the one error a fetch ends with, carrying its cause and its errno.

/// Bytes a read may be answered with: they are in `file` at `range`.
public struct ReadyBytes: Sendable {
    public let file: DataFile
    public let range: Range<UInt64>
}

public typealias ReadCompletion = @Sendable (Result<ReadyBytes, FetchError>) -> Void

/// One remote file in the cache: the I/O around its `FilePlan`. The plan decides (which blocks
/// to request, who is answered, when to commit); this class performs what it decided — the data
/// file, the network, commits, timers and the catalog's events — after its lock is released.
/// A read is answered as soon as its own bytes are written — also while the transfer that
/// brings them is still running — and never before.
public final class CachedFile: Sendable {
    public let url: URL
    /// What the cache and its database know the file by (`CacheKey`): no secret of the URL.
    /// Made once: opens, closes and commits ask for it.
    let cacheKey: String
    public let layout: BlockLayout
    public let modified: Date?
    let headers: [String: String]
    let dataName: String
    let environment: FetchEnvironment
    let events: CachedFileEvents
    let budget: CacheBudget
    /// The plan and the open data file. No lock of the catalog is held while this one is taken.
    /// Under it only leaf locks are taken: `CacheBudget.counters` (background reservations in
    /// `fetchNextMissing`) and, when the data file vanished behind our back (`openDataFile`),
    /// `CacheEviction.evictionScheduled` (via `cachedBytesChanged`), the commit queue's
    /// (`forgetLostData`), `HostRates` (a reader's look-up) and `TransferControl` (a transfer's
    /// purpose as its request goes out). Taken under `KernelReadPaths.modes` (`openCompleteData`). The plan's actions (replies,
    /// requests, events) run after it is released. Eviction of an idle file unlinks its data under it, so that no read reopens
    /// the old file in between; an idle file has no reader to wait. Promotion renames the data
    /// file under it, so that no read opens the partial name as it goes away.
    let state: Mutex<State>

    struct State {
        var plan: FilePlan
        /// Open while a handle, a transfer, a reader or a commit needs it (`closeIfIdle`).
        var dataFile: DataFile?
    }

    /// `mirrors`: the file's other URLs after `url`, best first (`FileSources`); `pieces`: the
    /// manifest's piece hashes, each piece checked before its bytes are shown (`FilePlan+Pieces`).
    init(record: CachedFileRecord, url: URL, mirrors: [URL] = [], pieces: PieceHashes? = nil,
         headers: [String: String], expectedSHA256: String? = nil,
         environment: FetchEnvironment, budget: CacheBudget, serverIgnoresRanges: Bool, events: CachedFileEvents) {
        self.url = url
        cacheKey = url.cacheKey
        self.headers = headers
        self.environment = environment
        self.events = events
        self.budget = budget
        dataName = record.dataName
        layout = BlockLayout(fileSize: record.size, blockSize: record.blockSize)
        modified = record.modified.map { Date(timeIntervalSince1970: $0) }
        let stored = BlockBitmap(blockCount: layout.blockCount, serialized: [UInt8](record.bitmap))
        let bitmap = stored ?? BlockBitmap(blockCount: layout.blockCount)
        let (pieces, refusal) = FilePlan.usablePieces(pieces, fileSize: record.size)
        if let refusal { environment.logger.warning("\(url.redactedForDisplay): \(refusal)") }
        let plan = FilePlan(url: url, layout: layout, policy: environment.policy, blocks: bitmap,
                            complete: record.state == .complete && bitmap.isComplete,
                            streamOnly: serverIgnoresRanges, expectedSHA256: expectedSHA256, source: record.source,
                            mirrors: mirrors, pieces: pieces)
        state = Mutex(State(plan: plan))
        // A process killed between removing the data (eviction) and updating the record leaves
        // blocks listed whose bytes are gone: the file must not pass for complete meanwhile.
        let directory = environment.directory
        if plan.durable.presentCount > 0, access(directory.dataPath(name: dataName, complete: false), F_OK) != 0,
           access(directory.dataPath(name: dataName, complete: true), F_OK) != 0 {
            state.withLock { forgetLostData(of: &$0.plan) }
        }
    }

    // MARK: Looking

    public var snapshot: CachedFileSnapshot {
        let now = ContinuousClock.now
        return state.withLock { $0.plan.snapshot(now: now) }
    }

    /// Each of the file's sources (its URL, then its mirrors) and how it is doing.
    public var sourceStatuses: [SourceStatus] {
        let now = ContinuousClock.now
        return state.withLock { $0.plan.sources.statuses(now: now, running: $0.plan.runningPerSource()) }
    }

    // MARK: Opening and closing

    /// A file handle was opened on this file.
    public func opened() {
        state.withLock { state in
            state.plan.openHandles += 1
            state.plan.openedAt = .now
            state.plan.readSinceOpen = false
        }
        environment.accessTimes.note(cacheKey, at: Date())
    }

    /// A file handle was closed; the data file is closed once nothing needs it.
    public func handleClosed() {
        let now = ContinuousClock.now
        let (actions, file) = state.withLock { state in
            let actions = state.plan.handleClosed(now: now)
            closeIfIdle(&state)
            return (actions, state.dataFile)
        }
        perform(actions, file: file)
    }

    public var isComplete: Bool {
        state.withLock { $0.plan.complete }
    }

    /// A new read-only descriptor of the complete data file, for the kernel to read from
    /// directly; nil unless the file is complete. Opened under the lock, so it cannot be a
    /// file that is being discarded and fetched again. The caller closes it.
    public func openCompleteData() -> Int32? {
        state.withLock { state in
            guard state.plan.complete else { return nil }
            let descriptor = open(environment.directory.dataPath(name: dataName, complete: true), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            return descriptor >= 0 ? descriptor : nil
        }
    }

    /// True once this version is discarded (the server's file changed, or it failed its
    /// sha256): it serves nothing more, and the catalog has a newer one or will load it.
    public var isInvalidated: Bool {
        state.withLock { $0.plan.invalidated != nil }
    }

    /// True once the finished file failed its sha256 check: it stays failed, and fetches
    /// nothing more, until the catalog replaces it.
    public var isRejected: Bool {
        state.withLock { $0.plan.rejected }
    }

    /// The sha256 the file must match before promotion (lowercase hex), if the manifest gives one.
    public var expectedSHA256: String? {
        state.withLock { $0.plan.expectedSHA256 }
    }

    /// A refreshed manifest gives another sha256: the next promotion checks that one.
    func expect(sha256: String?) {
        state.withLock { $0.plan.expectedSHA256 = sha256?.lowercased() }
    }

    // MARK: Reading

    /// Answers once every byte of `bytes` is in the data file, fetching what is missing
    /// (plus up to `readAhead` bytes after it, for a sequential reader) in as few requests as possible.
    /// A cold read takes the lock once before its bytes arrive: the cache's room for what it
    /// stores is checked (`CacheBudget`, a leaf lock), the read planned and its requests' attempts
    /// begun (`update`) in one round trip. Only a read the cache has no room for leaves the lock
    /// first, since eviction takes other files' locks, and takes it again after.
    public func read(_ requested: Range<UInt64>, readAhead: UInt64, completion: @escaping ReadCompletion) {
        let bytes = requested.clamped(to: 0..<layout.fileSize)
        let now = ContinuousClock.now
        var wantsRoom: UInt64?
        var cached = false
        update { state in
            cached = state.plan.isAvailable(bytes)
            let missing = cached ? 0 : state.plan.bytesToStore(for: bytes)
            if missing > 0 {
                guard budget.hasRoom(forRead: missing + readAhead) else {
                    wantsRoom = missing
                    return []
                }
                budget.storing()
            }
            return planRead(bytes, readAhead: readAhead, now: now, in: &state, completion: completion)
        }
        if cached { noteCachedRead(bytes) }
        guard let missing = wantsRoom else { return }
        // Least recently used files nobody has open are evicted until the read and its read-ahead fit.
        events.makeRoom(missing + readAhead)
        let fitsWithReadAhead = budget.hasRoom(forRead: missing + readAhead)
        var readAhead = readAhead
        switch FilePlan.readRoom(fitsWithReadAhead: fitsWithReadAhead, fitsAlone: fitsWithReadAhead || budget.hasRoom(forRead: missing)) {
        case .store: budget.storing()
        case .storeWithoutReadAhead: readAhead = 0
        case .readThrough: return readThrough(bytes, completion)
        }
        let later = ContinuousClock.now
        update { planRead(bytes, readAhead: readAhead, now: later, in: &$0, completion: completion) }
    }

    /// A read answered from the cache: one of many in a short time quiets background work
    /// (`CachedReadPace`), unless the server the file's next request would go to (its best
    /// mirror, if it has several) is known to be slower than that.
    private func noteCachedRead(_ bytes: Range<UInt64>) {
        guard environment.cachedReadPace.noteRead(UInt64(bytes.count)) else { return }
        let policy = environment.policy
        let now = ContinuousClock.now
        let server = state.withLock { $0.plan.preferredSource(now: now).requestURL(origin: url).serverKey }
        if let speed = environment.hostRates.bytesPerSecond(host: server, at: now),
           speed < Double(policy.slowestLinkQuietedByCachedReads) {
            return
        }
        environment.client.quietBackground(.fastCachedReads, for: policy.quietAfterFastCachedReads)
    }

    /// Under the lock: opens the data file and asks the plan about a read.
    private func planRead(_ bytes: Range<UInt64>, readAhead: UInt64, now: ContinuousClock.Instant, in state: inout State,
                          completion: @escaping ReadCompletion) -> [FilePlan.Action] {
        if let refusal = state.plan.readRefusal {
            return [.fail(completion, refusal)]
        }
        do {
            _ = try openDataFile(&state)
        } catch {
            return [.log(.error, "\(url.redactedForDisplay): \(error)"), .fail(completion, FetchError(url, .cache(.from(error))))]
        }
        // A complete file's read asks no server: no source to rank, no host speed to look up.
        let hostSpeed = state.plan.complete ? nil : environment.hostRates.bytesPerSecond(
            host: state.plan.preferredSource(now: now).requestURL(origin: url).serverKey, at: now)
        return state.plan.read(bytes, readAhead: readAhead, now: now, hostBytesPerSecond: hostSpeed, completion: completion)
    }

    /// The server changed the file (`why`), as something other than a reply showed: this
    /// version and what is cached of it are discarded.
    public func changedOnServer(because why: String) {
        update { $0.plan.remoteChanged(because: why) }
    }

    /// Serves `bytes` from the network without storing them (the cache has no room).
    func readThrough(_ bytes: Range<UInt64>, _ completion: @escaping ReadCompletion) {
        let (source, pieces, conditional) = state.withLock { ($0.plan.preferredSource(now: .now), $0.plan.pieces, $0.plan.sendsCondition) }
        let reader = ReadThrough(url: source.requestURL(origin: url), headers: source.requestHeaders(headers, origin: url),
                                 fileSize: layout.fileSize, validator: source.validator, pieces: pieces, conditional: conditional,
                                 environment: environment, budget: budget)
        reader.fetch(bytes, changed: { [self] why in changedOnServer(because: why) }, completion: completion)
    }

    /// Fails the reads waiting past their deadline (`ReadDeadlines`); false once no read waits.
    func expireLateReads(now: ContinuousClock.Instant) -> Bool {
        var waiting = false
        update { state in
            defer { waiting = !state.plan.waiters.isEmpty }
            return state.plan.expireWaiters(now: now)
        }
        return waiting
    }

    // MARK: Performing

    /// Runs `decide` under the lock, then performs what it returned. The attempts of the
    /// transfers it starts begin in the same round trip of the lock (`FilePlan.startAttempt`),
    /// not in one more each.
    func update(_ decide: (inout State) -> [FilePlan.Action]) {
        let (actions, file, attempts) = state.withLock { state in
            let actions = decide(&state)
            return (actions, state.dataFile, Self.startAttempts(of: actions, in: &state.plan))
        }
        perform(actions, file: file, attempts: attempts)
    }

    /// Under the lock: begins the attempt of every transfer `actions` start.
    private static func startAttempts(of actions: [FilePlan.Action], in plan: inout FilePlan) -> [Int: FilePlan.AttemptStart] {
        var attempts: [Int: FilePlan.AttemptStart] = [:]
        for case .fetch(let id, _, _, _, _) in actions {
            attempts[id] = plan.startAttempt(id, now: .now)
        }
        return attempts
    }

    /// Does what the plan decided; `file` is the data file replies point into. `attempts`: those
    /// begun already (`update`); a transfer started without one begins it here.
    func perform(_ actions: [FilePlan.Action], file: DataFile?, attempts: [Int: FilePlan.AttemptStart] = [:]) {
        for action in actions {
            switch action {
            case .fetch(let id, let bytes, let control, let wholeBody, let readAheadFrom):
                if let attempt = attempts[id] {
                    send(attempt, id: id, bytes: bytes, control: control, wholeBody: wholeBody, readAheadFrom: readAheadFrom,
                         replyFile: file)
                } else {
                    startFetch(id: id, bytes: bytes, control: control, wholeBody: wholeBody, readAheadFrom: readAheadFrom)
                }
            case .retry(let id, let bytes, let control, let wholeBody, let delay):
                environment.metrics.retried()
                DispatchQueue.global().asyncAfter(deadline: .now() + delay.timeInterval) { [self] in
                    startFetch(id: id, bytes: bytes, control: control, wholeBody: wholeBody)
                }
            case .raise(let control):
                control.raise()
            case .endEarly(let control, let offset):
                control.endEarly(at: offset)
            case .awaitDeadline:
                environment.readDeadlines.watch(self)
            case .invalidated:
                events.invalidated(self)
            case .rejected:
                events.rejected(self)
            case .rangesIgnored:
                events.rangesIgnored(self)
            case .findSource:
                environment.metrics.sourceMarkedBad()
                environment.client.probe(url: url, headers: headers, connection: .own) { [self] result in
                    update { $0.plan.sourceFound(result) }
                }
            case .verifyPiece(let index, let bytes, let expected, let token):
                verifyPiece(index, bytes, expected: expected, token: token, in: file)
            case .probeSource(let index, let target, let delay):
                probeSource(index, at: target, after: delay)
            case .saveSource(let source):
                let store = environment.store
                let key = cacheKey
                environment.committer.schedule { try? store.updateSource(url: key, source) }
            case .cachedBytes(let delta):
                events.cachedBytesChanged(delta)
            case .unreserve(let bytes):
                budget.unreserve(bytes)
            case .notify(let observer, let succeeded):
                observer(succeeded)
            case .answer(let completion, let range):
                // A reader only waits while the data file is open (`closeIfIdle`).
                guard let file else {
                    completion(.failure(FetchError(url, .cache(CacheError("its cache file is closed")))))
                    continue
                }
                completion(.success(ReadyBytes(file: file, range: range)))
            case .fail(let completion, let error):
                completion(.failure(error))
            case .readThrough(let bytes, let completion):
                readThrough(bytes, completion)
            case .commit:
                environment.committer.schedule { [self] in commit() }
            case .commitLater(let delay):
                environment.committer.schedule(after: delay) { [self] in commit() }
            case .log(let level, let message):
                environment.logger.log(level: level, "\(message)")
            }
        }
    }
}

/// What a cached file tells its catalog.
struct CachedFileEvents: Sendable {
    /// The remote file changed: the catalog forgets this version.
    var invalidated: @Sendable (CachedFile) -> Void
    /// Its bytes failed the sha256 check and were dropped: whatever the kernel kept of them must go.
    var rejected: @Sendable (CachedFile) -> Void
    /// It answered a plain range request with the whole body: the catalog counts that against its server.
    var rangesIgnored: @Sendable (CachedFile) -> Void
    /// Its server answered a range request with `206`: nothing is held against the server.
    var rangesServed: @Sendable (CachedFile) -> Void
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
