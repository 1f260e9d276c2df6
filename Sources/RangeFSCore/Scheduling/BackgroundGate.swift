import Foundation
import Synchronization

/// Why background work stands still for a while though no reader waits (rule 2 of the
/// scheduling note, `TransferPurpose.swift`).
public enum BackgroundQuiet: Sendable, Equatable {
    /// A program was handed a complete file, which the kernel reads from the cache disk
    /// unseen: whole-file work stands still, heads and tails go on (`quietAfterCompleteOpen`).
    case completeFileOpened
    /// A program reads cached bytes faster than a link brings them, bound by the CPU and the
    /// cache disk: heads and tails stand still too, since they take the same CPU and a scan
    /// reads its cached heads far slower (`CachedReadPace`, `quietAfterFastCachedReads`).
    case fastCachedReads
    /// A program walks a near server's tree without opening files, bound by the CPU: heads and
    /// tails stand still too (`walkQuiet`, `FileCatalog.treeWalked`).
    case treeWalk
    /// The mount has just started: a program's first requests have the server and the link to
    /// themselves, heads and tails included (`mountGrace`).
    case mountGrace

    /// Heads and tails stand still too, not only whole-file work.
    var holdsHeadsAndTails: Bool {
        switch self {
        case .completeFileOpened: false
        case .fastCachedReads, .treeWalk, .mountGrace: true
        }
    }

    /// Whether a listing that took `listingTime` (from its request to its first byte: the
    /// server's answer, not a wait for a connection) came from a distant server.
    static func isDistant(listingTime: Duration, policy: FetchPolicy) -> Bool {
        listingTime >= policy.distantListingTime
    }

    /// Whether a program's walk of the tree quiets all background work: no file was opened,
    /// and no listing came from a distant server, for `scanOpensWithin`. A walk that waits on a
    /// distant server leaves the CPU idle, and the heads fetched meanwhile serve the scan that
    /// usually follows; a scanner opens the files it walks to.
    static func walkQuiets(sinceLastOpen: Duration, sinceLastDistantListing: Duration, policy: FetchPolicy) -> Bool {
        sinceLastOpen > policy.scanOpensWithin && sinceLastDistantListing > policy.scanOpensWithin
    }
}

/// Whether background transfers must stand still right now: a reader waits on the network
/// (a transfer that makes background wait handed in or running), a quiet holds them
/// (`BackgroundQuiet`), or background work is paused (all of it). Background transfers check it
/// in their write callback, so they stop within one buffer even while the loop is inside a long
/// `curl_multi_perform`, instead of draining whole chunks first. Atomics only: read from the
/// loop thread and the write callbacks, set from any thread, no lock taken.
final class BackgroundGate: Sendable {
    private let readerWaiting = Atomic<Bool>(false)
    private let readerRunning = Atomic<Bool>(false)
    private let paused = Atomic<Bool>(false)
    /// Whole-file background work stands still until then, though no reader waits.
    private let wholeFilesQuiet = QuietDeadline()
    /// All background work stands still until then, heads and tails too.
    private let allQuiet = QuietDeadline()

    /// The deadline a quiet for `reason` extends.
    func quiet(_ reason: BackgroundQuiet) -> QuietDeadline {
        reason.holdsHeadsAndTails ? allQuiet : wholeFilesQuiet
    }

    /// What stands still right now. The loop (starting and holding transfers) and the write
    /// callbacks (pausing themselves) all ask this one rule.
    var holds: Holds {
        let headsAndTails = paused.load(ordering: .acquiring) || allQuiet.timeLeft > .zero
        let background = headsAndTails || readerWaiting.load(ordering: .acquiring)
            || readerRunning.load(ordering: .acquiring) || wholeFilesQuiet.timeLeft > .zero
        return Holds(headsAndTails: headsAndTails, background: background)
    }

    /// Which background work stands still, read once.
    struct Holds {
        /// `headsAndTails` too: paused, fast reads of cached bytes, a walk of a near server, the
        /// mount's first moments.
        let headsAndTails: Bool
        /// `background`: also while a reader waits, or after a complete file opened.
        let background: Bool

        /// Whether a transfer of `purpose` stands still; only background work ever does.
        func hold(_ purpose: TransferPurpose) -> Bool {
            purpose.waitsWhileReadersWait ? background : purpose.isBackgroundWork && headsAndTails
        }
    }

    /// How long until a quiet ends and background work may go on (nil: none holds it).
    var quietTimeLeft: Duration? {
        let left = max(wholeFilesQuiet.timeLeft, allQuiet.timeLeft)
        return left > .zero ? left : nil
    }

    /// A transfer that makes background wait was handed in (or raised).
    func readerArrived() { readerWaiting.store(true, ordering: .releasing) }
    /// The loop took what was handed in: it knows of those transfers itself from now on.
    func readersTaken() { readerWaiting.store(false, ordering: .releasing) }
    func setReaderRunning(_ running: Bool) { readerRunning.store(running, ordering: .releasing) }
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
