import Dispatch
import Foundation

/// Threads that can be waited for, with a bound: Foundation's `Thread` cannot be joined.
final class WorkerThreads: Sendable {
    private let group = DispatchGroup()

    /// `body` runs on a new thread. A thread started by another of the group's threads is
    /// counted before its starter finishes, so `waitForAll` cannot miss it.
    func start(name: String, _ body: @escaping @Sendable () -> Void) {
        group.enter()
        let thread = Thread { [group] in
            body()
            group.leave()
        }
        thread.name = name
        thread.start()
    }

    func waitForAll(timeout: Duration) -> Bool {
        let (seconds, attoseconds) = timeout.components
        let nanos = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        return group.wait(timeout: .now() + .nanoseconds(nanos)) == .success
    }
}
