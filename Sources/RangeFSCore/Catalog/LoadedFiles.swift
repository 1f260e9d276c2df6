import Foundation
import Logging
import Synchronization

/// The mount's loaded files, by URL, and how each is found: a file the cache database remembers
/// is loaded from its record; a file whose listing states its size exactly is made from that
/// size at once, its version named by its first range reply (`FilePlan+Version`); any other has
/// its size and validator asked of the server once, however many callers wait, in its turn
/// among the other probes (`ProbeQueue`), retried when transient. New records are saved in
/// batches so a remount knows them without asking.
final class LoadedFiles: Sendable {
    enum Slot {
        /// The entry whose probe finds the size (entries may share a URL), and who waits for it.
        case probing(entry: Int, [@Sendable (Result<CachedFile, FetchError>) -> Void])
        case ready(CachedFile)
    }

    /// Lock order: `slots` → `storedRecords`, and `slots` → `unsavedRecords` and
    /// `doubtedStatedSizes` (leaves: a file made from a stated size is checked and remembered
    /// before anyone can read it). `slots` is never held while a
    /// `CachedFile`'s state lock is taken, nor across a system call or a database call.
    private let slots = Mutex<[String: Slot]>([:])
    /// What the database knew when the mount started, for files not loaded yet (eviction empties
    /// their bitmaps here too, so a later load starts from what is left).
    private let storedRecords: Mutex<[String: CachedFileRecord]>
    /// Why the last size probe of a URL failed, until one succeeds (leaf lock).
    private let probeFailures = Mutex<[String: String]>([:])
    /// Probed records waiting to be saved; a directory walk probes thousands (leaf lock).
    private let unsavedRecords = Mutex<(records: [CachedFileRecord], saveScheduled: Bool)>(([], false))
    /// Size probes wait here for their turn (set once in `init`, leaf lock).
    private let probes = Mutex<ProbeQueue?>(nil)
    /// URLs whose version went away in this mount (changed, or another size than the listing
    /// stated): their stated size is not trusted again, a probe asks (leaf lock).
    private let doubtedStatedSizes = Mutex<Set<String>>([])

    /// The entries' stated sizes are exact (a listing's, not a manifest's, which may be stale).
    private let trustsStatedSizes: Bool

    private let environment: FetchEnvironment
    private let blockSize: UInt64
    /// The entry a probe queued by index is for (the catalog's current table); nil once the
    /// catalog is gone (an unmount with probes still running).
    private let entryAt: @Sendable (Int) -> ManifestEntry?
    /// Builds the `CachedFile` of a record for an entry (the catalog wires its events); nil
    /// once the catalog is gone.
    private let makeFile: @Sendable (CachedFileRecord, ManifestEntry) -> CachedFile?

    init(records: [String: CachedFileRecord], blockSize: UInt64, trustsStatedSizes: Bool, environment: FetchEnvironment,
         entryAt: @escaping @Sendable (Int) -> ManifestEntry?,
         makeFile: @escaping @Sendable (CachedFileRecord, ManifestEntry) -> CachedFile?) {
        storedRecords = Mutex(records)
        self.blockSize = blockSize
        self.trustsStatedSizes = trustsStatedSizes
        self.environment = environment
        self.entryAt = entryAt
        self.makeFile = makeFile
        let queue = ProbeQueue(limits: .init(afterReader: environment.policy.probeGraceAfterReader)) { [weak self] index, connection in
            guard let self else { return }
            guard let entry = entryAt(index) else { return probeQueue.finished(index) }
            // Its turn came after the size was already found (a probe queued twice).
            guard isAwaitingProbe(CacheKey.of(entry.urlString), by: index) else { return probeQueue.finished(index) }
            probe(entry, index: index, connection: connection)
        }
        probes.withLock { $0 = queue }
    }

    private var probeQueue: ProbeQueue {
        probes.withLock { $0! }
    }

    // MARK: Finding a file

    /// The file of `entry` (number `index`), at once when it is loaded or remembered, else once
    /// a probe found its size; the probe waits its turn according to `priority`.
    func file(for entry: ManifestEntry, index: Int, priority: ProbePriority,
              completion: @escaping @Sendable (Result<CachedFile, FetchError>) -> Void) {
        let key = CacheKey.of(entry.urlString)
        enum Next { case ready(CachedFile), probe(entry: Int), tooLarge(UInt64), unmounting }
        let next = slots.withLock { slots -> Next in
            switch slots[key] {
            case .ready(let file):
                return .ready(file)
            case .probing(let prober, var waiting):
                waiting.append(completion)
                slots[key] = .probing(entry: prober, waiting)
                return .probe(entry: prober)
            case nil:
                if let record = storedRecords.withLock({ $0[key] }) {
                    guard let file = makeFile(record, entry) else { return .unmounting }
                    slots[key] = .ready(file)
                    return .ready(file)
                }
                if let size = entry.size, entry.mirrors.isEmpty, mayTrustStatedSize(of: key) {
                    guard FileSizeLimit.accepts(size) else { return .tooLarge(size) }
                    // No probe: the first range request goes out now and its reply names the version
                    // (an SFTP listing's time is the version already: each read checks it).
                    let stated = SFTPVersion.isSFTP(entry.url) ? SFTPVersion.validator(modified: entry.modified)
                        : RemoteValidator(etag: nil, lastModified: nil)
                    let record = newRecord(url: key, size: size, validator: stated,
                                           modified: entry.modified, location: nil)
                    guard let file = makeFile(record, entry) else { return .unmounting }
                    remember(record)
                    slots[key] = .ready(file)
                    return .ready(file)
                }
                slots[key] = .probing(entry: index, [completion])
                return .probe(entry: index)
            }
        }
        switch next {
        case .ready(let file): completion(.success(file))
        // Also moves a queued probe up when a reader now waits on it.
        case .probe(let prober): probeQueue.enqueue(prober, priority: priority)
        case .tooLarge(let size): completion(.failure(refused(entry, size: size)))
        case .unmounting: completion(.failure(FetchError(entry.url, .unmounting)))
        }
    }

    /// The error for a size over `FileSizeLimit`, said once in the log and kept for status.
    private func refused(_ entry: ManifestEntry, size: UInt64) -> FetchError {
        let error = FetchError(entry.url, .tooLarge(size))
        noteFailure(of: entry, error.reason.description, logged: "\(error)")
        return error
    }

    /// Keeps why finding a URL's size failed, for status; logged once per failure, not once
    /// per look-up that runs into it.
    private func noteFailure(of entry: ManifestEntry, _ why: String, logged message: @autoclosure () -> String) {
        let repeated = probeFailures.withLock { failures in
            defer { failures[entry.urlString] = why }
            return failures[entry.urlString] == why
        }
        if !repeated { environment.logger.error("\(message())") }
    }

    /// The loaded file of a URL, without waiting.
    func loadedFile(_ key: String) -> CachedFile? {
        slots.withLock { slots in
            if case .ready(let file) = slots[key] { return file }
            return nil
        }
    }

    /// The loaded files among `keys`, in their order.
    func loadedFiles(_ keys: [String]) -> [CachedFile] {
        slots.withLock { slots in
            keys.compactMap { key in
                if case .ready(let file) = slots[key] { return file }
                return nil
            }
        }
    }

    /// The total size of the loaded files, for `statfs`.
    var loadedBytes: UInt64 {
        slots.withLock { slots in
            slots.values.saturatingSum { slot in
                if case .ready(let file) = slot { return file.layout.fileSize }
                return 0
            }
        }
    }

    /// Whether the size an entry of `key` states may be shown, and a file made from it,
    /// without asking the server.
    func mayTrustStatedSize(of key: String) -> Bool {
        trustsStatedSizes && !doubtedStatedSizes.withLock { $0.contains(key) }
    }

    /// What the database remembered of a URL at mount time, for a file not loaded.
    func storedRecord(_ key: String) -> CachedFileRecord? {
        storedRecords.withLock { $0[key] }
    }

    /// Why finding the size of a URL failed last time, if it did.
    func probeFailure(_ key: String) -> String? {
        probeFailures.withLock { $0[key] }
    }

    // MARK: Forgetting

    /// This version of the file is gone: the next look-up asks the server again (also when the
    /// mount started with a record of it).
    func forget(_ file: CachedFile) {
        let key = file.cacheKey
        doubtedStatedSizes.withLock { _ = $0.insert(key) }
        slots.withLock { slots in
            if case .ready(let current) = slots[key], current === file { slots[key] = nil }
            storedRecords.withLock { _ = $0.removeValue(forKey: key) }
        }
    }

    /// Eviction of a file that is not loaded (`saved` is its database record): the remembered
    /// record loses its blocks and gets a new data file name, so a load from now on never opens
    /// the files the caller is about to remove. Returns the emptied record, or nil when the file
    /// is loaded (ask it instead), with the data file name it had.
    func emptyStoredRecord(_ saved: CachedFileRecord) -> (emptied: CachedFileRecord, previousDataName: String)? {
        let key = saved.url
        return slots.withLock { slots -> (CachedFileRecord, String)? in
            guard slots[key] == nil else { return nil }
            return storedRecords.withLock { records -> (CachedFileRecord, String) in
                var record = records[key] ?? saved
                let previousDataName = record.dataName
                let layout = BlockLayout(fileSize: record.size, blockSize: record.blockSize)
                record.bitmap = Data(BlockBitmap(blockCount: layout.blockCount).serialized)
                record.state = layout.blockCount == 0 ? .complete : .remote
                record.dataName = Self.newDataName()
                if records[key] != nil { records[key] = record }
                return (record, previousDataName)
            }
        }
    }

    static func newDataName() -> String {
        UUID().uuidString.lowercased()
    }

    // MARK: Probing

    /// Asks the entry's URL number `source` (its URL, then its mirrors in turn while each
    /// fails for good, or has another size than the manifest states) for the size and validator.
    private func probe(_ entry: ManifestEntry, index: Int, connection: ConnectionUse, source: Int = 0, attempt: Int = 1) {
        let urls = entry.urls
        let target = urls[source]
        // The manifest's headers do not go to a mirror on another origin.
        let headers = FetchSource.headers(entry.headers, sentTo: target, origin: entry.url)
        environment.client.probe(url: target, headers: headers, connection: connection) { [self] answer in
            var result = answer
            // Among mirrors, one whose copy has another size than the manifest states is not the
            // file (its piece hashes could never match): the next one is asked.
            if urls.count > 1, let stated = entry.size, case .success(let info) = answer, info.size != stated {
                result = .failure(.protocolViolation("its size is \(info.size) bytes where the manifest states \(stated)"))
            }
            if case .failure(let error) = result, case .success = answer {
                if source + 1 < urls.count {
                    environment.logger.warning("\(entry.url.redactedForDisplay): \(target.redactedForDisplay) \(error); asking \(urls[source + 1].redactedForDisplay)")
                    return probe(entry, index: index, connection: connection, source: source + 1)
                }
                return finishProbe(of: entry, index: index, with: result)
            }
            if case .failure(let error) = result, let delay = environment.policy.retryDelay(after: error, attempts: attempt) {
                environment.logger.debug("size of \(target.redactedForDisplay): \(error); retry \(attempt) in \(delay)")
                DispatchQueue.global().asyncAfter(deadline: .now() + delay.timeInterval) { [self] in
                    probe(entry, index: index, connection: connection, source: source, attempt: attempt + 1)
                }
                return
            }
            if case .failure(let error) = result, source + 1 < urls.count {
                environment.logger.warning("size of \(entry.url.redactedForDisplay) not found at \(target.redactedForDisplay): \(error); asking \(urls[source + 1].redactedForDisplay)")
                return probe(entry, index: index, connection: connection, source: source + 1)
            }
            // A mirror that answered is where the record's ranges go (`FileSources` knows it by its URL).
            let answered = result.map { info in
                var info = info
                if source > 0, info.finalURL == nil { info.finalURL = target }
                return info
            }
            finishProbe(of: entry, index: index, with: answered)
        }
    }

    private func finishProbe(of entry: ManifestEntry, index: Int, with result: Result<RemoteFileInfo, RemoteError>) {
        let key = CacheKey.of(entry.urlString)
        let outcome: Result<CachedFile, FetchError>
        switch result {
        case .success(let info) where !FileSizeLimit.accepts(info.size):
            outcome = .failure(refused(entry, size: info.size))
        case .success(let info):
            let record = newRecord(url: key, size: info.size, validator: info.validator, modified: info.modified,
                                   location: info.finalURL)
            remember(record)
            probeFailures.withLock { $0[key] = nil }
            outcome = makeFile(record, entry).map { .success($0) } ?? .failure(FetchError(entry.url, .unmounting))
        case .failure(let error):
            noteFailure(of: entry, error.description, logged: "size of \(entry.url.redactedForDisplay) unknown: \(error)")
            outcome = .failure(FetchError(entry.url, .remote(error)))
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
        probeQueue.finished(index, cameAsStream: (try? result.get())?.cameAsStream)
        // Looked up again just as this probe failed: that look-up needs a probe of its own.
        if isAwaitingProbe(key, by: index) { probeQueue.enqueue(index, priority: .reader) }
        for completion in waiting { completion(outcome) }
    }

    /// The record of a file nothing of which is cached yet.
    private func newRecord(url key: String, size: UInt64, validator: RemoteValidator, modified: Date?,
                           location: URL?) -> CachedFileRecord {
        CachedFileRecord(
            url: key, dataName: Self.newDataName(), size: size,
            etag: validator.etag, lastModified: validator.lastModified, lastModifiedIsStrong: validator.lastModifiedIsStrong,
            modified: modified?.timeIntervalSince1970, blockSize: blockSize,
            bitmap: Data(BlockBitmap(blockCount: BlockLayout(fileSize: size, blockSize: blockSize).blockCount).serialized),
            state: size == 0 ? .complete : .remote, failure: nil,
            lastAccess: Date().timeIntervalSince1970, pinned: false,
            location: CacheKey.storableLocation(location))
    }

    /// True while the slot of `key` waits for a probe of entry `index`.
    private func isAwaitingProbe(_ key: String, by index: Int) -> Bool {
        slots.withLock { slots in
            if case .probing(index, _) = slots[key] { return true }
            return false
        }
    }

    /// Saves what a probe found, so a remount knows the size without asking. Records are saved
    /// in batches, one transaction each, on the commit queue: every commit of a file's blocks
    /// is scheduled after its probe, so it still finds the record saved.
    private func remember(_ record: CachedFileRecord) {
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
