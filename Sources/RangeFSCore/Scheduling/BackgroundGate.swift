import Foundation
import Synchronization

/// Whether background transfers must stand still right now: a reader waits on the network
/// (a foreground transfer handed in or running), a program was just handed a complete file
/// (`quiet`), a program walks the tree without opening files (`headsQuiet`, heads and tails
/// too), or background work is paused (all of it). Background transfers check it in their
/// write callback, so they stop within one buffer even while the loop is inside a long
/// `curl_multi_perform`, instead of draining whole chunks first.
final class BackgroundGate: Sendable {
    private let foregroundWaiting = Atomic<Bool>(false)
    private let foregroundRunning = Atomic<Bool>(false)
    private let paused = Atomic<Bool>(false)
    /// Whole-file background work stands still until then, though no reader waits.
    let quiet = QuietDeadline()
    /// All background work stands still until then, heads and tails too.
    let headsQuiet = QuietDeadline()

    /// What stands still right now. The loop (starting and holding transfers) and the write
    /// callbacks (pausing themselves) all ask this one rule.
    var holds: Holds {
        let heads = paused.load(ordering: .acquiring) || headsQuiet.timeLeft > .zero
        let wholeFiles = heads || foregroundWaiting.load(ordering: .acquiring)
            || foregroundRunning.load(ordering: .acquiring) || quiet.timeLeft > .zero
        return Holds(heads: heads, wholeFiles: wholeFiles)
    }

    /// Which background work stands still, read once.
    struct Holds {
        /// Heads and tails (`backgroundAhead`) too: paused, or a walk of a near server.
        let heads: Bool
        /// Whole-file work (`background`): also while a reader waits, or after a complete file opened.
        let wholeFiles: Bool

        /// Whether a transfer of `spec` stands still; foreground ones never do.
        func hold(_ spec: TransferSpec) -> Bool {
            spec.isHeldWhileReadersWait ? wholeFiles : spec.isBackground && heads
        }
    }

    /// How long until a quiet ends and background work may go on (nil: none holds it).
    var quietTimeLeft: Duration? {
        let left = max(quiet.timeLeft, headsQuiet.timeLeft)
        return left > .zero ? left : nil
    }

    func foregroundArrived() { foregroundWaiting.store(true, ordering: .releasing) }
    func foregroundTaken() { foregroundWaiting.store(false, ordering: .releasing) }
    func setForegroundRunning(_ running: Bool) { foregroundRunning.store(running, ordering: .releasing) }
    func setPaused(_ value: Bool) { paused.store(value, ordering: .releasing) }
}

/// A moment until which something holds, extended by whoever asks for longer and never
/// shortened; read and extended from any thread.
final class QuietDeadline: Sendable {
    /// `DispatchTime` uptime in nanoseconds; 0 when never set.
    private let until = Atomic<UInt64>(0)

    var timeLeft: Duration {
        let now = DispatchTime.now().uptimeNanoseconds
        let end = until.load(ordering: .acquiring)
        return end > now ? .nanoseconds(end - now) : .zero
    }

    /// Holds for at least `duration` from now. Returns true when it did not hold before (the
    /// caller then wakes whoever must start standing still).
    @discardableResult
    func extend(by duration: Duration) -> Bool {
        let now = DispatchTime.now().uptimeNanoseconds
        let deadline = now + UInt64(max(0, duration.timeInterval) * 1_000_000_000)
        var current = until.load(ordering: .acquiring)
        let wasHolding = current > now
        while current < deadline {
            let (exchanged, found) = until.compareExchange(expected: current, desired: deadline, ordering: .acquiringAndReleasing)
            if exchanged { break }
            current = found
        }
        return !wasHolding
    }
}
