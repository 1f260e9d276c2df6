import Foundation

/// Moments between two durable writes where a crash is hardest on the cache. With
/// `RANGEFS_STOP_AT=<name>` in its environment the process stops itself (SIGSTOP) on reaching
/// that moment, so that a test can `kill -9` it exactly there and check what a remount finds.
/// Without the variable each check is one comparison of a constant.
public enum CrashPoint: String, Sendable {
    /// The data file has its final name; the database does not yet say the file is complete.
    case promotion
    /// An evicted file's data is removed; the database still lists its blocks.
    case eviction

    private static let armed: CrashPoint? = ProcessInfo.processInfo.environment["RANGEFS_STOP_AT"].flatMap(CrashPoint.init)

    static func reached(_ point: CrashPoint) {
        guard armed == point else { return }
        raise(SIGSTOP)
    }
}
