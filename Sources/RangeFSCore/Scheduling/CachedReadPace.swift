import Foundation
import Synchronization

/// How fast programs read bytes the cache already holds, window by window. A program that
/// reads them faster than `quietBytesPerSecond` (a copy, a checksum, fio over a cached region)
/// waits on this machine's CPU and disk, not on the link; background work, which
/// takes the same CPU and writes the same disk at the link's speed, then stands still while it
/// reads (`BackgroundQuiet.fastCachedReads`), unless its server is known to be slower than
/// such reads (`CachedFile.noteCachedRead`). A player reads tens of MB/s at most and stays
/// below it.
///
/// Atomics only, no lock: the libfuse workers answering reads note them. Two workers that
/// open a new window at once may drop a few bytes from its count; a quiet needs no exact one.
final class CachedReadPace: Sendable {
    private let windowNanoseconds: UInt64
    /// Bytes one window holds at the threshold's rate.
    private let bytesPerWindow: UInt64
    /// `DispatchTime` uptime in nanoseconds at which the current window began; 0 before any read.
    private let windowStart = Atomic<UInt64>(0)
    private let bytesInWindow = Atomic<UInt64>(0)

    init(window: Duration, quietBytesPerSecond: UInt64) {
        windowNanoseconds = max(1, UInt64(window.timeInterval * 1_000_000_000))
        bytesPerWindow = max(1, UInt64(Double(quietBytesPerSecond) * window.timeInterval))
    }

    /// Notes a read of `bytes` answered from the cache at `now` (uptime nanoseconds). True once
    /// a window, when its reads reach the threshold: the caller then quiets background work.
    func noteRead(_ bytes: UInt64, at now: UInt64 = DispatchTime.now().uptimeNanoseconds) -> Bool {
        let start = windowStart.load(ordering: .relaxed)
        if start == 0 || now > start && now - start >= windowNanoseconds {
            if windowStart.compareExchange(expected: start, desired: now, ordering: .relaxed).exchanged {
                bytesInWindow.store(0, ordering: .relaxed)
            }
        }
        let before = bytesInWindow.wrappingAdd(bytes, ordering: .relaxed).oldValue
        return before < bytesPerWindow && before &+ bytes >= bytesPerWindow
    }
}
