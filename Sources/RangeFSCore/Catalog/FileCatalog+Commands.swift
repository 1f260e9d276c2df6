import Foundation
import Logging
import Synchronization

/// The administrative commands on cached files: `evict`, `verify`, `pin`/`unpin`.
extension FileCatalog {
    /// `rangefs evict`: drops the cached data of these entries (all when empty) that nobody uses.
    /// Returns the paths that were busy and kept.
    public func evict(entries: [Int]) -> [String] {
        let targets = entries.isEmpty ? activeEntries : entries
        let manifest = self.manifest
        var busy: [String] = []
        environment.committer.sync { [self] in
            let records = (try? environment.store.allRecords()) ?? [:]
            for index in targets {
                let entry = manifest.entries[index]
                guard let record = records[CacheKey.of(entry.urlString)], record.state != .remote else { continue }
                if record.pinned || eviction.evict(record) == nil { busy.append(entry.path.description) }
            }
        }
        return busy
    }

    /// `rangefs verify`: asks the server about every file with cached data and discards the
    /// versions that changed. Returns one line per changed or unreachable file, at most after
    /// `timeout`.
    public func verify(timeout: Duration) -> (checked: Int, problems: [String]) {
        let manifest = self.manifest
        let indices = activeEntries.filter { index in
            if let file = knownFile(forEntry: index) { return file.snapshot.cachedBytes > 0 || file.isRejected }
            let stored = files.storedRecord(CacheKey.of(manifest.entries[index].urlString))
            return stored.map { $0.state != .remote } ?? false
        }
        let problems = Mutex<[String]>([])
        let group = DispatchGroup()
        // One question per URL, its answer said for every entry that shows it: asking again for
        // a second entry could meet the new version already loaded, and say nothing of it.
        let byURL = Dictionary(grouping: indices) { manifest.entries[$0].urlString }
        for (_, sharing) in byURL.sorted(by: { $0.key < $1.key }) {
            let paths = sharing.map { manifest.entries[$0].path.description }
            let index = sharing[0]
            group.enter()
            file(forEntry: index) { [self] result in
                guard case .success(let file) = result else {
                    problems.withLock { $0 += paths.map { "\($0): size unknown" } }
                    return group.leave()
                }
                let (url, headers) = file.verificationRequest
                environment.client.probe(url: url, headers: headers, connection: .own) { outcome in
                    switch outcome {
                    case .success(let info):
                        if let why = file.verify(against: info, probedURL: url) {
                            problems.withLock { $0 += paths.map { "\($0): changed (\(why)); cached data discarded" } }
                        } else if file.isRejected {
                            let reason = file.snapshot.lastFailure ?? "failed"
                            problems.withLock { $0 += paths.map { "\($0): \(reason); the server still has that version" } }
                        }
                    case .failure(let error):
                        problems.withLock { $0 += paths.map { "\($0): \(error)" } }
                    }
                    group.leave()
                }
            }
        }
        if group.wait(timeout: .now() + timeout.timeInterval) == .timedOut {
            problems.withLock { $0.append("verification stopped after \(timeout); some files were not checked") }
        }
        return (indices.count, problems.withLock { $0 })
    }

    /// `rangefs pin`: keeps these entries whatever the limits (pinned = true) or releases them.
    public func setPinned(entries: [Int], _ pinned: Bool) {
        for index in entries {
            let key = CacheKey.of(manifest.entries[index].urlString)
            let store = environment.store
            // After the record exists: pinning asks for its size first.
            file(forEntry: index) { [environment] _ in
                environment.committer.schedule {
                    try? store.setPinned(url: key, pinned)
                }
            }
        }
    }
}
