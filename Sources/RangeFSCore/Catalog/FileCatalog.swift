import Foundation
import Logging
import Synchronization

// Design note: the catalog, the remote files of a mount.
//
// - `FileCatalog`: the table of manifest entries and its refresh (`rangefs refresh` adds, removes
//   and updates entries without unmounting), which files readers use, the events to the rest of
//   the mount, the admin commands on entries (`+Commands`: evict, verify, pin) and the size
//   discovery ahead of directory listings (`+Listings`).
// - `LoadedFiles`: the loaded files by URL. Each is loaded from its database record, made at once
//   from the size a listing states exactly (no probe: its first range reply names the version),
//   or found by one size probe however many callers wait (`Scheduling/ProbeQueue` orders the
//   probes); a size over `FileSizeLimit`, stated, probed or remembered, refuses that file alone
//   (`EFBIG`). New records are saved in batches.
// - `CacheEviction`: the byte budget against `--cache-max-size` and the free-space floor, and
//   eviction of the least recently used files nobody has open.
// - `RangeIgnoringServers`: a server that answered three files' range requests with whole bodies
//   is read as a stream for an hour, until it answers a range.

/// The remote files of a mount: the table of manifest entries and its refresh, which files
/// readers use, and the events that reach the rest of the mount. The jobs under it are parts of
/// their own: `LoadedFiles` finds and loads each entry's `CachedFile`, `CacheEviction` keeps
/// the cache within its limits; `+Commands` serves evict, verify and pin, `+Listings` finds sizes
/// ahead of directory listings.
///
/// Locks (each a leaf: none is held while another lock is taken): `table`, `usage`,
/// `rangeIgnoringServers`, the two handlers. The parts' own locks are described where declared.
public final class FileCatalog: Sendable {
    /// Every entry this mount has known, append-only: an index keeps meaning the same entry
    /// across `rangefs refresh`, so work started before a refresh never lands on another file.
    public var manifest: Manifest { table.withLock { $0.all } }
    /// The entries of the current manifest, in its order (indices into `manifest.entries`).
    public var activeEntries: [Int] { table.withLock { $0.active } }
    /// Leaf locks, this one and `usage`, `rangeIgnoringServers` and `handlers` below: each is
    /// held only to read or change its value; handlers, files and the database are called after
    /// it is released. `rangeIgnoringServers` is also taken under `LoadedFiles.slots`, which
    /// makes a file (`makeFile`) under its lock.
    private let table: Mutex<EntryTable>

    struct EntryTable {
        var all: Manifest
        var active: [Int]
    }
    let environment: FetchEnvironment
    /// The mount's counters.
    public var metrics: MountMetrics { environment.metrics }
    /// The sizes entries state are the server's own (a web directory's listing): `stat`, `ls -l`
    /// and `find` are answered from them without a request; the file's own size is asked only
    /// when it is opened. Off for manifests, whose stated sizes may be stale or wrong.
    public let statedSizesAreExact: Bool
    let files: LoadedFiles
    let eviction: CacheEviction
    /// Keeps the cache within `--cache-max-size` / `--cache-min-free`.
    public var budget: CacheBudget { eviction.budget }
    private let usage = Mutex(FileUsage())
    /// Servers found to ignore ranges (`scheme://host:port`), remembered across mounts for a while.
    private let rangeIgnoringServers: Mutex<RangeIgnoringServers>
    /// Who hears of opens and of remote changes (`onFileOpened`, `onRemoteChange`).
    private let handlers = Mutex(Handlers())
    /// When a file was last opened (`DispatchTime` uptime, ns): a walk that opens files is a
    /// scan, whose heads background work fetches ahead (`treeWalked`).
    let lastFileOpen = Atomic<UInt64>(0)
    /// When a walk last waited for a distant server's listing (`DispatchTime` uptime, ns): such
    /// a walk holds no background work (`treeWalked`).
    let lastDistantListing = Atomic<UInt64>(0)

    /// The callbacks, in a struct: a closure kept bare (or in a tuple) inside a `Mutex` is
    /// wrapped in one more reabstraction thunk at every `withLock`, which after enough opens
    /// overflows the stack when it is called or freed.
    private struct Handlers {
        var fileOpened: (@Sendable () -> Void)?
        var remoteChange: (@Sendable (URL) -> Void)?
    }

    /// Which files readers use, so background work can serve them first.
    struct FileUsage {
        var openHandles: [String: Int] = [:]
        /// Every file opened during this mount, in the order first opened...
        var everOpened: [String] = []
        /// ...and the same as a set: a library's scan opens every file once, and a look through
        /// the list at each open made the scan quadratic in the library's size.
        var everOpenedKeys: Set<String> = []
    }

    public init(manifest: Manifest, blockSize: UInt64, limits: CacheLimits = CacheLimits(),
                statedSizesAreExact: Bool = false, environment: FetchEnvironment) throws {
        precondition(blockSize > 0, "block size must be positive")
        self.statedSizesAreExact = statedSizesAreExact
        table = Mutex(EntryTable(all: manifest, active: Array(manifest.entries.indices)))
        self.environment = environment
        let records = try environment.store.allRecords().filter { url, record in
            if record.isWithinLimits { return true }
            environment.logger.warning("\(URL(string: url)?.redactedForDisplay ?? url): the cache database's record (\(record.size) bytes in blocks of \(record.blockSize)) is not used: over the largest file a mount accepts, \(FileSizeLimit.shown), or no block size")
            return false
        }
        let cached = records.values.saturatingSum { record in
            let layout = BlockLayout(fileSize: record.size, blockSize: record.blockSize)
            let present = BlockBitmap(blockCount: layout.blockCount, serialized: [UInt8](record.bitmap))?.presentCount ?? 0
            return min(record.size, UInt64(present) * record.blockSize)
        }
        let budget = CacheBudget(limits: limits, directory: environment.directory.path, initialBytes: cached)
        let ignoring = try environment.store.setting(Self.rangeIgnoringSetting) ?? ""
        rangeIgnoringServers = Mutex(RangeIgnoringServers(serialized: ignoring))
        // The parts call back into the catalog only through these closures, set up before any
        // file is made. `weak`: the parts live as long as the catalog, never longer.
        let catalog = WeakCatalog()
        files = LoadedFiles(records: records, blockSize: blockSize, trustsStatedSizes: statedSizesAreExact, environment: environment,
                              entryAt: { index in catalog.value?.manifest.entries[index] },
                              makeFile: { record, entry in catalog.value?.makeFile(record: record, entry: entry) })
        eviction = CacheEviction(budget: budget, files: files, environment: environment)
        catalog.value = self
    }

    /// The file for a manifest entry, once its size is known (at once when it already is, or
    /// when the cache database remembers it from an earlier mount). Finding the size waits its
    /// turn among the other probes according to `priority`.
    public func file(forEntry index: Int, priority: ProbePriority = .reader,
                     completion: @escaping @Sendable (Result<CachedFile, FetchError>) -> Void) {
        files.file(for: manifest.entries[index], index: index, priority: priority, completion: completion)
    }

    /// Opens a handle on an entry's file (finding its size first if need be).
    public func open(entry index: Int, completion: @escaping @Sendable (Result<OpenFile, FetchError>) -> Void) {
        file(forEntry: index) { [self] result in
            completion(result.map { file in
                let key = file.cacheKey
                let firstOpen = usage.withLock { usage -> Bool in
                    let first = usage.everOpenedKeys.insert(key).inserted
                    if first { usage.everOpened.append(key) }
                    usage.openHandles[key, default: 0] += 1
                    return first
                }
                let handle = OpenFile(file: file, firstScan: firstOpen ? firstScanWatch(of: file, entry: index) : nil,
                                      reopen: { [self] found in self.file(forEntry: index, completion: found) }) { [self] in
                    usage.withLock { usage in
                        usage.openHandles[key, default: 1] -= 1
                        if usage.openHandles[key] == 0 { usage.openHandles[key] = nil }
                    }
                    eviction.fileClosed()
                }
                handlers.withLock { $0.fileOpened }?()
                lastFileOpen.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed)
                if file.isComplete {
                    environment.client.quietBackground(.completeFileOpened, for: environment.policy.quietAfterCompleteOpen)
                }
                return handle
            })
        }
    }

    /// The first reader of a file in this mount teaches what a scan of its type reads
    /// (`FirstScan`); a complete file's reads may not pass through here, and teach nothing.
    private func firstScanWatch(of file: CachedFile, entry index: Int) -> FirstScanWatch? {
        guard !file.isComplete else { return nil }
        let type = HeadTailSizes.fileType(ofName: manifest.entries[index].path.lastComponent)
        return FirstScanWatch(fileSize: file.layout.fileSize, type: type, learned: environment.learnedHeadTails)
    }

    /// Files with an open handle now, then files opened earlier in this mount, each in the order first opened.
    public func filesInUse() -> [CachedFile] {
        let (open, earlier) = usage.withLock { usage in
            (usage.everOpened.filter { usage.openHandles[$0] != nil }, usage.everOpened.filter { usage.openHandles[$0] == nil })
        }
        return files.loadedFiles(open + earlier)
    }

    /// Files with an open handle now, in the order first opened.
    func filesOpenNow() -> [CachedFile] {
        files.loadedFiles(usage.withLock { usage in usage.everOpened.filter { usage.openHandles[$0] != nil } })
    }

    /// Called (on whatever thread) when a remote file turned out to have changed, so that what
    /// the kernel remembers of it (size, pages) can be dropped.
    public func onRemoteChange(_ handler: @escaping @Sendable (URL) -> Void) {
        handlers.withLock { $0.remoteChange = handler }
    }

    /// Called (on whatever thread) whenever a reader opens a file: a hint for background work.
    public func onFileOpened(_ handler: @escaping @Sendable () -> Void) {
        handlers.withLock { $0.fileOpened = handler }
    }

    /// The entry's modification time: the server's `Last-Modified`, else the time the
    /// manifest states (a feed's `pubDate`, a JSON `mtime`), else nil.
    public func modified(ofEntry index: Int, file: CachedFile) -> Date? {
        file.modified ?? manifest.entries[index].modified
    }

    /// The file for an entry if its size is already known, without waiting.
    public func knownFile(forEntry index: Int) -> CachedFile? {
        files.loadedFile(CacheKey.of(manifest.entries[index].urlString))
    }

    /// The size and time the entry states, when they may be shown before the file's size is
    /// asked (`statedSizesAreExact`) and it has not been asked yet.
    public func statedAttributes(ofEntry index: Int) -> (size: UInt64, modified: Date?)? {
        let entry = manifest.entries[index]
        // A size over the limit is not shown: asking for the file then says why it is refused.
        // The key only once a size is stated: most manifests state none.
        guard let size = entry.size, FileSizeLimit.accepts(size) else { return nil }
        let key = CacheKey.of(entry.urlString)
        guard files.mayTrustStatedSize(of: key), files.loadedFile(key) == nil, files.storedRecord(key) == nil else { return nil }
        return (size, entry.modified)
    }

    /// The total size of the files whose size is known, for `statfs`.
    public var knownBytes: UInt64 { files.loadedBytes }

    /// Why finding the entry's size failed last time, if it did.
    public func probeFailure(forEntry index: Int) -> String? {
        files.probeFailure(CacheKey.of(manifest.entries[index].urlString))
    }

    /// Evicts (on the committer's queue) if the cache is over its limits.
    public func keepWithinLimits() {
        eviction.keepWithinLimits()
    }

    /// Background work needs `bytes` more than fit: evicts for them and waits.
    func makeRoom(forRead bytes: UInt64) {
        eviction.makeRoom(forRead: bytes)
    }

    func makeFile(record: CachedFileRecord, entry: ManifestEntry) -> CachedFile {
        let ignoresRanges = rangeIgnoringServers.withLock { $0.ignoresRanges(Self.server(of: entry.url), now: Date()) }
        let events = CachedFileEvents(invalidated: { [self] file in forget(file) },
                                      rejected: { [self] file in handlers.withLock { $0.remoteChange }?(file.url) },
                                      rangesIgnored: { [self] file in rememberRangesIgnored(by: file.url) },
                                      rangesServed: { [self] file in rememberRangesServed(by: file.url) },
                                      cachedBytesChanged: { [eviction] delta in eviction.cachedBytesChanged(by: delta) },
                                      makeRoom: { [eviction] bytes in eviction.makeRoom(forRead: bytes) })
        return CachedFile(record: record, url: entry.url, mirrors: entry.mirrors, pieces: entry.pieces,
                          headers: entry.headers, expectedSHA256: entry.sha256,
                          environment: environment, budget: eviction.budget, serverIgnoresRanges: ignoresRanges, events: events)
    }

    /// `scheme://host:port`: servers ignore ranges as a whole, not per file.
    static func server(of url: URL) -> String {
        "\(url.scheme ?? "http")://\(url.host ?? ""):\(url.port ?? (url.scheme == "https" ? 443 : 80))"
    }

    static let rangeIgnoringSetting = "servers.ignoring-ranges"

    /// The file at `url` answered a plain range request with the whole body: once enough files
    /// of its server did, that server's later files go straight to one stream each, also after a
    /// remount, for a while (`RangeIgnoringServers`).
    func rememberRangesIgnored(by url: URL) {
        let now = Date()
        storeRangeIgnoringServers(rangeIgnoringServers.withLock { servers in
            let dropped = servers.dropExpired(now: now)
            let marked = servers.rangesIgnored(by: Self.server(of: url), file: url.absoluteString, now: now)
            return dropped || marked ? servers.serialized : nil
        })
    }

    /// The server of `url` answered a range request with `206`: whatever was held against it is dropped.
    func rememberRangesServed(by url: URL) {
        let server = Self.server(of: url)
        storeRangeIgnoringServers(rangeIgnoringServers.withLock { servers in
            guard !servers.knowsNothing(of: server) else { return nil }
            return servers.rangesServed(by: server) ? servers.serialized : nil
        })
    }

    private func storeRangeIgnoringServers(_ serialized: String?) {
        guard let serialized else { return }
        let store = environment.store
        environment.committer.schedule {
            try? store.setSetting(Self.rangeIgnoringSetting, to: serialized)
        }
    }

    /// The remote file changed: drop this version, its record and its data, so the next
    /// look-up finds the new size and starts over. Readers still holding it get EIO.
    func forget(_ file: CachedFile) {
        let key = file.cacheKey
        files.forget(file)
        handlers.withLock { $0.remoteChange }?(file.url)
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
    /// headers are unchanged keep their index (and everything cached), taking the new entry's
    /// sha256, mirrors and piece hashes; the others get new indices. Returns the indices of the
    /// new manifest's entries, in its order.
    public func replaceManifest(with newManifest: Manifest) -> [Int] {
        var relisted: [Int] = []
        // Entries whose sha256 may differ from their loaded file's: new ones, and kept ones whose
        // sha256 changed. Not every entry: a listed tree is replaced after every listing, and
        // finding each entry's file (its cache key) made a walk's listings cost the tree's size.
        var checksumsToApply: [Int] = []
        let active = table.withLock { table in
            var reusable: [EntryIdentity: Int] = [:]
            reusable.reserveCapacity(table.active.count)
            for index in table.active {
                let entry = table.all.entries[index]
                reusable[Self.identity(of: entry)] = index
            }
            var active: [Int] = []
            active.reserveCapacity(newManifest.entries.count)
            for entry in newManifest.entries {
                if let index = reusable.removeValue(forKey: Self.identity(of: entry)) {
                    if table.all.entries[index].sha256 != entry.sha256 {
                        table.all.entries[index].sha256 = entry.sha256
                        checksumsToApply.append(index)
                    }
                    // What a listing states now: a file its server changed starts over from it.
                    if table.all.entries[index].size != entry.size { table.all.entries[index].size = entry.size }
                    if table.all.entries[index].modified != entry.modified { table.all.entries[index].modified = entry.modified }
                    // Compared as text: a listed tree is compared after every listing.
                    if table.all.entries[index].mirrorTexts != entry.mirrorTexts {
                        table.all.entries[index].mirrorTexts = entry.mirrorTexts
                        relisted.append(index)
                    }
                    // A file loaded already checks the pieces it was loaded with until it is loaded again.
                    if table.all.entries[index].pieces != entry.pieces { table.all.entries[index].pieces = entry.pieces }
                    active.append(index)
                } else {
                    table.all.entries.append(entry)
                    active.append(table.all.entries.count - 1)
                    checksumsToApply.append(table.all.entries.count - 1)
                }
            }
            table.all.source = newManifest.source
            table.active = active
            return active
        }
        applyChecksums(ofEntries: checksumsToApply)
        let entries = manifest.entries
        for index in relisted { knownFile(forEntry: index)?.relist(mirrors: entries[index].mirrors) }
        return active
    }

    /// Files whose directory's listing now states another size or date than the listing before:
    /// their server changed them. What is cached of each is discarded as when a reply shows the
    /// change (readers holding it get EIO, the kernel forgets it), whether it is loaded or only
    /// remembered, so the next look-up starts over from what the listing states. Call after
    /// `replaceManifest` with the listing's entries.
    public func filesChangedOnServer(_ urls: [URL]) {
        guard !urls.isEmpty else { return }
        let changed = Set(urls.map(\.absoluteString))
        let entries = manifest.entries
        for index in activeEntries where changed.contains(entries[index].urlString) {
            let key = CacheKey.of(entries[index].urlString)
            let why = "its directory's listing states another size or date"
            if let file = files.loadedFile(key) {
                file.changedOnServer(because: why)
            } else if files.storedRecord(key) != nil {
                // Remembered from an earlier mount: loaded from its record (no request) to be discarded.
                file(forEntry: index, priority: .background) { result in
                    if case .success(let file) = result { file.changedOnServer(because: why) }
                }
            }
        }
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

    /// What makes two entries the same across a refresh: path, URL and headers, compared
    /// exactly, without building text (a listed tree is compared after every listing).
    struct EntryIdentity: Hashable {
        let path: EntryPath
        let url: SharedPrefixText
        let headers: [String: String]
    }

    static func identity(of entry: ManifestEntry) -> EntryIdentity {
        EntryIdentity(path: entry.path, url: entry.urlText, headers: entry.headers)
    }

    /// Stops every transfer and makes what was fetched durable (at unmount).
    public func shutdown() {
        environment.client.shutdown()
        environment.committer.drain()
    }
}

/// The catalog as its parts' closures see it: set once, at the end of `FileCatalog.init`,
/// before any closure can run (no file exists before then), and only read afterwards.
/// `@unchecked Sendable`: written once before it is shared, read only after.
private final class WeakCatalog: @unchecked Sendable {
    weak var value: FileCatalog?
}
