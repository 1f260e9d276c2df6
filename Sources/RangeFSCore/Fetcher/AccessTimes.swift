import Foundation
import Logging
import Synchronization

/// When each cached file was last opened, which orders eviction (least recently used first).
/// An open only notes the time here; the times noted are written together, in one transaction
/// on the commit queue, `delay` after the first of them, and before eviction chooses files by
/// them (`writeNoted`, which eviction calls on that queue). An open then neither wakes the
/// commit queue nor has a database write take the processor beside its reader's first request.
/// A crash loses at most the last `delay` of access times: eviction's order, no fetched byte.
final class AccessTimes: Sendable {
    private struct Noted {
        var times: [String: Date] = [:]
        var writeScheduled = false
    }

    /// A leaf lock: held only to note a time or take those noted.
    private let noted = Mutex(Noted())
    private let store: MetadataStore
    private let committer: Committer
    private let delay: Duration
    private let logger: Logger

    init(store: MetadataStore, committer: Committer, delay: Duration, logger: Logger) {
        self.store = store
        self.committer = committer
        self.delay = delay
        self.logger = logger
    }

    /// The file known by `key` was opened at `date`.
    func note(_ key: String, at date: Date) {
        let first = noted.withLock { noted -> Bool in
            noted.times[key] = date
            defer { noted.writeScheduled = true }
            return !noted.writeScheduled
        }
        guard first else { return }
        committer.schedule(after: delay) { [self] in writeNoted() }
    }

    /// Writes the times noted so far. Runs on the commit queue.
    func writeNoted() {
        let times = noted.withLock { noted in
            defer { noted = Noted() }
            return noted.times
        }
        guard !times.isEmpty else { return }
        do { try store.touch(times) } catch { logger.warning("cannot note when files were last used: \(error)") }
    }
}
