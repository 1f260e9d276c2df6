import Foundation
import Synchronization

/// How hard programs read the mount right now: for rule 7 of the scheduling note
/// (`TransferPurpose.swift`). A program that reads cached data at hundreds of megabytes a second
/// is bound by this machine's CPUs and memory; background transfers from a server as fast as
/// loopback share those with it (receiving, copying and writing the rest of a collection), and
/// cost such a program a quarter of its speed on a small machine (docs/benchmarks.md, "What the
/// background costs fio's 128 KiB reads"). From a distant server they cost it nearly nothing.
///
/// Every read a program makes through an open handle is counted here; a window of `window` in
/// which they asked for `hardBytesPerSecond`'s worth or more marks the reading hard until `hold`
/// after it. Read and written from any thread (the kernel's reads come on several).
final class ProgramReads: Sendable {
    /// The span reads are summed over.
    static let window: Duration = .milliseconds(100)

    /// Bytes within one window that make the reading hard.
    private let hardBytesPerWindow: UInt64
    private let hold: Duration
    /// The current window's start and the bytes asked for in it. A leaf lock, held only to add.
    private let current = Mutex<(start: ContinuousClock.Instant, bytes: UInt64)>((.now, 0))
    /// Reading counts as hard until then.
    private let hardUntil = QuietDeadline()

    init(hardBytesPerSecond: UInt64, hold: Duration) {
        hardBytesPerWindow = UInt64(Double(hardBytesPerSecond) * Self.window.timeInterval)
        self.hold = hold
    }

    /// A program asked for `bytes` bytes.
    func read(_ bytes: UInt64, at now: ContinuousClock.Instant = .now) {
        let hard = current.withLock { window -> Bool in
            if now - window.start >= Self.window { window = (now, 0) }
            window.bytes += bytes
            return window.bytes >= hardBytesPerWindow
        }
        if hard { hardUntil.extend(by: hold) }
    }

    /// How long the reading still counts as hard if no other read comes; nil: it is not hard.
    var hardTimeLeft: Duration? {
        let left = hardUntil.timeLeft
        return left > .zero ? left : nil
    }
}
