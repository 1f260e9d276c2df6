/// The control side of a mounted manifest: status for `rangefs status`, pause and resume.
public final class RunningMount: MountControl {
    public let mountpoint: String
    private let catalog: FileCatalog
    private let prefetcher: Prefetcher

    public init(mountpoint: String, catalog: FileCatalog, prefetcher: Prefetcher) {
        self.mountpoint = mountpoint
        self.catalog = catalog
        self.prefetcher = prefetcher
    }

    public func status() -> MountStatus {
        let files = catalog.manifest.entries.indices.map { fileStatus(ofEntry: $0) }
        return MountStatus(mountpoint: mountpoint, manifest: catalog.manifest.source,
                           paused: prefetcher.isPaused, prefetch: prefetcher.configuration.policy.rawValue,
                           files: files)
    }

    public func setPaused(_ paused: Bool) {
        prefetcher.setPaused(paused)
    }

    /// The status of one entry, also for its extended attributes.
    public func fileStatus(ofEntry index: Int) -> FileStatus {
        let entry = catalog.manifest.entries[index]
        let path = entry.path.description
        let url = entry.url.redactedForDisplay
        guard let file = catalog.knownFile(forEntry: index) else {
            let failure = catalog.probeFailure(forEntry: index)
            return FileStatus(path: path, url: url, state: failure == nil ? .remote : .failed,
                              size: nil, cachedBytes: 0, bytesPerSecond: 0, failure: failure)
        }
        let snapshot = file.snapshot
        return FileStatus(path: path, url: url, state: snapshot.state, size: snapshot.size,
                          cachedBytes: snapshot.cachedBytes, bytesPerSecond: snapshot.bytesPerSecond,
                          failure: snapshot.state == .failed ? snapshot.lastFailure : nil)
    }
}
