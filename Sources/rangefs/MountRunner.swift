import Foundation
import Logging
import RangeFSCore
import RangeFSFuse
import Synchronization

/// Puts the parts together for one mount, serves it until unmounted, and shuts down in the
/// order that loses nothing: stop transfers, commit what arrived, then release the kernel mount.
struct MountRunner {
    var manifest: Manifest
    /// How the manifest is read again on `rangefs refresh`: same place, format and headers.
    var loader: ManifestLoader
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

    func run() throws {
        if readyDescriptor != nil {
            // Leave the launching terminal's session so its hang-up does not unmount us.
            setsid()
        }
        // Everything the mount creates (database, journal, data, log, socket) is its owner's alone.
        umask(0o077)
        if readyDescriptor != nil {
            // In the background: the cache's log file (stderr after launch) and syslog/the journal.
            LoggingSystem.bootstrap { label in
                MultiplexLogHandler([StreamLogHandler.standardError(label: label), SyslogLogHandler(label: label)])
            }
        } else {
            LoggingSystem.bootstrap(StreamLogHandler.standardError)
        }
        var logger = Logger(label: "rangefs")
        logger.logLevel = logLevel

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
        let metrics = MountMetrics()
        var clientConfiguration = clientConfiguration
        clientConfiguration.metrics = metrics
        let client = CurlClient(configuration: clientConfiguration, logger: logger)
        var policy = FetchPolicy()
        policy.backgroundBytesPerSecond = maxRate.map { max(1, $0 / UInt64(prefetch.maxDownloads)) }
        let environment = FetchEnvironment(client: client, store: store, directory: directory,
                                           committer: Committer(), policy: policy, logger: logger, metrics: metrics)
        let catalog = try FileCatalog(manifest: manifest, blockSize: blockSize, limits: cacheLimits, environment: environment)
        let prefetcher = Prefetcher(catalog: catalog, client: client, store: store, configuration: prefetch, logger: logger)
        let filesystemBox = Mutex<MountedFilesystem?>(nil)
        let refresher = RunningMount.ManifestRefresher(
            load: { [loader] in try loader.load(client: client) },
            show: { manifest, indices in
                filesystemBox.withLock { $0 }?.replaceTree(with: MountedTree(manifest: manifest, catalogIndices: indices))
            })
        let mount = RunningMount(mountpoint: mountpoint, catalog: catalog, prefetcher: prefetcher, refresher: refresher)
        let control: ControlServer
        do {
            control = try ControlServer(path: directory.controlSocketPath, control: mount)
        } catch {
            catalog.shutdown()
            throw CommandFailure("\(error)")
        }
        let metricsListener: MetricsListener?
        do {
            metricsListener = try metricsAddress.map { address throws(MetricsAddressError) in
                if !address.isLoopback {
                    logger.warning("metrics are served on \(address), which is not a loopback address: anyone who can reach it sees them")
                }
                return try MetricsListener(address: address, logger: logger) { mount.metricsExposition() }
            }
        } catch {
            control.stop()
            catalog.shutdown()
            throw CommandFailure("\(error)")
        }
        let tree = MountedTree(manifest: manifest, catalogIndices: Array(manifest.entries.indices))
        let namespace = tree.namespace
        // libfuse's low-level session does not take uid=, gid= and umask=: they are applied here.
        let (overrides, sessionOptions) = AttributeOverrides.extract(from: fuseOptions)
        var ownership = FileOwnership()
        if let uid = overrides.uid { ownership.uid = uid }
        if let gid = overrides.gid { ownership.gid = gid }
        if let umask = overrides.umask { ownership.umask = mode_t(umask) }
        let filesystem = MountedFilesystem(tree: tree, catalog: catalog, fileStatus: { mount.fileStatus(ofEntry: $0) },
                                           controlSocketPath: directory.controlSocketPath, ownership: ownership, logger: logger)
        filesystemBox.withLock { $0 = filesystem }
        let session: FuseSession
        do {
            session = try FuseSession(filesystem: filesystem, mountpoint: mountpoint, options: sessionOptions,
                                      passthrough: passthrough, logger: logger)
        } catch {
            metricsListener?.stop()
            control.stop()
            catalog.shutdown()
            throw CommandFailure("\(error)")
        }
        if let readyDescriptor {
            redirectOutput(to: directory.logPath)
            _ = BackgroundLaunch.readyMessage.withCString { write(readyDescriptor, $0, strlen($0)) }
            close(readyDescriptor)
        }
        let metricsNote = metricsListener.map { ", metrics at http://\($0.address)/metrics" } ?? ""
        logger.info("mounted \(manifest.source) at \(mountpoint): \(namespace.fileCount) files, cache in \(cachePath), prefetch \(prefetch.policy.rawValue)\(metricsNote)")
        prefetcher.start()
        _ = session.run()
        logger.info("unmounting \(mountpoint)")
        prefetcher.stop()
        metricsListener?.stop()
        control.stop()
        catalog.shutdown()
        session.close()
        withExtendedLifetime(lock) {}
        logger.info("unmounted \(mountpoint)")
    }

    /// From now on stdout and stderr (and so the log) go to the cache's log file.
    private func redirectOutput(to path: String) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return }
        dup2(descriptor, 1)
        dup2(descriptor, 2)
        close(descriptor)
    }
}
