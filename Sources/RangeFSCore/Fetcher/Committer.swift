import Dispatch

/// Makes cached data durable off the transfer thread, one file at a time:
/// `fdatasync` first, then the bitmap in the database, so a crash can never mark a block
/// present that is not on disk. The mount's other database writes (probed sizes, kept
/// listings, learned head and tail sizes) go the same way, in order with the commits.
public final class Committer: Sendable {
    private let queue = DispatchQueue(label: "rangefs.commit")

    public init() {}

    public func schedule(_ work: @escaping @Sendable () -> Void) {
        queue.async(execute: work)
    }

    /// Runs `work` on the commit queue and waits for it.
    func sync<T>(_ work: () throws -> T) rethrows -> T {
        try queue.sync(execute: work)
    }

    /// Returns once everything scheduled so far is committed (used at unmount).
    public func drain() {
        queue.sync {}
    }
}
