import Foundation
import Logging
import Synchronization

/// The remote files of a mount, by URL: finds each one's size on first use (once, however
/// many callers ask at the same time), remembers it in the cache database, and hands out
/// the `CachedFile` that serves its reads.
public final class FileCatalog: Sendable {
    /// Every entry this mount has known, append-only: an index keeps meaning the same entry
    /// across `rangefs refresh`, so work started before a refresh never lands on another file.
    public var manifest: Manifest { table.withLock { $0.all } }
    /// The entries of the current manifest, in its order (indices into `manifest.entries`).
    public var activeEntries: [Int] { table.withLock { $0.active } }
    private let table: Mutex<EntryTable>

    private struct EntryTable {
        var all: Manifest
        var active: [Int]
    }
    private let environment: FetchEnvironment
    /// The mount's counters.
    public var metrics: MountMetrics { environment.metrics }
    private let blockSize: UInt64
    /// What the database knew when the mount started, for files not loaded yet (eviction
    /// empties their bitmaps here too).
    private let storedRecords: Mutex<[String: CachedFileRecord]>
    /// Keeps the cache within `--cache-max-size` / `--cache-min-free`.
    public let budget: CacheBudget
    /// Lock order: `slots` → `storedRecords` (forget, evict) and `slots` → a `CachedFile`'s state
    /// lock (`evict` asks the file under it); a file's state lock takes no lock of the catalog
    /// but the leaf `evictionScheduled` (see `CachedFile.state`).
    private let slots = Mutex<[String: Slot]>([:])
    /// Size probes wait here for their turn (set once in `init`).
    private let probes = Mutex<ProbeQueue?>(nil)
    private let usage = Mutex(FileUsage())
    /// Why the last size probe of a URL failed, until one succeeds.
    private let probeFailures = Mutex<[String: String]>([:])
    private let rangeIgnoringServers: Mutex<Set<String>>
    private let activityHandler = Mutex<(@Sendable () -> Void)?>(nil)
    private let remoteChangeHandler = Mutex<(@Sendable (URL) -> Void)?>(nil)

    /// Which files readers use, so background work can serve them first.
    private struct FileUsage {
        var openHandles: [String: Int] = [:]
        /// Every file opened during this mount, in the order first opened.
        var everOpened: [String] = []
    }

    private enum Slot {
        /// The entry whose probe finds the size (entries may share a URL), and who waits for it.
        case probing(entry: Int, [@Sendable (Result<CachedFile, FetchError>) -> Void])
        case ready(CachedFile)
    }

    public init(manifest: Manifest, blockSize: UInt64, limits: CacheLimits = CacheLimits(),
                environment: FetchEnvironment) throws {
        precondition(blockSize > 0, "block size must be positive")
        table = Mutex(EntryTable(all: manifest, active: Array(manifest.entries.indices)))
        self.blockSize = blockSize
        self.environment = environment
        let records = try environment.store.allRecords()
        storedRecords = Mutex(records)
        let cached = records.values.reduce(UInt64(0)) { total, record in
            let layout = BlockLayout(fileSize: record.size, blockSize: record.blockSize)
            let present = BlockBitmap(blockCount: layout.blockCount, serialized: [UInt8](record.bitmap))?.presentCount ?? 0
            return total + min(record.size, UInt64(present) * record.blockSize)
        }
        budget = CacheBudget(limits: limits, directory: environment.directory.path, initialBytes: cached)
        let ignoring = try environment.store.setting(Self.rangeIgnoringSetting) ?? ""
        rangeIgnoringServers = Mutex(Set(ignoring.split(separator: "\n").map(String.init)))
        let queue = ProbeQueue { [weak self] index in
            guard let self else { return }
            // `self.`: the parameter `manifest` is the one the mount started with, not the current one.
            let entry = self.manifest.entries[index]
            // Its turn came after the size was already found (a probe queued twice).
            guard isAwaitingProbe(entry.urlString, by: index) else { return probeQueue.finished(index) }
            probe(entry, index: index)
        }
        probes.withLock { $0 = queue }
    }

    private var probeQueue: ProbeQueue {
        probes.withLock { $0! }
    }

    /// The file for a manifest entry, once its size is known (at once when it already is, or
    /// when the cache database remembers it from an earlier mount). Finding the size waits its
    /// turn among the other probes according to `priority`.
    public func file(forEntry index: Int, priority: ProbePriority = .reader,
                     completion: @escaping @Sendable (Result<CachedFile, FetchError>) -> Void) {
        let entry = manifest.entries[index]
        let key = entry.urlString
        enum Next { case ready(CachedFile), probe(entry: Int) }
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
                    let file = makeFile(record: record, entry: entry)
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
        }
    }

    /// Opens a handle on an entry's file (finding its size first if need be).
    public func open(entry index: Int, completion: @escaping @Sendable (Result<OpenFile, FetchError>) -> Void) {
        file(forEntry: index) { [self] result in
            completion(result.map { file in
                let key = file.url.absoluteString
                usage.withLock { usage in
                    if usage.openHandles[key] == nil, !usage.everOpened.contains(key) {
                        usage.everOpened.append(key)
                    }
                    usage.openHandles[key, default: 0] += 1
                }
                let handle = OpenFile(file: file) { [self] in
                    usage.withLock { usage in
                        usage.openHandles[key, default: 1] -= 1
                        if usage.openHandles[key] == 0 { usage.openHandles[key] = nil }
                    }
                    // A closed file may be evicted now: the next read at the limits looks again.
                    futileEviction.withLock { $0 = nil }
                }
                activityHandler.withLock { $0 }?()
                return handle
            })
        }
    }

    /// Files with an open handle now, then files opened earlier in this mount, each in the order first opened.
    public func filesInUse() -> [CachedFile] {
        let (open, earlier) = usage.withLock { usage in
            (usage.everOpened.filter { usage.openHandles[$0] != nil }, usage.everOpened.filter { usage.openHandles[$0] == nil })
        }
        return slots.withLock { slots in
            (open + earlier).compactMap { key in
                if case .ready(let file) = slots[key] { return file }
                return nil
            }
        }
    }

    /// Called (on whatever thread) when a remote file turned out to have changed, so that what
    /// the kernel remembers of it (size, pages) can be dropped.
    public func onRemoteChange(_ handler: @escaping @Sendable (URL) -> Void) {
        remoteChangeHandler.withLock { $0 = handler }
    }

    /// Called (on whatever thread) whenever a reader opens a file: a hint for background work.
    public func onFileOpened(_ handler: @escaping @Sendable () -> Void) {
        activityHandler.withLock { $0 = handler }
    }

    /// The entry's modification time: the server's `Last-Modified`, else the time the
    /// manifest states (a feed's `pubDate`, a JSON `mtime`), else nil.
    public func modified(ofEntry index: Int, file: CachedFile) -> Date? {
        file.modified ?? manifest.entries[index].modified
    }

    /// The file for an entry if its size is already known, without waiting.
    public func knownFile(forEntry index: Int) -> CachedFile? {
        let key = manifest.entries[index].urlString
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

    /// Why finding the entry's size failed last time, if it did.
    public func probeFailure(forEntry index: Int) -> String? {
        let key = manifest.entries[index].urlString
        return probeFailures.withLock { $0[key] }
    }

    private func probe(_ entry: ManifestEntry, index: Int, attempt: Int = 1) {
        environment.client.probe(url: entry.url, headers: entry.headers) { [self] result in
            let key = entry.urlString
            let outcome: Result<CachedFile, FetchError>
            if case .failure(let error) = result, error.isTransient, attempt < environment.policy.maxAttempts {
                let delay = environment.policy.retryDelay(attempt: attempt + 1)
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
    private func isAwaitingProbe(_ key: String, by index: Int) -> Bool {
        slots.withLock { slots in
            if case .probing(index, _) = slots[key] { return true }
            return false
        }
    }

    /// Probed records waiting to be saved; a directory walk probes thousands.
    private let unsavedRecords = Mutex<(records: [CachedFileRecord], saveScheduled: Bool)>(([], false))

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

    private func makeFile(record: CachedFileRecord, entry: ManifestEntry) -> CachedFile {
        let ignoresRanges = rangeIgnoringServers.withLock { $0.contains(Self.server(of: entry.url)) }
        let events = CachedFileEvents(invalidated: { [self] file in forget(file) },
                                      rejected: { [self] file in remoteChangeHandler.withLock { $0 }?(file.url) },
                                      rangesIgnored: { [self] file in rememberRangesIgnored(by: file.url) },
                                      cachedBytesChanged: { [self] delta in cachedBytesChanged(by: delta) },
                                      makeRoom: { [self] bytes in makeRoom(forRead: bytes) })
        return CachedFile(record: record, url: entry.url, headers: entry.headers, expectedSHA256: entry.sha256,
                          environment: environment, budget: budget, serverIgnoresRanges: ignoresRanges, events: events)
    }

    /// `scheme://host:port`: servers ignore ranges as a whole, not per file.
    private static func server(of url: URL) -> String {
        "\(url.scheme ?? "http")://\(url.host ?? ""):\(url.port ?? (url.scheme == "https" ? 443 : 80))"
    }

    private static let rangeIgnoringSetting = "servers.ignoring-ranges"

    /// Later files of that server go straight to one stream each, also after a remount.
    private func rememberRangesIgnored(by url: URL) {
        let servers = rangeIgnoringServers.withLock { servers -> [String]? in
            guard servers.insert(Self.server(of: url)).inserted else { return nil }
            return servers.sorted()
        }
        guard let servers else { return }
        let store = environment.store
        environment.committer.schedule {
            try? store.setSetting(Self.rangeIgnoringSetting, to: servers.joined(separator: "\n"))
        }
    }

    /// The remote file changed: drop this version, its record and its data, so the next
    /// look-up finds the new size and starts over. Readers still holding it get EIO.
    private func forget(_ file: CachedFile) {
        let key = file.url.absoluteString
        slots.withLock { slots in
            if case .ready(let current) = slots[key], current === file { slots[key] = nil }
            // Also what the mount started with: the next look-up must ask the server again.
            storedRecords.withLock { _ = $0.removeValue(forKey: key) }
        }
        remoteChangeHandler.withLock { $0 }?(file.url)
        let store = environment.store
        let directory = environment.directory
        let logger = environment.logger
        environment.committer.schedule {
            do {
                if let name = try store.remove(url: key) {
                    unlink(directory.dataPath(name: name, complete: false))
                    unlink(directory.dataPath(name: name, complete: true))
                }
            } catch {
                logger.error("cannot discard the cache of \(file.url.redactedForDisplay): \(error)")
            }
        }
    }

    // MARK: Keeping within the limits

    private let evictionScheduled = Mutex(false)
    /// When a read last found nothing to evict: reads at the limits do not search again at once.
    private let futileEviction = Mutex<ContinuousClock.Instant?>(nil)

    private func cachedBytesChanged(by delta: Int64) {
        budget.add(delta)
        if delta > 0 { keepWithinLimits() }
    }

    /// Evicts (on the committer's queue) if the cache is over its limits: after it grew, or
    /// when another program took the free space below the floor.
    public func keepWithinLimits() {
        guard budget.excess > 0 else { return }
        let first = evictionScheduled.withLock { scheduled in
            defer { scheduled = true }
            return !scheduled
        }
        guard first else { return }
        environment.committer.schedule { [self] in
            evictionScheduled.withLock { $0 = false }
            makeRoom()
        }
    }

    /// A read (or a pinned file) needs `bytes` more than fit: evicts for it and waits, unless
    /// a search a moment ago found nothing that could go. Not on the committer's queue.
    func makeRoom(forRead bytes: UInt64) {
        if let last = futileEviction.withLock({ $0 }), ContinuousClock.now - last < .seconds(1) { return }
        let left = environment.committer.sync { makeRoom(extra: bytes) }
        futileEviction.withLock { $0 = left > 0 ? ContinuousClock.now : nil }
    }

    /// Evicts least recently used files nobody is using, partial ones first, until the cache is
    /// within its limits with room for `extra` more bytes (or nothing more can go). Returns the
    /// bytes still missing. Runs on the committer's queue.
    @discardableResult
    private func makeRoom(extra: UInt64 = 0) -> UInt64 {
        var excess = budget.shortfall(extra: extra)
        guard excess > 0 else { return 0 }
        let candidates: [CachedFileRecord]
        do {
            candidates = try environment.store.evictionCandidates()
        } catch {
            environment.logger.error("cannot choose files to evict: \(error)")
            return excess
        }
        for record in candidates where excess > 0 {
            guard let freed = evict(record) else { continue }
            environment.logger.info("evicted \(URL(string: record.url)?.redactedForDisplay ?? "a file") (\(freed) bytes) to keep the cache within its limits")
            excess = budget.shortfall(extra: extra)
        }
        // A read that finds no room is served without storing, and says so itself.
        if excess > 0, extra == 0 {
            environment.logger.warning("the cache is \(excess) bytes over its limits and every cached file is in use or pinned")
        }
        return excess
    }

    /// Drops a file's cached data if nobody uses it; returns the bytes freed.
    /// Runs on the committer's queue.
    @discardableResult
    private func evict(_ record: CachedFileRecord) -> UInt64? {
        let key = record.url
        let freed = slots.withLock { slots -> UInt64? in
            if case .ready(let file) = slots[key] {
                return file.evictIfIdle()
            }
            // Not loaded: nothing can be using it; update what a later load will see.
            let layout = BlockLayout(fileSize: record.size, blockSize: record.blockSize)
            let empty = BlockBitmap(blockCount: layout.blockCount)
            let present = BlockBitmap(blockCount: layout.blockCount, serialized: [UInt8](record.bitmap))
            storedRecords.withLock { records in
                records[key]?.bitmap = Data(empty.serialized)
                records[key]?.state = .remote
            }
            unlink(environment.directory.dataPath(name: record.dataName, complete: false))
            unlink(environment.directory.dataPath(name: record.dataName, complete: true))
            return min(record.size, UInt64(present?.presentCount ?? 0) * record.blockSize)
        }
        guard let freed else { return nil }
        CrashPoint.reached(.eviction)
        let layout = BlockLayout(fileSize: record.size, blockSize: record.blockSize)
        do {
            try environment.store.commitBlocks(url: key, bitmap: BlockBitmap(blockCount: layout.blockCount).serialized,
                                               state: layout.blockCount == 0 ? .complete : .remote)
        } catch {
            environment.logger.error("cannot record the eviction of \(URL(string: key)?.redactedForDisplay ?? key): \(error)")
        }
        budget.add(-Int64(freed))
        environment.metrics.evicted()
        return freed
    }

    /// `rangefs refresh`: makes `newManifest` the current one. Entries whose path, URL and
    /// headers are unchanged keep their index (and everything cached); the others get new
    /// indices. Returns the indices of the new manifest's entries, in its order.
    public func replaceManifest(with newManifest: Manifest) -> [Int] {
        let active = table.withLock { table in
            var reusable: [String: Int] = [:]
            for index in table.active {
                let entry = table.all.entries[index]
                reusable[Self.identity(of: entry)] = index
            }
            var active: [Int] = []
            for entry in newManifest.entries {
                if let index = reusable.removeValue(forKey: Self.identity(of: entry)) {
                    table.all.entries[index].sha256 = entry.sha256
                    active.append(index)
                } else {
                    table.all.entries.append(entry)
                    active.append(table.all.entries.count - 1)
                }
            }
            table.all.source = newManifest.source
            table.active = active
            return active
        }
        applyChecksums(ofEntries: active)
        return active
    }

    /// Loaded files take their entry's sha256 for their next promotion; one that failed the
    /// old sha256 is forgotten, so that the next look-up fetches it again for the new one.
    private func applyChecksums(ofEntries indices: [Int]) {
        let entries = manifest.entries
        for index in indices {
            let expected = entries[index].sha256?.lowercased()
            guard let file = knownFile(forEntry: index), file.expectedSHA256 != expected else { continue }
            if file.isRejected { forget(file) } else { file.expect(sha256: expected) }
        }
    }

    private static func identity(of entry: ManifestEntry) -> String {
        let headers = entry.headers.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: "\n")
        return "\(entry.path)\u{0}\(entry.urlString)\u{0}\(headers)"
    }

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
                guard let record = records[entry.urlString], record.state != .remote else { continue }
                if record.pinned || evict(record) == nil { busy.append(entry.path.description) }
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
            let stored = storedRecords.withLock { $0[manifest.entries[index].urlString] }
            return stored.map { $0.state != .remote } ?? false
        }
        let problems = Mutex<[String]>([])
        let group = DispatchGroup()
        for index in indices {
            let entry = manifest.entries[index]
            group.enter()
            file(forEntry: index) { [self] result in
                guard case .success(let file) = result else {
                    problems.withLock { $0.append("\(entry.path): size unknown") }
                    return group.leave()
                }
                let (url, headers) = file.verificationRequest
                environment.client.probe(url: url, headers: headers) { outcome in
                    switch outcome {
                    case .success(let info):
                        if let why = file.verify(against: info, probedURL: url) {
                            problems.withLock { $0.append("\(entry.path): changed (\(why)); cached data discarded") }
                        } else if file.isRejected {
                            let reason = file.snapshot.lastFailure ?? "failed"
                            problems.withLock { $0.append("\(entry.path): \(reason); the server still has that version") }
                        }
                    case .failure(let error):
                        problems.withLock { $0.append("\(entry.path): \(error)") }
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
            let key = manifest.entries[index].urlString
            let store = environment.store
            // After the record exists: pinning asks for its size first.
            file(forEntry: index) { [environment] _ in
                environment.committer.schedule {
                    try? store.setPinned(url: key, pinned)
                }
            }
        }
    }

    /// Stops every transfer and makes what was fetched durable (at unmount).
    public func shutdown() {
        environment.client.shutdown()
        environment.committer.drain()
    }
}
