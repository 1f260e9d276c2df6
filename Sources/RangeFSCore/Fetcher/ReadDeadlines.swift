import Dispatch
import Synchronization

/// Fails the reads that waited past the read deadline (`FetchPolicy.readDeadline`): one timer
/// for the whole mount looks at the files readers wait on every `interval`, instead of a timer
/// per waiting read. Arming a libdispatch timer wakes its manager thread, which on a small
/// machine took a CPU from the very transfer the read was waiting for (docs/benchmarks.md, "A
/// cold 4 KiB read, step by step"). A late read fails up to one `interval` after its deadline.
final class ReadDeadlines: Sendable {
    let interval: Duration
    /// The files watched, each with how often a reader was queued on it: the sweep drops a file
    /// that has no waiting reader only if no reader was queued since it looked (the files' own
    /// locks are never taken under this one, and files call `watch` after releasing theirs). A
    /// leaf lock.
    private let watched = Mutex<[ObjectIdentifier: (file: CachedFile, queued: Int)]>([:])

    /// `readDeadline`: the policy's; deadlines are looked at a quarter of it apart, at most a
    /// second. The sweeps go on, off the read path, until nothing refers to this any more.
    init(readDeadline: Duration) {
        interval = max(min(readDeadline / 4, .seconds(1)), .milliseconds(10))
        scheduleSweep()
    }

    private func scheduleSweep() {
        DispatchQueue.global().asyncAfter(deadline: .now() + interval.timeInterval) { [weak self] in
            guard let self else { return }
            sweep(now: .now)
            scheduleSweep()
        }
    }

    /// A reader was queued on `file`: its deadline is watched until no reader waits there.
    func watch(_ file: CachedFile) {
        watched.withLock { watched in
            let key = ObjectIdentifier(file)
            watched[key] = (file, (watched[key]?.queued ?? 0) + 1)
        }
    }

    /// Fails every read waiting past its deadline now, and stops watching files nobody waits on.
    func sweep(now: ContinuousClock.Instant) {
        let looked = watched.withLock { $0 }
        var idle: [ObjectIdentifier: Int] = [:]
        for (key, entry) in looked where !entry.file.expireLateReads(now: now) {
            idle[key] = entry.queued
        }
        guard !idle.isEmpty else { return }
        watched.withLock { watched in
            for (key, queued) in idle where watched[key]?.queued == queued {
                watched[key] = nil
            }
        }
    }

    /// How many files are watched now (for tests).
    var watchedCount: Int {
        watched.withLock { $0.count }
    }
}
