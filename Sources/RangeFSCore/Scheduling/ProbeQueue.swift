import Dispatch
import Synchronization

/// Who needs a file's size: a reader waiting on it (`stat`, a lookup, an open), a directory
/// listing that will probably look it up soon, or the background prefetcher.
public enum ProbePriority: Int, Sendable, Comparable {
    case background, listing, reader

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Size probes of manifest entries waiting for their turn: a few at once, so a listing of a
/// huge directory never floods the server or the connection pool, and a reader's probe
/// always goes first (a queued probe a reader starts waiting on moves up). When a probe a
/// reader waited on ends, background probes wait a moment: the reader's next request (the
/// open and read after a `stat`) then finds the connection that probe used idle, instead of
/// opening one more (a round trip longer over a distant link, more with TLS).
///
/// A listing's probes go as streams of one shared connection (`ConnectionUse.stream`), also
/// once a reader waits on one (`ls -l` asks for each in turn). Once they come back as streams
/// (the server speaks HTTP/2), many run at once beside the probes on connections of their own,
/// since they take no more connections; while they come back otherwise, they stay within the
/// connections' limits.
final class ProbeQueue: Sendable {
    struct Limits: Sendable {
        /// Probes at once on connections of their own: the client's connections per host.
        var total = 8
        /// Of those, probes for listings and the background, so readers always find room.
        var lowPriority = 6
        /// A listing's probes at once as streams of one connection, once streams work.
        var streams = 32
        /// How long background probes wait after a probe a reader waited on ended.
        var afterReader = FetchPolicy().probeGraceAfterReader
    }

    /// A probe that started: its priority then, and how it goes out.
    private struct Running {
        var priority: ProbePriority
        var connection: ConnectionUse
        /// Counted in `total` and `lowPriority`: it holds, or waits for, a connection of its own.
        var holdsConnection: Bool
    }

    private struct State {
        var queues: [[Int]] = Array(repeating: [], count: 3)
        /// Where each queue's next entry is (entries before it were taken).
        var heads: [Int] = Array(repeating: 0, count: 3)
        /// The priority each waiting entry is queued at; entries elsewhere in the queues are stale.
        var waiting: [Int: ProbePriority] = [:]
        var running: [Int: Running] = [:]
        /// Running probes that hold connections of their own, and those of them below a reader.
        var runningOwn = 0
        var runningLow = 0
        var runningStreams = 0
        /// Waiting entries a listing asked for, whatever their priority now.
        var listed: Set<Int> = []
        /// Whether a listing's probes came back as streams: nil until one came back at all.
        var streamsWork: Bool?
        /// Running probes a reader began to wait on after they started at a lower priority.
        var awaitedByReader: Set<Int> = []
        /// Background probes start no sooner (`Limits.afterReader`).
        var backgroundHeldUntil: ContinuousClock.Instant?
    }

    private let limits: Limits
    /// A leaf lock: probes start, and the grace's timer is armed, after it is released.
    private let state = Mutex(State())
    private let start: @Sendable (Int, ConnectionUse) -> Void

    /// `start` begins the probe of an entry, going out as told; `finished` must be called once it ends.
    init(limits: Limits = Limits(), start: @escaping @Sendable (Int, ConnectionUse) -> Void) {
        self.limits = limits
        self.start = start
    }

    /// Queues a probe of `entry`, or moves a queued one up to `priority`. A running one is left alone.
    func enqueue(_ entry: Int, priority: ProbePriority) {
        let changed = state.withLock { state -> Bool in
            if let running = state.running[entry] {
                if priority == .reader, running.priority < .reader { state.awaitedByReader.insert(entry) }
                return false
            }
            if priority == .listing { state.listed.insert(entry) }
            if let queued = state.waiting[entry], queued >= priority { return false }
            state.waiting[entry] = priority
            state.queues[priority.rawValue].append(entry)
            return true
        }
        if changed { startWhatMay() }
    }

    /// The probe of `entry` ended (whatever its outcome); `cameAsStream` when it was answered,
    /// whether the answer came as a stream of a shared connection.
    func finished(_ entry: Int, cameAsStream: Bool? = nil) {
        let hold = limits.afterReader
        let holding = state.withLock { state -> Bool in
            let running = state.running.removeValue(forKey: entry)
            if let running {
                if running.holdsConnection {
                    state.runningOwn -= 1
                    if running.priority < .reader { state.runningLow -= 1 }
                } else {
                    state.runningStreams -= 1
                }
                if running.connection == .stream, let cameAsStream { state.streamsWork = cameAsStream }
            }
            let priority = running?.priority
            guard priority == .reader || state.awaitedByReader.remove(entry) != nil, hold > .zero else { return false }
            state.backgroundHeldUntil = .now + hold
            return true
        }
        startWhatMay()
        if holding {
            DispatchQueue.global().asyncAfter(deadline: .now() + hold.timeInterval) { [self] in startWhatMay() }
        }
    }

    private func startWhatMay() {
        while let (entry, connection) = state.withLock({ Self.next(in: &$0, limits: limits) }) {
            start(entry, connection)
        }
    }

    /// The next entry to probe within the limits, marked running; nil when none may start.
    private static func next(in state: inout State, limits: Limits) -> (Int, ConnectionUse)? {
        for priority in [ProbePriority.reader, .listing, .background] {
            guard let entry = first(priority, in: &state) else { continue }
            // Where a listing's probes came back otherwise (HTTP/1.1, plain http), they go as
            // any other (for the whole mount: what one server answers is taken for all).
            let connection: ConnectionUse = state.listed.contains(entry) && state.streamsWork != false ? .stream : .own
            // Streams known to work take no connection of their own.
            let holdsConnection = !(connection == .stream && state.streamsWork == true)
            if holdsConnection {
                guard state.runningOwn < limits.total else { return nil }
                if priority < .reader, state.runningLow >= limits.lowPriority { return nil }
            } else if state.runningStreams >= limits.streams {
                continue
            }
            if priority == .background, let until = state.backgroundHeldUntil, ContinuousClock.now < until { return nil }
            state.heads[priority.rawValue] += 1
            state.waiting[entry] = nil
            state.listed.remove(entry)
            compact(priority.rawValue, in: &state)
            state.running[entry] = Running(priority: priority, connection: connection, holdsConnection: holdsConnection)
            if holdsConnection {
                state.runningOwn += 1
                if priority < .reader { state.runningLow += 1 }
            } else {
                state.runningStreams += 1
            }
            return (entry, connection)
        }
        return nil
    }

    /// The first entry still waiting at `priority`, left at the head of its queue (stale
    /// entries before it are passed over).
    private static func first(_ priority: ProbePriority, in state: inout State) -> Int? {
        let queue = priority.rawValue
        while state.heads[queue] < state.queues[queue].count {
            let entry = state.queues[queue][state.heads[queue]]
            if state.waiting[entry] == priority { return entry }
            state.heads[queue] += 1
        }
        compact(queue, in: &state)
        return nil
    }

    /// Drops the taken part of a queue once it is most of it.
    private static func compact(_ queue: Int, in state: inout State) {
        let head = state.heads[queue]
        guard head > 64, head * 2 > state.queues[queue].count else { return }
        state.queues[queue].removeFirst(head)
        state.heads[queue] = 0
    }
}
