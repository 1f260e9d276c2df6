import Dispatch
import Synchronization

/// Makes cached data durable off the transfer thread, one file at a time:
/// `fdatasync` first, then the bitmap in the database, so a crash can never mark a block
/// present that is not on disk. The mount's other database writes (probed sizes, kept
/// listings, learned head and tail sizes) go the same way, in order with the commits.
public final class Committer: Sendable {
    private let queue = DispatchQueue(label: "rangefs.commit")
    /// Work scheduled for later (`schedule(after:)`) that has not run yet, so that `drain` can
    /// run it at once. A leaf lock: nothing is called while it is held.
    private let delayed = Mutex(DelayedWork())

    /// A struct, not a tuple, around the closures (ARCHITECTURE.md, "Lock order", says why).
    private struct DelayedWork {
        var nextTicket = 0
        var work: [Int: @Sendable () -> Void] = [:]
    }

    public init() {}

    public func schedule(_ work: @escaping @Sendable () -> Void) {
        queue.async(execute: work)
    }

    /// Runs `work` on the commit queue after `delay`, or sooner if the queue is drained first.
    public func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) {
        let ticket = delayed.withLock { delayed in
            delayed.nextTicket += 1
            delayed.work[delayed.nextTicket] = work
            return delayed.nextTicket
        }
        queue.asyncAfter(deadline: .now() + delay.timeInterval) { [self] in
            delayed.withLock { $0.work.removeValue(forKey: ticket) }?()
        }
    }

    /// Runs `work` on the commit queue and waits for it.
    func sync<T>(_ work: () throws -> T) rethrows -> T {
        try queue.sync(execute: work)
    }

    /// Returns once everything scheduled so far is committed, what was scheduled for later
    /// included (used at unmount).
    public func drain() {
        queue.sync {
            let pending = delayed.withLock { delayed in
                defer { delayed.work = [:] }
                return delayed.work.sorted { $0.key < $1.key }.map(\.value)
            }
            for work in pending { work() }
        }
    }
}
