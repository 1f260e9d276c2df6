import Foundation

/// The places one file is served from — the manifest URL and the mirrors after it, best first —
/// and how each is doing for this file, with no I/O and no clock of its own. Each keeps its own
/// `FetchSource` (where its redirect led, and the validator sent there as `If-Range`), because
/// mirrors' validators differ. A source is ok, backing off after transient failures (a delay
/// that doubles with each failure in a row), or dropped for this file: its copy differs (size,
/// validator) or it does not serve the file. A file with one URL has one source, always used.
///
/// Requests are spread (aria2's `--split`): each goes where it would be served soonest, judged
/// by the requests a source is serving already and its speed per request (`best`). So a file's
/// transfers go to every healthy source at once, a slow source gets work only while the fast
/// ones are busier than its slowness is worth, and a source whose speed was last measured
/// long ago is tried again as if it were fast (it may have recovered).
struct FileSources {
    struct Source {
        /// The URL the manifest gives.
        let url: URL
        /// Where its ranges go and which version they must be, relative to the manifest URL
        /// (a mirror's `location` is never nil); nil until a probe of `url` answered.
        var fetch: FetchSource?
        /// A probe of it is asked for or under way.
        var probing = false
        var health = Health.ok
        /// Transient failures in a row (requests or probes); a success resets them.
        var failures = 0
        /// Its latest measured speed per request, and when it was measured; nil before.
        var bytesPerSecond: Double?
        var measuredAt: ContinuousClock.Instant?
        /// That speed came from a reply too short to be measured as it ran (`measuredShortReply`).
        var measuredFromShortReply = false
        /// The last error it met, for messages.
        var lastError: String?
        /// Bytes it wrote whose blocks are not durable yet: forgotten if its copy turns out to differ.
        var unsettled: [Range<UInt64>] = []
    }

    enum Health: Equatable {
        case ok
        case backingOff(until: ContinuousClock.Instant)
        case dropped(String)
    }

    /// What a probe of a source means for it.
    enum ProbeOutcome: Equatable {
        case usable
        case dropped(String)
        case probeAgain(after: Duration)
    }

    private(set) var all: [Source]
    /// The source the cache record describes: the one that answered the size probe.
    private(set) var recorded: Int

    /// `stored` is the record's `FetchSource`: a `location` that is one of the mirrors' URLs
    /// means that mirror answered the size probe; any other is the manifest URL's.
    init(origin: URL, mirrors: [URL], stored: FetchSource) {
        all = ([origin] + mirrors).map { Source(url: $0) }
        let mirrorIndex = stored.location.flatMap { location in
            mirrors.firstIndex { $0.absoluteString == location.absoluteString }
        }
        recorded = mirrorIndex.map { $0 + 1 } ?? 0
        all[recorded].fetch = stored
    }

    var isSingle: Bool { all.count == 1 }

    /// The record's source, as the database keeps it.
    var recordedSource: FetchSource {
        get { all[recorded].fetch! }
        set { all[recorded].fetch = newValue }
    }

    func isDropped(_ index: Int) -> Bool {
        if case .dropped = all[index].health { return true }
        return false
    }

    var allDropped: Bool { all.indices.allSatisfy(isDropped) }

    func isUsable(_ index: Int, now: ContinuousClock.Instant) -> Bool {
        guard all[index].fetch != nil else { return false }
        switch all[index].health {
        case .ok: return true
        case .backingOff(let until): return until <= now
        case .dropped: return false
        }
    }

    /// Where the next request goes: among the usable sources, the fewest failures in a row, then
    /// the one that would serve it soonest — `(requests it serves now + 1) / its speed` — then the
    /// manifest's order. `running[i]`: the requests source `i` serves now (none when absent). A
    /// source with no speed measured within `speedMemory` counts as fast as the fastest that has
    /// one, so every source gets tried and a slow one is tried again later. `avoiding` is passed
    /// over when another source is usable (a retry after a failure goes elsewhere). `keeping`
    /// (the source already bringing the piece a request falls in) is chosen while it is a
    /// candidate at least half as fast as the fastest: a piece from one source names it when it
    /// fails its hash, but not at any price.
    func best(now: ContinuousClock.Instant, avoiding: Int? = nil, keeping: Int? = nil, running: [Int] = [],
              speedMemory: Duration = FetchPolicy().sourceSpeedMemory) -> Int? {
        let usable = all.indices.filter { isUsable($0, now: now) }
        let candidates = usable.count > 1 ? usable.filter { $0 != avoiding } : usable
        let speeds = expectedSpeeds(now: now, memory: speedMemory)
        if let keeping, candidates.contains(keeping),
           2 * speeds[keeping] >= candidates.map({ speeds[$0] }).max() ?? 0 {
            return keeping
        }
        func wait(_ index: Int) -> Double {
            Double((index < running.count ? running[index] : 0) + 1) / max(speeds[index], 1)
        }
        return candidates.min { a, b in
            if all[a].failures != all[b].failures { return all[a].failures < all[b].failures }
            let (first, second) = (wait(a), wait(b))
            if first != second { return first < second }
            return a < b
        }
    }

    /// Whether any source may be asked now.
    func hasUsable(now: ContinuousClock.Instant) -> Bool {
        all.indices.contains { isUsable($0, now: now) }
    }

    /// Each source's speed per request as `best` counts it: measured within `memory`, else
    /// that of the fastest measured (every source gets tried), else 1 (load alone decides).
    /// A short reply's speed (`measuredShortReply`) is only a floor beside a source measured as its
    /// transfer ran: such a reply comes slower than a long transfer runs (a new connection's
    /// slow start and handshake, a wait behind the host's connection cap), and a source it
    /// ranked below the one measured running would get no request to be measured again.
    func expectedSpeeds(now: ContinuousClock.Instant, memory: Duration) -> [Double] {
        let fresh = all.indices.map { index -> (rate: Double, fromShortReply: Bool)? in
            guard let rate = all[index].bytesPerSecond, let at = all[index].measuredAt, now - at <= memory else { return nil }
            return (rate, all[index].measuredFromShortReply)
        }
        let fastestRunning = fresh.compactMap { $0?.fromShortReply == false ? $0?.rate : nil }.max()
        let measured = fresh.map { measure in
            measure.map { $0.fromShortReply ? max($0.rate, fastestRunning ?? 0) : $0.rate }
        }
        let assumed = measured.compactMap { $0 }.max() ?? 1
        return measured.map { $0 ?? assumed }
    }

    /// When the first source backing off may be asked again; nil when none is backing off
    /// (every source is usable, dropped or waiting for its probe).
    func nextRecovery() -> ContinuousClock.Instant? {
        all.compactMap { source -> ContinuousClock.Instant? in
            guard source.fetch != nil, case .backingOff(let until) = source.health else { return nil }
            return until
        }.min()
    }

    /// The sources never asked about yet, marked as being probed now.
    mutating func takeUnprobed() -> [Int] {
        let indices = all.indices.filter { all[$0].fetch == nil && !all[$0].probing && !isDropped($0) }
        for index in indices { all[index].probing = true }
        return indices
    }

    /// A probe of source `index` answered (or failed) for a file of `fileSize` bytes whose
    /// manifest URL is `origin`.
    mutating func probed(_ index: Int, _ result: Result<RemoteFileInfo, RemoteError>, fileSize: UInt64, origin: URL,
                         now: ContinuousClock.Instant, policy: FetchPolicy) -> ProbeOutcome {
        all[index].probing = false
        guard !isDropped(index) else { return .dropped(reason(of: index)) }
        switch result {
        case .success(let info):
            guard info.size == fileSize else {
                let why = "its size is \(info.size) bytes where the file has \(fileSize)"
                drop(index, because: why)
                return .dropped(why)
            }
            let answered = info.finalURL ?? all[index].url
            all[index].fetch = FetchSource(location: answered.absoluteString == origin.absoluteString ? nil : answered,
                                           validator: info.validator)
            all[index].health = .ok
            all[index].failures = 0
            return .usable
        case .failure(let error):
            guard error.isTransient, all[index].failures + 1 < policy.maxAttempts else {
                drop(index, because: error.description)
                return .dropped(error.description)
            }
            all[index].probing = true
            return .probeAgain(after: backOff(index, after: error, now: now, policy: policy))
        }
    }

    /// A request to source `index` failed for a while: it is passed over until its delay ends,
    /// a delay that doubles with each failure in a row (or the server's `Retry-After`). Returns it.
    @discardableResult
    mutating func backOff(_ index: Int, after error: RemoteError, now: ContinuousClock.Instant,
                          policy: FetchPolicy) -> Duration {
        all[index].failures += 1
        all[index].lastError = error.description
        let delay = max(policy.retryDelay(attempt: all[index].failures + 1), error.retryAfter ?? .zero)
        if !isDropped(index) { all[index].health = .backingOff(until: now + delay) }
        return delay
    }

    /// Source `index` served bytes: it is ok again.
    mutating func succeeded(_ index: Int) {
        guard !isDropped(index) else { return }
        all[index].failures = 0
        all[index].health = .ok
    }

    /// Source `index` is not asked again for this file.
    mutating func drop(_ index: Int, because why: String) {
        guard !isDropped(index) else { return }
        all[index].health = .dropped(why)
        all[index].lastError = why
    }

    /// A source's request to be asked again later (it met a redirect to another copy).
    mutating func forgetWhereItLeads(_ index: Int) {
        all[index].fetch = nil
        all[index].probing = true
    }

    /// Source `index` brought bytes at `bytesPerSecond`, measured as a transfer ran.
    mutating func measured(_ index: Int, bytesPerSecond: Double, at now: ContinuousClock.Instant) {
        record(index, bytesPerSecond: bytesPerSecond, at: now, fromShortReply: false)
    }

    /// Source `index` brought a reply too quick to be measured as it ran, at `bytesPerSecond`
    /// over its whole attempt. It does not replace a speed measured running within `memory`:
    /// it says less.
    mutating func measuredShortReply(_ index: Int, bytesPerSecond: Double, at now: ContinuousClock.Instant,
                                     memory: Duration) {
        if !all[index].measuredFromShortReply, let at = all[index].measuredAt, now - at <= memory { return }
        record(index, bytesPerSecond: bytesPerSecond, at: now, fromShortReply: true)
    }

    private mutating func record(_ index: Int, bytesPerSecond: Double, at now: ContinuousClock.Instant, fromShortReply: Bool) {
        all[index].bytesPerSecond = bytesPerSecond
        all[index].measuredAt = now
        all[index].measuredFromShortReply = fromShortReply
    }

    /// A refreshed manifest lists `mirrors` after the file's URL. Sources it still lists keep
    /// their state and come in its new order; new ones are asked about before their first
    /// range; those it no longer lists are dropped ("no longer in the manifest") but kept at
    /// the end, since running transfers and the cache record may still name them. A probe under
    /// way is asked again (its answer, for the old place in the list, is ignored). Returns each
    /// old index's new one.
    mutating func relist(mirrors: [URL]) -> [Int] {
        var moved = Array(repeating: -1, count: all.count)
        moved[0] = 0
        var next = [all[0]]
        for url in mirrors where !next.contains(where: { $0.url.absoluteString == url.absoluteString }) {
            if let old = all.indices.first(where: { moved[$0] < 0 && all[$0].url.absoluteString == url.absoluteString }) {
                moved[old] = next.count
                next.append(all[old])
            } else {
                next.append(Source(url: url))
            }
        }
        for old in all.indices where moved[old] < 0 {
            moved[old] = next.count
            var source = all[old]
            if case .dropped = source.health {} else {
                source.health = .dropped("no longer in the manifest")
                source.lastError = "no longer in the manifest"
            }
            next.append(source)
        }
        for index in next.indices where next[index].probing { next[index].probing = false }
        all = next
        recorded = moved[recorded]
        return moved
    }

    // MARK: Bytes not durable yet

    mutating func wrote(_ bytes: Range<UInt64>, from index: Int) {
        // In place: a copy of the list on every write of a transfer would cost for nothing.
        if let last = all[index].unsettled.last, last.upperBound == bytes.lowerBound {
            all[index].unsettled[all[index].unsettled.count - 1] = last.lowerBound..<bytes.upperBound
        } else {
            all[index].unsettled.append(bytes)
        }
        if all[index].unsettled.count > 64 { all[index].unsettled = all[index].unsettled.merged() }
    }

    /// Forgets the ranges `isSettled` says are durable now.
    mutating func settle(_ isSettled: (Range<UInt64>) -> Bool) {
        for index in all.indices where !all[index].unsettled.isEmpty {
            all[index].unsettled.removeAll(where: isSettled)
        }
    }

    /// The bytes source `index` wrote that are not durable, forgotten here.
    mutating func takeUnsettled(_ index: Int) -> [Range<UInt64>] {
        defer { all[index].unsettled = [] }
        return all[index].unsettled
    }

    // MARK: Describing

    /// Why source `index` is dropped, or its last error.
    func reason(of index: Int) -> String {
        if case .dropped(let why) = all[index].health { return why }
        return all[index].lastError ?? "no error"
    }

    /// Each source and its state, for the messages of a file no source serves.
    var summary: String {
        all.indices.map { index in
            let source = all[index]
            let state: String
            switch source.health {
            case .dropped(let why): state = "dropped: \(why)"
            case .backingOff: state = "failing: \(source.lastError ?? "unknown error")"
            case .ok: state = source.lastError.map { "failing: \($0)" } ?? "ok"
            }
            return "\(source.url.redactedForDisplay) (\(state))"
        }.joined(separator: "; ")
    }
}

/// One source of a file as status and extended attributes show it.
public struct SourceStatus: Sendable, Equatable, Codable {
    public enum State: String, Sendable, Codable {
        case ok
        /// Not asked about yet, or being asked (a mirror's probe before its first range).
        case unknown
        case backingOff = "backing off"
        case dropped
    }

    /// The URL without credentials.
    public var url: String
    public var state: State
    /// Why it is dropped or backing off.
    public var reason: String?
    /// Its latest measured speed per request, bytes per second.
    public var bytesPerSecond: UInt64?
    /// The file's requests it serves now (nil: none).
    public var requests: Int?

    public init(url: String, state: State, reason: String?, bytesPerSecond: UInt64?, requests: Int? = nil) {
        self.url = url
        self.state = state
        self.reason = reason
        self.bytesPerSecond = bytesPerSecond
        self.requests = requests
    }
}

extension FileSources {
    /// `running[i]`: the requests source `i` serves now.
    func statuses(now: ContinuousClock.Instant, running: [Int] = []) -> [SourceStatus] {
        all.indices.map { index in
            let source = all[index]
            let requests = index < running.count && running[index] > 0 ? running[index] : nil
            var status = SourceStatus(url: source.url.redactedForDisplay, state: .ok, reason: nil,
                                      bytesPerSecond: source.bytesPerSecond.map { UInt64($0) }, requests: requests)
            switch source.health {
            case .dropped(let why):
                status.state = .dropped
                status.reason = why
            case .backingOff(let until) where until > now:
                status.state = .backingOff
                status.reason = source.lastError
            default:
                if source.fetch == nil { status.state = .unknown }
            }
            return status
        }
    }
}

extension SourceStatus {
    /// One line: `URL ok 1.2 MiB/s, 2 requests`, `URL backing off: HTTP status 503`, `URL dropped: why`,
    /// `URL not asked yet` (status rows and the `user.rangefs.sources` attribute).
    public var summary: String {
        switch state {
        case .ok: url + " ok" + (bytesPerSecond.flatMap { $0 > 0 ? " " + HumanBytes.rate($0) : nil } ?? "")
            + (requests.map { ", \($0) request" + ($0 == 1 ? "" : "s") } ?? "")
        case .unknown: url + " not asked yet"
        case .backingOff: url + " backing off" + (reason.map { ": " + $0 } ?? "")
        case .dropped: url + " dropped" + (reason.map { ": " + $0 } ?? "")
        }
    }
}
