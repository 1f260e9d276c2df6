import Foundation
import Logging
import Synchronization

// Design note: background work, what `--prefetch` fetches while nobody asks.
//
// - Order: pinned entries, files open now, then (policy `all`) the head and tail of every file
//   in manifest order (`HeadsWalk`, a file's size probe first where it is not known), then files
//   opened earlier and (policy `all`) every file whole in manifest order.
// - Whole-file work runs under `--max-downloads`; heads and tails, small and bound by the round
//   trip, go up to `maxHeadTransfers` at once. Every server with work gets a slot before any
//   server gets a second (`Scheduling/HostShares`).
// - It starts a moment after the mount (`BackgroundQuiet.mountGrace`), so a program's first
//   requests have the server to themselves; when it stands still, and for whom, is the
//   scheduling part's (`Scheduling/TransferPurpose.swift`).
// - `Prefetcher` starts, pauses and wakes the work; `+NextWork` chooses what a free slot does;
//   `+Slots` counts the slots and the files resting after a failure. Read-ahead, the bytes just
//   past a reader, is not here: it is the file plan's (`FilePlan.readAheadEnd`) and the open
//   handle's (`Fetcher/ReadAheadWindow`).

/// Which files the prefetcher completes on its own.
public enum PrefetchPolicy: String, Sendable, CaseIterable {
    /// Every file of the manifest.
    case all
    /// Only files a reader has opened during this mount.
    case opened
    /// None: only what readers ask for is fetched.
    case none
}

/// Completes files in the background, a few chunks at a time: pinned entries first, files with
/// an open handle next; then (policy `all`) the heads and tails of every file of the manifest,
/// where tags and stream headers live (`FilePlan+Heads`, sized by file type and by what first
/// scans taught, `LearnedHeadTails`), several at once (`HeadsWalk`); then files opened earlier,
/// then (policy `all`) the rest of the manifest in order. Its transfers are background
/// transfers, which yield to every foreground read. Slots are shared by server (`HostShares`).
public final class Prefetcher: Sendable {
    public struct Configuration: Sendable {
        public var policy: PrefetchPolicy = .all
        /// Background transfers (and size probes) at once that complete files.
        public var maxDownloads = 3
        /// Background transfers (and size probes) at once while the heads and tails of the
        /// manifest are fetched, whole-file work included (which still takes no more than
        /// `maxDownloads`). A head or tail is small and waits mostly for its round trip, so more at
        /// once fill the link (docs/benchmarks.md, "Heads and tails six at a time"). Six is what
        /// the client gives background work of a server anyway
        /// (`CurlClient`: 8 connections per host, of which background transfers leave the last 2
        /// to readers; `ProbeQueue`: 6 probes for listings and the background), so a reader's
        /// request still finds a connection at once, and heads wait while a reader does.
        /// 0: no heads first, files are completed in manifest order straight away.
        public var maxHeadTransfers = 6
        /// One background request at most this long, so a fault costs one chunk.
        public var chunkBytes: UInt64 = 4 * 1024 * 1024
        /// How long a file whose fetch failed is left alone before the next try.
        public var failureBackoff: Duration = .seconds(30)
        /// How often background work that stopped at the cache's limits looks for room again.
        public var spacePollInterval: Duration = .seconds(1)
        /// While slots are free, how often the prefetcher looks again for work that no event
        /// announces: a slow mirror's tail can be taken over only once its speed is known
        /// (`CachedFile.fetchNextMissing`), and the blocks a sequential reader's read-ahead kept
        /// are free for background work a while after it stops (`FilePlan.readerZone`).
        public var idleSlotRecheck: Duration = .milliseconds(500)

        public init() {}

        var fetchesHeadsFirst: Bool { policy == .all && maxHeadTransfers > 0 }
    }

    static let pausedSetting = "prefetch.paused"

    public let configuration: Configuration
    let catalog: FileCatalog
    private let store: MetadataStore
    private let logger: Logger
    /// Leaf lock: nothing is called while it is held.
    let state: Mutex<State>

    struct State {
        var paused: Bool
        var stopped = false
        var running = 0
        /// Manifest entries (one per URL) not yet seen complete, in manifest order.
        var pending: [Int]
        var cursor = 0
        /// Policy `all`: the walk over the heads and tails of `pending`'s files; the manifest
        /// walk completes files once it is finished.
        var heads: HeadsWalk
        /// Entries of `heads` whose size probe runs: their tail waits for their size.
        var headsProbing: Set<Int> = []
        /// The slots of `running` that hold whole-file work (at most `maxDownloads`).
        var runningWholeFile = 0
        var restingUntil: [String: ContinuousClock.Instant] = [:]
        /// Entries to complete first (pinned ones).
        var urgent: [Int] = []
        /// Stopped at the cache's limits (free-space floor or size limit) until there is room.
        var waitingForSpace = false
        var hostShares = HostShares()
        /// A look for work is due after `idleSlotRecheck`.
        var recheckScheduled = false
        /// Some entry of the manifest has mirrors: only then can a slow tail be taken over.
        var hasMirrors: Bool
    }

    /// How far ahead of its place the manifest walk looks for work on a server with none running.
    static let idleHostLookAhead = 64

    private let client: any RemoteClient

    public init(catalog: FileCatalog, client: any RemoteClient, store: MetadataStore, configuration: Configuration, logger: Logger) {
        self.client = client
        self.catalog = catalog
        self.store = store
        self.configuration = configuration
        self.logger = logger
        let paused = (try? store.setting(Self.pausedSetting)) == "true"
        let pending = Self.pendingEntries(of: catalog)
        state = Mutex(State(paused: paused, pending: pending, heads: HeadsWalk(entries: configuration.fetchesHeadsFirst ? pending : []),
                            hasMirrors: Self.hasMirrors(catalog)))
    }

    /// The current manifest's entries, one per URL, in order.
    private static func pendingEntries(of catalog: FileCatalog) -> [Int] {
        let entries = catalog.manifest.entries
        let active = catalog.activeEntries
        // Positions in `active` of the URLs seen so far: no set of 100,000 URL strings.
        var seen = PositionTable(capacity: active.count)
        func urlHash(at position: Int) -> Int { entries[active[position]].urlText.hashValue }
        var pending: [Int] = []
        for (position, index) in active.enumerated() {
            let url = entries[index].urlText
            guard seen.first(hash: url.hashValue, where: { entries[active[$0]].urlText == url }) == nil else { continue }
            seen.insert(position, hash: url.hashValue, hashAt: urlHash)
            pending.append(index)
        }
        return pending
    }

    private static func hasMirrors(_ catalog: FileCatalog) -> Bool {
        catalog.manifest.entries.contains { !$0.mirrorTexts.isEmpty }
    }

    /// The manifest was refreshed: walk the new one from its start.
    public func manifestChanged() {
        let pending = Self.pendingEntries(of: catalog)
        let hasMirrors = Self.hasMirrors(catalog)
        state.withLock { state in
            state.pending = pending
            state.cursor = 0
            // New files' heads come first again (a listing that grew the tree).
            state.heads.restart(with: configuration.fetchesHeadsFirst ? pending : [])
            state.hasMirrors = hasMirrors
        }
        pump()
    }

    public var isPaused: Bool {
        state.withLock { $0.paused }
    }

    /// Begins background work (unless paused) and listens for files being opened.
    public func start() {
        guard configuration.policy != .none else {
            if isPaused { client.setBackgroundPaused(true) }
            return
        }
        catalog.onFileOpened { [self] in pumpAfterOpen() }
        if isPaused {
            client.setBackgroundPaused(true)
            logger.info("background fetching is paused (rangefs resume to continue)")
        }
        // A program's first requests often follow the mount at once: background transfers wait
        // `mountGrace` for them (size probes go on).
        client.quietBackground(.mountGrace, for: catalog.environment.policy.mountGrace)
        pump()
    }

    /// Stops starting new transfers; running ones end with the client's shutdown.
    public func stop() {
        state.withLock { $0.stopped = true }
    }

    /// Pauses or resumes background transfers; remembered across remounts.
    public func setPaused(_ paused: Bool) {
        state.withLock { $0.paused = paused }
        client.setBackgroundPaused(paused)
        do {
            try store.setSetting(Self.pausedSetting, to: paused ? "true" : "false")
        } catch {
            logger.error("cannot remember the paused state: \(error)")
        }
        logger.info(paused ? "background fetching paused" : "background fetching resumed")
        if !paused { pump() }
    }

    /// Fetches these entries completely now (`rangefs pin`), ahead of the rest of the manifest
    /// and also under `--prefetch opened` or `none`.
    public func complete(entries: [Int]) {
        state.withLock { state in
            for index in entries.reversed() where !state.urgent.contains(index) {
                state.urgent.insert(index, at: 0)
            }
        }
        catalog.onFileOpened { [self] in pumpAfterOpen() }
        pump()
    }

    private func pumpAfterOpen() {
        // A file just opened is left to its reader this long (`FilePlan.isNewlyOpened`).
        let grace = catalog.environment.policy.openGrace
        DispatchQueue.global().asyncAfter(deadline: .now() + grace.timeInterval) { [self] in pump() }
    }

    /// Fills every free slot with the most urgent work there is.
    func pump() {
        while reserveSlot() {
            if !startNext() {
                freeSlot()
                if catalog.budget.hasRoom(for: configuration.chunkBytes) || !hasWorkLeft() {
                    wakeAfterRest()
                    recheckLater()
                } else {
                    waitForSpace()
                }
                return
            }
        }
    }

    // MARK: Waiting for space

    /// The cache has no room for another chunk: the files background work would fetch show
    /// `waiting for space`, and the free space is looked at again now and then. Nothing is
    /// evicted for background work and nothing fails.
    private func waitForSpace() {
        let first = state.withLock { state -> Bool in
            guard !state.stopped, !state.waitingForSpace else { return false }
            state.waitingForSpace = true
            return true
        }
        guard first else { return }
        let files = filesAwaitingWork()
        for file in files { file.setWaitingForSpace(true) }
        logger.info("the cache is at its limits (free-space floor or size limit): background fetching of \(files.count) file(s) waits for space")
        pollForSpace()
    }

    private func pollForSpace() {
        DispatchQueue.global().asyncAfter(deadline: .now() + configuration.spacePollInterval.timeInterval) { [self] in
            guard !state.withLock({ $0.stopped }) else { return }
            // Another program may have taken the free space below the floor: give it back.
            catalog.keepWithinLimits()
            guard catalog.budget.hasRoom(for: configuration.chunkBytes) else { return pollForSpace() }
            state.withLock { $0.waitingForSpace = false }
            for file in filesAwaitingWork() { file.setWaitingForSpace(false) }
            logger.info("there is room in the cache again: background fetching goes on")
            pump()
        }
    }

    /// Whether background work would fetch anything, given room: a listed entry not known to
    /// be complete (its size may not even be known yet), or a file in use that is not complete.
    private func hasWorkLeft() -> Bool {
        let (urgent, pending) = state.withLock { ($0.urgent, $0.pending) }
        let entries = urgent + (configuration.policy == .all ? pending : [])
        if entries.contains(where: { catalog.knownFile(forEntry: $0).map { !$0.isComplete } ?? true }) { return true }
        return !filesAwaitingWork().isEmpty
    }

    /// The incomplete files whose size is known that background work would go on with:
    /// pinned ones, those in use, and under policy `all` the rest of the manifest.
    private func filesAwaitingWork() -> [CachedFile] {
        let (urgent, pending) = state.withLock { ($0.urgent, $0.pending) }
        var entries = urgent
        if configuration.policy == .all { entries += pending }
        var files = entries.compactMap { catalog.knownFile(forEntry: $0) }
        if configuration.policy != .none { files += catalog.filesInUse() }
        var seen = Set<ObjectIdentifier>()
        return files.filter { !$0.isComplete && seen.insert(ObjectIdentifier($0)).inserted }
    }

    /// Files left alone after a failure get their next try when their rest ends.
    private func wakeAfterRest() {
        let wake = state.withLock { state -> ContinuousClock.Instant? in
            guard !state.stopped, state.running == 0 else { return nil }
            return state.restingUntil.values.min()
        }
        guard let wake else { return }
        let delay = max(Duration.zero, wake - ContinuousClock.now) + .milliseconds(10)
        DispatchQueue.global().asyncAfter(deadline: .now() + delay.timeInterval) { [self] in pump() }
    }

    /// A slot is free while transfers run in a manifest with mirrors, or while a reader keeps
    /// a file's blocks for its read-ahead: look for work again a little later (see
    /// `idleSlotRecheck`). Otherwise a transfer's end or a file's opening is the only news.
    private func recheckLater() {
        let (open, mirrorTail) = state.withLock { state in
            (!state.stopped && !state.paused && !state.recheckScheduled, state.hasMirrors && state.running > 0)
        }
        // The files in use are asked only when nothing else makes the look due.
        guard open, mirrorTail || catalog.filesInUse().contains(where: \.backgroundWaitsForReader) else { return }
        let due = state.withLock { state -> Bool in
            guard !state.recheckScheduled else { return false }
            state.recheckScheduled = true
            return true
        }
        guard due else { return }
        DispatchQueue.global().asyncAfter(deadline: .now() + configuration.idleSlotRecheck.timeInterval) { [self] in
            state.withLock { $0.recheckScheduled = false }
            pump()
        }
    }
}
