// Design note: the control socket and what answers it.
//
// `ControlServer` serves the mount's Unix socket, one JSON request line a client
// (`ControlProtocol`: status, pause, resume, evict, pin, unpin, verify, refresh); `RunningMount`
// answers it from the catalog and the background work, and `MountStatus` is what
// `rangefs status` shows (as text: `StatusText/`). Only the mounting user and root reach it: the
// socket is mode 0600 in the cache directory, which is theirs alone, and a peer of another
// uid than the owner or root is refused (`SO_PEERCRED`).

/// The control side of a mounted manifest: status for `rangefs status`, pause and resume.
public final class RunningMount: MountControl {
    public let mountpoint: String
    private let catalog: FileCatalog
    private let prefetcher: Prefetcher
    private let refresher: ManifestRefresher?
    /// For a web directory: lists the directories named by paths inside the mount, and all
    /// below them, so that pin and unpin find files not looked at yet.
    private let listBelow: (@Sendable ([String]) -> Void)?

    /// How `rangefs refresh` reads the manifest again and shows the new tree.
    public struct ManifestRefresher: Sendable {
        public var load: @Sendable () throws -> Manifest
        /// Shows the new manifest (its entries' catalog indices alongside) in the mounted tree.
        public var show: @Sendable (Manifest, [Int]) -> Void

        public init(load: @escaping @Sendable () throws -> Manifest, show: @escaping @Sendable (Manifest, [Int]) -> Void) {
            self.load = load
            self.show = show
        }
    }

    public init(mountpoint: String, catalog: FileCatalog, prefetcher: Prefetcher, refresher: ManifestRefresher? = nil,
                listBelow: (@Sendable ([String]) -> Void)? = nil) {
        self.mountpoint = mountpoint
        self.catalog = catalog
        self.prefetcher = prefetcher
        self.refresher = refresher
        self.listBelow = listBelow
    }

    public func status() -> MountStatus {
        let files = catalog.activeEntries.map { fileStatus(ofEntry: $0) }
        let cache = catalog.budget.status
        let metrics = catalog.metrics
        metrics.update(cachedBytes: cache.cachedBytes, files: Dictionary(grouping: files, by: \.state).mapValues(\.count))
        return MountStatus(mountpoint: mountpoint, manifest: catalog.manifest.source,
                           paused: prefetcher.isPaused, prefetch: prefetcher.configuration.policy.rawValue,
                           files: files, cache: cache, metrics: metrics.samples())
    }

    /// The Prometheus text format for `--metrics-address`, its gauges set from a fresh status.
    public func metricsExposition() -> String {
        _ = status()
        return catalog.metrics.exposition()
    }

    public func setPaused(_ paused: Bool) {
        prefetcher.setPaused(paused)
    }

    public func manage(_ command: ControlCommand, paths: [String]) throws(MountControlError) -> String {
        if command == .pin || command == .unpin { listBelow?(paths.map(relativePath)) }
        let entries = try entryIndices(of: paths)
        switch command {
        case .evict:
            let busy = catalog.evict(entries: entries)
            let scope = paths.isEmpty ? "every file" : "\(entries.count) file(s)"
            return busy.isEmpty ? "evicted the cached data of \(scope)"
                : "evicted the cached data of \(scope) except \(busy.count) in use or pinned: \(busy.joined(separator: ", "))"
        case .pin:
            guard !entries.isEmpty else { throw MountControlError("pin needs at least one path") }
            catalog.setPinned(entries: entries, true)
            prefetcher.complete(entries: entries)
            return "pinned \(entries.count) file(s); they are fetched now and kept whatever the cache limits"
        case .unpin:
            guard !entries.isEmpty else { throw MountControlError("unpin needs at least one path") }
            catalog.setPinned(entries: entries, false)
            return "unpinned \(entries.count) file(s)"
        case .refresh:
            return try refresh()
        case .verify:
            let (checked, problems) = catalog.verify(timeout: .seconds(100))
            // Files found changed start over; walking the manifest again lets the prefetcher
            // complete them anew (it had dropped them from its list once they were complete).
            prefetcher.manifestChanged()
            return problems.isEmpty ? "verified \(checked) cached file(s): all unchanged"
                : "verified \(checked) cached file(s):\n" + problems.joined(separator: "\n")
        case .status, .pause, .resume:
            throw MountControlError("\(command.rawValue) takes no paths")
        }
    }

    /// Reads the manifest again and swaps it in: new files appear, removed ones vanish (their
    /// cache stays until evicted), unchanged ones keep everything.
    private func refresh() throws(MountControlError) -> String {
        guard let refresher else { throw MountControlError("this mount cannot refresh its manifest") }
        let manifest: Manifest
        do {
            manifest = try refresher.load()
        } catch {
            throw MountControlError("the manifest was not changed: \(error)")
        }
        let before = Set(catalog.activeEntries)
        let active = catalog.replaceManifest(with: manifest)
        refresher.show(manifest, active)
        prefetcher.manifestChanged()
        let kept = active.filter(before.contains).count
        return "refreshed \(manifest.source): \(active.count - kept) added, \(before.count - kept) removed, \(kept) unchanged"
    }

    /// A path inside the mount as given (relative, or absolute under the mountpoint), relative
    /// and without a trailing `/`; "" or "." for the whole mount.
    private func relativePath(_ path: String) -> String {
        var relative = path
        if relative == mountpoint { return "" }
        if relative.hasPrefix(mountpoint + "/") { relative.removeFirst(mountpoint.count + 1) }
        while relative.hasSuffix("/") { relative.removeLast() }
        return relative
    }

    /// Manifest entries for paths inside the mount (relative, or absolute under the mountpoint);
    /// a directory stands for every file below it.
    private func entryIndices(of paths: [String]) throws(MountControlError) -> [Int] {
        var indices: [Int] = []
        for path in paths {
            let relative = relativePath(path)
            let entries = catalog.manifest.entries
            let matches = catalog.activeEntries.filter { index in
                let entryPath = entries[index].path.description
                return relative.isEmpty || relative == "." || entryPath == relative || entryPath.hasPrefix(relative + "/")
            }
            guard !matches.isEmpty else { throw MountControlError("\(path) is not a file of this mount") }
            indices += matches
        }
        return Array(Set(indices)).sorted()
    }

    /// The status of one entry, also for its extended attributes.
    public func fileStatus(ofEntry index: Int) -> FileStatus {
        let entry = catalog.manifest.entries[index]
        let path = entry.path.description
        let url = entry.url.redactedForDisplay
        guard let file = catalog.knownFile(forEntry: index) else {
            let failure = catalog.probeFailure(forEntry: index)
            // Nothing is known of the mirrors before the file's size is.
            let sources = entry.mirrors.isEmpty ? nil : entry.urls.map {
                SourceStatus(url: $0.redactedForDisplay, state: .unknown, reason: nil, bytesPerSecond: nil)
            }
            return FileStatus(path: path, url: url, state: failure == nil ? .remote : .failed,
                              size: nil, cachedBytes: 0, bytesPerSecond: 0, failure: failure, sources: sources)
        }
        let snapshot = file.snapshot
        return FileStatus(path: path, url: url, state: snapshot.state, size: snapshot.size,
                          cachedBytes: snapshot.cachedBytes, bytesPerSecond: snapshot.bytesPerSecond,
                          failure: snapshot.state == .failed ? snapshot.lastFailure : nil,
                          sources: entry.mirrors.isEmpty ? nil : file.sourceStatuses)
    }
}
