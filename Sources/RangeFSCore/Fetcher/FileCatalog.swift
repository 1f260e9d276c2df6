import Foundation
import Logging
import Synchronization

/// The remote files of a mount, by URL: finds each one's size on first use (once, however
/// many callers ask at the same time), remembers it in the cache database, and hands out
/// the `CachedFile` that serves its reads. By job: this file holds the entry table, the files
/// by URL and refresh; `+SizeProbes` finds sizes, `+Limits` keeps the cache within its limits,
/// `+Commands` serves evict, verify and pin, `+Listings` probes ahead of directory listings.
public final class FileCatalog: Sendable {
    /// Every entry this mount has known, append-only: an index keeps meaning the same entry
    /// across `rangefs refresh`, so work started before a refresh never lands on another file.
    public var manifest: Manifest { table.withLock { $0.all } }
    /// The entries of the current manifest, in its order (indices into `manifest.entries`).
    public var activeEntries: [Int] { table.withLock { $0.active } }
    let table: Mutex<EntryTable>

    struct EntryTable {
        var all: Manifest
        var active: [Int]
    }
    let environment: FetchEnvironment
    /// The mount's counters.
    public var metrics: MountMetrics { environment.metrics }
    let blockSize: UInt64
    /// What the database knew when the mount started, for files not loaded yet (eviction
    /// empties their bitmaps here too).
    let storedRecords: Mutex<[String: CachedFileRecord]>
    /// Keeps the cache within `--cache-max-size` / `--cache-min-free`.
    public let budget: CacheBudget
    /// Lock order: `slots` → `storedRecords` (forget, evict) and `slots` → a `CachedFile`'s state
    /// lock (`evict` asks the file under it); a file's state lock takes no lock of the catalog
    /// but the leaf `evictionScheduled` (see `CachedFile.state`).
    let slots = Mutex<[String: Slot]>([:])
    /// Size probes wait here for their turn (set once in `init`).
    let probes = Mutex<ProbeQueue?>(nil)
    let usage = Mutex(FileUsage())
    /// Why the last size probe of a URL failed, until one succeeds.
    let probeFailures = Mutex<[String: String]>([:])
    let rangeIgnoringServers: Mutex<Set<String>>
    let activityHandler = Mutex<(@Sendable () -> Void)?>(nil)
    let remoteChangeHandler = Mutex<(@Sendable (URL) -> Void)?>(nil)
    /// Probed records waiting to be saved; a directory walk probes thousands.
    let unsavedRecords = Mutex<(records: [CachedFileRecord], saveScheduled: Bool)>(([], false))
    /// An eviction pass is queued on the committer (leaf lock).
    let evictionScheduled = Mutex(false)
    /// When a read last found nothing to evict: reads at the limits do not search again at once.
    let futileEviction = Mutex<ContinuousClock.Instant?>(nil)

    /// Which files readers use, so background work can serve them first.
    struct FileUsage {
        var openHandles: [String: Int] = [:]
        /// Every file opened during this mount, in the order first opened.
        var everOpened: [String] = []
    }

    enum Slot {
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

    var probeQueue: ProbeQueue {
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

    func makeFile(record: CachedFileRecord, entry: ManifestEntry) -> CachedFile {
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
    static func server(of url: URL) -> String {
        "\(url.scheme ?? "http")://\(url.host ?? ""):\(url.port ?? (url.scheme == "https" ? 443 : 80))"
    }

    static let rangeIgnoringSetting = "servers.ignoring-ranges"

    /// Later files of that server go straight to one stream each, also after a remount.
    func rememberRangesIgnored(by url: URL) {
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
    func forget(_ file: CachedFile) {
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
    func applyChecksums(ofEntries indices: [Int]) {
        let entries = manifest.entries
        for index in indices {
            let expected = entries[index].sha256?.lowercased()
            guard let file = knownFile(forEntry: index), file.expectedSHA256 != expected else { continue }
            if file.isRejected { forget(file) } else { file.expect(sha256: expected) }
        }
    }

    static func identity(of entry: ManifestEntry) -> String {
        let headers = entry.headers.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: "\n")
        return "\(entry.path)\u{0}\(entry.urlString)\u{0}\(headers)"
    }

    /// Stops every transfer and makes what was fetched durable (at unmount).
    public func shutdown() {
        environment.client.shutdown()
        environment.committer.drain()
    }
}
