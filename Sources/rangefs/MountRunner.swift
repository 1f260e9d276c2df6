import Foundation
import Logging
import RangeFSCore
import RangeFSFuse
import Synchronization

/// Puts the parts together for one mount, serves it until unmounted, and shuts down in the
/// order that loses nothing: stop transfers, commit what arrived, then release the kernel mount.
struct MountRunner {
    /// The manifest; for a web directory, empty (its tree comes from the listings).
    var manifest: Manifest
    /// How the manifest is read again on `rangefs refresh`: same place, format and headers.
    var loader: ManifestLoader
    /// A web directory mounted from its listings; nil for a manifest.
    var listing: Listing?
    var mountpoint: String
    var cachePath: String
    var blockSize: UInt64
    var fuseOptions: [String]
    var prefetch: Prefetcher.Configuration
    /// Cap on the background transfers' combined speed, bytes per second.
    var maxRate: UInt64?
    /// CA file and proxy (else libcurl's `http_proxy`/`https_proxy`/`no_proxy`).
    var clientConfiguration: CurlClient.Configuration
    var cacheLimits = CacheLimits()
    /// Whether the kernel may read complete files from the cache by itself.
    var passthrough = true
    /// Where Prometheus metrics are served; nil serves none (`rangefs status --json` still counts).
    var metricsAddress: MetricsAddress?
    var logLevel: Logger.Level
    /// When launched in the background: where to say "ready"; logs then go to the cache's log file.
    var readyDescriptor: Int32?

    struct Listing {
        /// Which kind of server lists the directories.
        enum Source {
            /// A web server's pages (autoindex and the like).
            case webDirectory
            /// A WebDAV server's `PROPFIND` replies.
            case webDAV
            /// A bucket's ListObjectsV2 pages.
            case bucket(BucketAddress)
            /// A Subsonic music server's library, and how its user signs in.
            case subsonic(SubsonicSignIn)
            /// An SSH server's SFTP directories, listed on one session signed in so.
            case sftp(SFTPAddress, SSHSignIn)
        }

        var root: URL
        var source: Source
        var settings: ListedDirectories.Settings

        /// The SSH session an SFTP source lists and probes with (`timeout`: the longest wait on
        /// the server); nil for the others.
        func sftpConnection(timeout: Duration, logger: Logger) -> SFTPConnection? {
            guard case .sftp(let address, let signIn) = source else { return nil }
            return SFTPConnection(address: address, signIn: signIn, timeout: timeout, logger: logger)
        }

        /// The part that lists one directory of this source (`sftp`: the source's session, for an SFTP one).
        func lister(client: CurlClient, headers: [String: String], policy: FetchPolicy, sftp: SFTPConnection?,
                    logger: Logger) -> any DirectoryLister {
            // A web server's and a WebDAV server's listings are one document a directory.
            let download = ListingDownload(client: client, headers: headers, headersOrigin: root, policy: policy,
                                           maxEntries: settings.maxEntries, logger: logger)
            return switch source {
            case .webDirectory:
                WebDirectoryLister(download)
            case .webDAV:
                WebDAVLister(download)
            case .bucket(let address):
                BucketLister(client: client, address: address, policy: policy, maxEntries: settings.maxEntries, logger: logger)
            case .subsonic(let signIn):
                SubsonicLister(download, address: signIn.address)
            case .sftp:
                // `sftpConnection` makes one for every SFTP source: the session its probes share.
                SFTPLister(connection: sftp!, maxEntries: settings.maxEntries)
            }
        }

        /// Why the mount cannot start when the root's listing failed with `error`.
        func refusal(_ error: FetchError) -> String {
            // A server that wants credentials says so with a 401 alone: say how to give them.
            let hint = if case .remote(.status(401, _, _)) = error.reason {
                " (the server asks for credentials: --user NAME with --password-file FILE, or --header 'Authorization: Bearer TOKEN')"
            } else { "" }
            return switch source {
            case .webDirectory: "cannot mount the web directory \(error)\(hint)"
            case .webDAV: "cannot mount the WebDAV collection \(error)\(hint)"
            case .bucket(let address): "cannot mount \(MountRunner.refusal(error, of: address))"
            case .subsonic(let signIn): "cannot mount the Subsonic server \(signIn.address.displayName): \(error.reason)"
            case .sftp: "cannot mount the SFTP directory \(error)"
            }
        }
    }

    func run() throws {
        if readyDescriptor != nil {
            // Leave the launching terminal's session so its hang-up does not unmount us.
            setsid()
            // Started as /proc/self/exe (`BackgroundLaunch`): `pgrep rangefs` and `top` find it by this name.
            ThreadNames.nameCurrentThread("rangefs")
        }
        // Everything the mount creates (database, journal, data, log, socket) is its owner's alone.
        umask(0o077)
        // The first open and read would otherwise start libdispatch's threads themselves.
        DispatchWarmUp.start()
        if readyDescriptor != nil {
            // In the background: the cache's log file (stderr after launch) and syslog/the journal.
            LoggingSystem.bootstrap { label in
                MultiplexLogHandler([StreamLogHandler.standardError(label: label), SyslogLogHandler(label: label)])
            }
        } else {
            LoggingSystem.bootstrap(StreamLogHandler.standardError)
        }
        let logger = {
            var logger = Logger(label: "rangefs")
            logger.logLevel = logLevel
            return logger
        }()

        let directory: CacheDirectory
        let lock: CacheLock
        let store: MetadataStore
        do {
            directory = try CacheDirectory(creatingAt: cachePath)
            lock = try directory.lock()
            store = try MetadataStore(path: directory.metadataPath)
        } catch {
            throw CommandFailure("\(error)")
        }
        // From here on, whether the mount ends or a step below fails, what has started stops
        // in one place and one order.
        let started = StartedParts()
        defer {
            started.stop()
            withExtendedLifetime(lock) {}
        }
        let metrics = MountMetrics()
        var clientConfiguration = clientConfiguration
        var subsonic: (signIn: SubsonicSignIn, dialect: SubsonicDialect, kept: Bool)?
        if case .subsonic(let signIn)? = listing?.source {
            let (dialect, kept) = Self.subsonicDialect(signIn, store: store)
            clientConfiguration.dialect = dialect
            subsonic = (signIn, dialect, kept)
        }
        clientConfiguration.metrics = metrics
        clientConfiguration.backgroundBytesPerSecond = maxRate
        let client = CurlClient(configuration: clientConfiguration, logger: logger)
        // An SFTP mount's listings and probes go over one SSH session; its reads through `client`.
        let sftp = listing?.sftpConnection(timeout: .seconds(clientConfiguration.stallTimeoutSeconds), logger: logger)
        let remote: any RemoteClient = sftp.map { SFTPClient(transfers: client, connection: $0) } ?? client
        var policy = FetchPolicy()
        policy.backgroundBytesPerSecond = maxRate.map { max(1, $0 / UInt64(prefetch.maxDownloads)) }
        let committer = Committer()
        started.transfers = (remote, committer)
        if let subsonic {
            // Through the mount's own client: its first listing goes on the connection the ping opened.
            try Self.signIn(subsonic.signIn, dialect: subsonic.dialect, kept: subsonic.kept, client: client, store: store, logger: logger)
        }
        let environment = FetchEnvironment(client: remote, store: store, directory: directory,
                                           committer: committer, policy: policy, logger: logger, metrics: metrics)
        let filesystemBox = Mutex<MountedFilesystem?>(nil)
        let shownBox = Mutex<(catalog: FileCatalog, prefetcher: Prefetcher)?>(nil)
        let directories = try listing.map { listing in
            try listedDirectories(listing, client: client, sftp: sftp, policy: policy, store: store, committer: committer, logger: logger) { snapshot in
                guard let shown = shownBox.withLock({ $0 }) else { return }
                let manifest = snapshot.manifest.addingHeaders(loader.headers, onlyOn: listing.root)
                let indices = shown.catalog.replaceManifest(with: manifest)
                filesystemBox.withLock { $0 }?.replaceTree(with: MountedTree(manifest: manifest, catalogIndices: indices,
                                                                             directories: snapshot.directories))
                shown.catalog.filesChangedOnServer(snapshot.changedFiles)
                shown.prefetcher.manifestChanged()
            }
        }
        let known = directories?.snapshot
        let manifest = known.map { $0.manifest.addingHeaders(loader.headers, onlyOn: listing?.root) } ?? self.manifest
        let catalog = try FileCatalog(manifest: manifest, blockSize: blockSize, limits: cacheLimits,
                                      statedSizesAreExact: listing != nil, environment: environment)
        let prefetcher = Prefetcher(catalog: catalog, client: remote, store: store, configuration: prefetch, logger: logger)
        shownBox.withLock { $0 = (catalog, prefetcher) }
        let refresher = directories.map { directories in
            RunningMount.ManifestRefresher(
                load: { [loader] in
                    for failure in directories.relistAll(timeout: .seconds(300)) {
                        logger.warning("refresh: \(failure); its directory shows what was known")
                    }
                    return directories.snapshot.manifest.addingHeaders(loader.headers, onlyOn: listing?.root)
                },
                show: { _, _ in directories.showNow() })
        } ?? RunningMount.ManifestRefresher(
            load: { [loader] in try loader.load(client: client) },
            show: { manifest, indices in
                filesystemBox.withLock { $0 }?.replaceTree(with: MountedTree(manifest: manifest, catalogIndices: indices))
            })
        let listBelow = directories.map { directories in
            { @Sendable (paths: [String]) in
                for path in paths {
                    // "" or "." is the whole mount; a path the tree does not hold lists nothing.
                    let top = path.isEmpty || path == "." ? nil : try? EntryPath(validating: path)
                    for failure in directories.listEverything(below: top, timeout: .seconds(300)) {
                        logger.warning("listing below \(path.isEmpty ? "the top" : path): \(failure)")
                    }
                }
            }
        }
        let mount = RunningMount(mountpoint: mountpoint, catalog: catalog, prefetcher: prefetcher, refresher: refresher,
                                 listBelow: listBelow)
        do {
            started.control = try ControlServer(path: directory.controlSocketPath, control: mount)
            started.metricsListener = try metricsAddress.map { address throws(MetricsAddressError) in
                if !address.isLoopback {
                    logger.warning("metrics are served on \(address), which is not a loopback address: anyone who can reach it sees them")
                }
                return try MetricsListener(address: address, logger: logger) { mount.metricsExposition() }
            }
        } catch {
            throw CommandFailure("\(error)")
        }
        let tree = MountedTree(manifest: manifest, catalogIndices: Array(manifest.entries.indices),
                               directories: known?.directories ?? [])
        let namespace = tree.namespace
        // libfuse's low-level session does not take uid=, gid= and umask=: they are applied here.
        let (overrides, sessionOptions) = AttributeOverrides.extract(from: fuseOptions)
        var ownership = FileOwnership()
        if let uid = overrides.uid { ownership.uid = uid }
        if let gid = overrides.gid { ownership.gid = gid }
        if let umask = overrides.umask { ownership.umask = mode_t(umask) }
        let filesystem = MountedFilesystem(tree: tree, catalog: catalog, directories: directories,
                                           fileStatus: { mount.fileStatus(ofEntry: $0) },
                                           controlSocketPath: directory.controlSocketPath, ownership: ownership, logger: logger)
        filesystemBox.withLock { $0 = filesystem }
        // A listing that arrived while the parts were put together shows now.
        directories?.showNow()
        let session: FuseSession
        do {
            session = try FuseSession(filesystem: filesystem, mountpoint: mountpoint, options: sessionOptions,
                                      passthrough: passthrough, logger: logger)
        } catch {
            throw CommandFailure("\(error)")
        }
        started.session = session
        if let readyDescriptor {
            redirectOutput(to: directory.logPath)
            _ = BackgroundLaunch.readyMessage.withCString { write(readyDescriptor, $0, strlen($0)) }
            close(readyDescriptor)
        }
        let metricsNote = started.metricsListener.map { ", metrics at http://\($0.address)/metrics" } ?? ""
        let what = listing == nil ? "\(namespace.fileCount) files" : "\(namespace.fileCount) files known, directories listed as they are opened"
        logger.info("mounted \(manifest.source) at \(mountpoint): \(what), cache in \(cachePath), prefetch \(prefetch.policy.rawValue)\(metricsNote)")
        started.prefetcher = prefetcher
        prefetcher.start()
        _ = session.run()
        logger.info("unmounting \(mountpoint)")
        started.stop()
        logger.info("unmounted \(mountpoint)")
    }

    /// What a mount has started, stopped in the order that loses nothing, whether the mount ends
    /// or a step of its start fails: background work first, then whoever could ask for more
    /// (control socket, metrics), then transfers, committing what arrived; the kernel's mount
    /// goes last. A class, so that `run`'s `defer` sees what was started after it was set up;
    /// used by `run`'s thread alone.
    private final class StartedParts {
        var prefetcher: Prefetcher?
        var control: ControlServer?
        var metricsListener: MetricsListener?
        var transfers: (client: any RemoteClient, committer: Committer)?
        var session: FuseSession?

        /// Stops each part once; a second call finds nothing left.
        func stop() {
            prefetcher?.stop()
            metricsListener?.stop()
            control?.stop()
            if let transfers {
                transfers.client.shutdown()
                transfers.committer.drain()
            }
            session?.close()
            (prefetcher, metricsListener, control, transfers, session) = (nil, nil, nil, nil, nil)
        }
    }

    /// The directories of a web directory mount, with the listings an earlier mount kept. When
    /// none is kept for the root, its listing is asked for now: a wrong URL, a page that is no
    /// listing or a refusal is said before anything is mounted.
    private func listedDirectories(_ listing: Listing, client: CurlClient, sftp: SFTPConnection?, policy: FetchPolicy, store: MetadataStore,
                                   committer: Committer, logger: Logger,
                                   onChange: @escaping @Sendable (ListedDirectories.Snapshot) -> Void) throws -> ListedDirectories {
        let stored: [String: StoredListing]
        do {
            stored = try store.allListings()
        } catch {
            throw CommandFailure("\(error)")
        }
        let lister = listing.lister(client: client, headers: loader.headers, policy: policy, sftp: sftp, logger: logger)
        let directories = ListedDirectories(
            root: listing.root, lister: lister, settings: listing.settings, stored: stored, logger: logger,
            save: { url, kept in
                committer.schedule {
                    do { try store.saveListing(kept, url: url.cacheKey) } catch { logger.error("cannot keep the listing of \(url.redactedForDisplay): \(error)") }
                }
            }, onChange: onChange)
        guard !directories.isListed(nil) else { return directories }
        let outcome = Mutex<Result<Void, FetchError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        directories.ensureListed(nil) { result in
            outcome.withLock { $0 = result }
            done.signal()
        }
        // Each attempt has its own timeout; this only bounds the retries between them.
        guard done.wait(timeout: .now() + 600) == .success, let result = outcome.withLock({ $0 }) else {
            throw CommandFailure("\(listing.root.redactedForDisplay): no listing within 10 minutes")
        }
        if case .failure(let error) = result {
            throw CommandFailure(listing.refusal(error))
        }
        return directories
    }

    /// Why a bucket's listing failed, in the sentence its S3 error code explains (which names
    /// the bucket and says what to change), else the bucket and the failure.
    static func refusal(_ error: FetchError, of bucket: BucketAddress) -> String {
        if case .remote(.status(_, _, let detail?)) = error.reason { return detail.explanation }
        return "\(bucket.displayName): \(error.reason)"
    }

    /// From now on stdout and stderr (and so the log) go to the cache's log file.
    private func redirectOutput(to path: String) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { return }
        dup2(descriptor, 1)
        dup2(descriptor, 2)
        close(descriptor)
    }
}
