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
final class ProbeQueue: Sendable {
    struct Limits: Sendable {
        /// Probes at once: the client's connections per host.
        var total = 8
        /// Probes at once for listings and the background, so readers always find room.
        var lowPriority = 6
        /// How long background probes wait after a probe a reader waited on ended.
        var afterReader = FetchPolicy().probeGraceAfterReader
    }

    private struct State {
        var queues: [[Int]] = Array(repeating: [], count: 3)
        /// Where each queue's next entry is (entries before it were taken).
        var heads: [Int] = Array(repeating: 0, count: 3)
        /// The priority each waiting entry is queued at; entries elsewhere in the queues are stale.
        var waiting: [Int: ProbePriority] = [:]
        /// The priority each running probe started at.
        var running: [Int: ProbePriority] = [:]
        var runningLow = 0
        /// Running probes a reader began to wait on after they started at a lower priority.
        var awaitedByReader: Set<Int> = []
        /// Background probes start no sooner (`Limits.afterReader`).
        var backgroundHeldUntil: ContinuousClock.Instant?
    }

    private let limits: Limits
    private let state = Mutex(State())
    private let start: @Sendable (Int) -> Void

    /// `start` begins the probe of an entry; `finished` must be called once it ends.
    init(limits: Limits = Limits(), start: @escaping @Sendable (Int) -> Void) {
        self.limits = limits
        self.start = start
    }

    /// Queues a probe of `entry`, or moves a queued one up to `priority`. A running one is left alone.
    func enqueue(_ entry: Int, priority: ProbePriority) {
        let changed = state.withLock { state -> Bool in
            if let running = state.running[entry] {
                if priority == .reader, running < .reader { state.awaitedByReader.insert(entry) }
                return false
            }
            if let queued = state.waiting[entry], queued >= priority { return false }
            state.waiting[entry] = priority
            state.queues[priority.rawValue].append(entry)
            return true
        }
        if changed { startWhatMay() }
    }

    /// The probe of `entry` ended (whatever its outcome).
    func finished(_ entry: Int) {
        let hold = limits.afterReader
        let holding = state.withLock { state -> Bool in
            let priority = state.running.removeValue(forKey: entry)
            if let priority, priority < .reader { state.runningLow -= 1 }
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
        while let entry = state.withLock({ Self.next(in: &$0, limits: limits) }) {
            start(entry)
        }
    }

    /// The next entry to probe within the limits, marked running; nil when none may start.
    private static func next(in state: inout State, limits: Limits) -> Int? {
        guard state.running.count < limits.total else { return nil }
        for priority in [ProbePriority.reader, .listing, .background] {
            if priority < .reader, state.runningLow >= limits.lowPriority { return nil }
            if priority == .background, let until = state.backgroundHeldUntil, ContinuousClock.now < until { return nil }
            let queue = priority.rawValue
            while state.heads[queue] < state.queues[queue].count {
                let entry = state.queues[queue][state.heads[queue]]
                state.heads[queue] += 1
                guard state.waiting[entry] == priority else { continue }
                state.waiting[entry] = nil
                state.running[entry] = priority
                if priority < .reader { state.runningLow += 1 }
                compact(queue, in: &state)
                return entry
            }
            compact(queue, in: &state)
        }
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
