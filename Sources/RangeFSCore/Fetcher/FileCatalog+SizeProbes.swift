import Foundation
import Logging
import Synchronization

/// Size discovery: each URL's size and validator, asked once however many callers wait,
/// retried when transient, and saved in batches so a remount knows them without asking.
extension FileCatalog {
    /// Why finding the entry's size failed last time, if it did.
    public func probeFailure(forEntry index: Int) -> String? {
        let key = manifest.entries[index].urlString
        return probeFailures.withLock { $0[key] }
    }

    func probe(_ entry: ManifestEntry, index: Int, attempt: Int = 1) {
        environment.client.probe(url: entry.url, headers: entry.headers) { [self] result in
            let key = entry.urlString
            let outcome: Result<CachedFile, FetchError>
            if case .failure(let error) = result, let delay = environment.policy.retryDelay(after: error, attempts: attempt) {
                environment.logger.debug("size of \(entry.url.redactedForDisplay): \(error); retry \(attempt) in \(delay)")
                DispatchQueue.global().asyncAfter(deadline: .now() + delay.timeInterval) { [self] in
                    probe(entry, index: index, attempt: attempt + 1)
                }
                return
            }
            switch result {
            case .success(let info):
                let record = CachedFileRecord(
                    url: key, dataName: UUID().uuidString.lowercased(), size: info.size,
                    etag: info.validator.etag, lastModified: info.validator.lastModified,
                    modified: info.modified?.timeIntervalSince1970, blockSize: blockSize,
                    bitmap: Data(BlockBitmap(blockCount: BlockLayout(fileSize: info.size, blockSize: blockSize).blockCount).serialized),
                    state: info.size == 0 ? .complete : .remote, failure: nil,
                    lastAccess: Date().timeIntervalSince1970, pinned: false,
                    location: info.finalURL?.absoluteString)
                remember(record)
                probeFailures.withLock { $0[key] = nil }
                outcome = .success(makeFile(record: record, entry: entry))
            case .failure(let error):
                let repeated = probeFailures.withLock { failures in
                    defer { failures[key] = error.description }
                    return failures[key] == error.description
                }
                // Said once per failure, not once per look-up that runs into it.
                if !repeated {
                    environment.logger.error("size of \(entry.url.redactedForDisplay) unknown: \(error)")
                }
                outcome = .failure(FetchError(entry.url, error))
            }
            let waiting = slots.withLock { slots -> [@Sendable (Result<CachedFile, FetchError>) -> Void] in
                guard case .probing(_, let waiting) = slots[key] else { return [] }
                switch outcome {
                case .success(let file): slots[key] = .ready(file)
                // A failed probe is not remembered: the next look-up asks again.
                case .failure: slots[key] = nil
                }
                return waiting
            }
            probeQueue.finished(index)
            // Looked up again just as this probe failed: that look-up needs a probe of its own.
            if isAwaitingProbe(key, by: index) { probeQueue.enqueue(index, priority: .reader) }
            for completion in waiting { completion(outcome) }
        }
    }

    /// True while the slot of `key` waits for a probe of entry `index`.
    func isAwaitingProbe(_ key: String, by index: Int) -> Bool {
        slots.withLock { slots in
            if case .probing(index, _) = slots[key] { return true }
            return false
        }
    }


    /// Saves what a probe found, so a remount knows the size without asking. Records are saved
    /// in batches, one transaction each, on the commit queue: every commit of a file's blocks
    /// is scheduled after its probe, so it still finds the record saved.
    func remember(_ record: CachedFileRecord) {
        let first = unsavedRecords.withLock { unsaved -> Bool in
            unsaved.records.append(record)
            defer { unsaved.saveScheduled = true }
            return !unsaved.saveScheduled
        }
        guard first else { return }
        let store = environment.store
        let logger = environment.logger
        environment.committer.schedule { [self] in
            let records = unsavedRecords.withLock { unsaved in
                defer { unsaved = ([], false) }
                return unsaved.records
            }
            do { try store.save(records) } catch { logger.error("\(error)") }
        }
    }
}
