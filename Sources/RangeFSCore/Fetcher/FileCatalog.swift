import Foundation
import Logging
import Synchronization

/// The remote files of a mount, by URL: finds each one's size on first use (once, however
/// many callers ask at the same time), remembers it in the cache database, and hands out
/// the `CachedFile` that serves its reads.
public final class FileCatalog: Sendable {
    public let manifest: Manifest
    private let environment: FetchEnvironment
    private let blockSize: UInt64
    /// What the database knew when the mount started.
    private let storedRecords: [String: CachedFileRecord]
    private let slots = Mutex<[String: Slot]>([:])

    private enum Slot {
        case probing([@Sendable (Result<CachedFile, FetchError>) -> Void])
        case ready(CachedFile)
    }

    public init(manifest: Manifest, blockSize: UInt64, environment: FetchEnvironment) throws {
        precondition(blockSize > 0, "block size must be positive")
        self.manifest = manifest
        self.blockSize = blockSize
        self.environment = environment
        storedRecords = try environment.store.allRecords()
    }

    /// The file for a manifest entry, once its size is known (at once when it already is).
    public func file(forEntry index: Int, completion: @escaping @Sendable (Result<CachedFile, FetchError>) -> Void) {
        let entry = manifest.entries[index]
        let key = entry.url.absoluteString
        enum Next { case ready(CachedFile), wait, probe }
        let next = slots.withLock { slots -> Next in
            switch slots[key] {
            case .ready(let file):
                return .ready(file)
            case .probing(var waiting):
                waiting.append(completion)
                slots[key] = .probing(waiting)
                return .wait
            case nil:
                if let record = storedRecords[key] {
                    let file = CachedFile(record: record, url: entry.url, headers: entry.headers, environment: environment)
                    slots[key] = .ready(file)
                    return .ready(file)
                }
                slots[key] = .probing([completion])
                return .probe
            }
        }
        switch next {
        case .ready(let file): completion(.success(file))
        case .wait: break
        case .probe: probe(entry)
        }
    }

    /// The file for an entry if its size is already known, without waiting.
    public func knownFile(forEntry index: Int) -> CachedFile? {
        let key = manifest.entries[index].url.absoluteString
        return slots.withLock { slots in
            if case .ready(let file) = slots[key] { return file }
            return nil
        }
    }

    /// The total size of the files whose size is known, for `statfs`.
    public var knownBytes: UInt64 {
        slots.withLock { slots in
            slots.values.reduce(0) { total, slot in
                if case .ready(let file) = slot { return total + file.layout.fileSize }
                return total
            }
        }
    }

    /// Starts size discovery for many entries at once (a directory listing is coming).
    public func discoverSizes(ofEntries indices: some Sequence<Int>) {
        for index in indices {
            file(forEntry: index) { _ in }
        }
    }

    private func probe(_ entry: ManifestEntry, attempt: Int = 1) {
        environment.client.probe(url: entry.url, headers: entry.headers) { [self] result in
            let key = entry.url.absoluteString
            let outcome: Result<CachedFile, FetchError>
            if case .failure(let error) = result, error.isTransient, attempt < environment.policy.maxAttempts {
                let delay = environment.policy.retryDelay(attempt: attempt + 1)
                environment.logger.debug("size of \(entry.url.redactedForDisplay): \(error); retry \(attempt) in \(delay)")
                DispatchQueue.global().asyncAfter(deadline: .now() + delay.timeInterval) { [self] in
                    probe(entry, attempt: attempt + 1)
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
                    lastAccess: Date().timeIntervalSince1970)
                // Saved before any block of it can be committed: commits run on the same queue.
                let store = environment.store
                let logger = environment.logger
                environment.committer.schedule {
                    do { try store.save(record) } catch { logger.error("\(error)") }
                }
                outcome = .success(CachedFile(record: record, url: entry.url, headers: entry.headers, environment: environment))
            case .failure(let error):
                environment.logger.error("size of \(entry.url.redactedForDisplay) unknown: \(error)")
                outcome = .failure(FetchError("\(entry.url.redactedForDisplay): \(error)"))
            }
            let waiting = slots.withLock { slots -> [@Sendable (Result<CachedFile, FetchError>) -> Void] in
                guard case .probing(let waiting) = slots[key] else { return [] }
                switch outcome {
                case .success(let file): slots[key] = .ready(file)
                // A failed probe is not remembered: the next look-up asks again.
                case .failure: slots[key] = nil
                }
                return waiting
            }
            for completion in waiting { completion(outcome) }
        }
    }

    /// Stops every transfer and makes what was fetched durable (at unmount).
    public func shutdown() {
        environment.client.shutdown()
        environment.committer.drain()
    }
}
