import ArgumentParser
import Foundation
import Logging
import RangeFSCore

struct MountCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mount",
        abstract: "Mount a web directory, a WebDAV server, an SSH server's directory (SFTP), an S3 bucket, a Subsonic music server, or the files of a manifest, at a directory.",
        discussion: """
        Returns once the filesystem is mounted; the mount keeps running in the background and \
        logs to rangefs.log in its cache directory and to syslog (the journal). With -f it stays \
        in front and logs to stderr; Ctrl-C or SIGTERM unmounts, and so do 'rangefs unmount' and umount.

        -o takes FUSE options (allow_other, default_permissions, ...) and, as key=value, the \
        settings of the flags below: \(MountSettings.keyList). A flag given on the \
        command line wins over the same setting in -o. Options meant for mount(8) (rw, ro, \
        defaults, noauto, user, _netdev, nofail, x-systemd.*) are ignored.

        'rangefs MANIFEST MOUNTPOINT -o OPTIONS' is short for 'rangefs mount ...': that is how \
        'mount -t fuse.rangefs' and /etc/fstab start rangefs, through mount.fuse3, which looks \
        for rangefs on the standard PATH (install it in /usr/local/bin or /usr/bin).

        A URL ending in '/' (or any URL with --format index) is a web directory: the server's own \
        listing (nginx, Apache, lighttpd, Python's http.server, any page of links) is mounted, \
        the top directory at once and every other directory when first looked at. Listings are \
        kept in the cache and shown at once by the next mount, also offline; one older than \
        --dir-cache-time is checked again when next looked at, and 'rangefs refresh' lists every \
        directory seen again.

        A dav://HOST/PATH/ or davs://HOST/PATH/ address (or an http(s) URL with --format webdav) \
        is a WebDAV collection (Nextcloud, ownCloud, a NAS, Apache mod_dav, rclone serve webdav), \
        mounted the same way: each directory listed with one PROPFIND (Depth: 1), whose exact \
        sizes and dates ls shows without a request per file; files are read with ranged GETs \
        over http (dav://) or https (davs://). --user with --password-file (or the password asked \
        on the terminal), --netrc, or --header 'Authorization: Bearer ...' signs in.

        An sftp://USER@HOST[:PORT]/PATH/ address mounts a directory of an SSH server the same \
        way (PATH is absolute; /~/PATH/ is below the user's home): each directory listed over \
        SFTP with its exact sizes and dates, files read with ranged SFTP reads. It signs in as \
        OpenSSH does: the keys of the ssh-agent (SSH_AUTH_SOCK), then --identity or the first of \
        ~/.ssh/id_ed25519, id_ecdsa, id_rsa; an encrypted key's passphrase comes from \
        --passphrase-file or is asked on the terminal, a password from --password-file. The \
        server's host key must be in ~/.ssh/known_hosts (or --known-hosts): an unknown or changed \
        key refuses the mount and says how to accept it. A symbolic link is shown as what it \
        points to when that is inside the mounted directory, and left out otherwise.

        An s3://BUCKET/PREFIX/ address mounts a bucket's keys below PREFIX the same way, each \
        directory listed with ListObjectsV2 and every request signed (AWS Signature Version 4) \
        with the keys of --profile, else of AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and \
        AWS_SESSION_TOKEN), else of the profile named by AWS_PROFILE, else of the default profile \
        in ~/.aws/credentials and ~/.aws/config; --no-sign-request reads a public bucket. \
        --endpoint (with --path-style for most servers) reaches an S3-compatible server.

        A subsonic+https://USER@HOST[:PORT]/ (or subsonic+http://) address mounts the library of a \
        Subsonic-API music server (Navidrome, Gonic, Airsonic, Supysonic) as \
        Artist/Album (Year)/NN Title.ext, each directory listed when first looked at, with the \
        sizes and dates the server states; --subsonic-layout folders shows the server's own \
        folders instead. Tracks are the original files (the API's download, never a transcode), \
        read with ranged GETs. The user (from the address or --user) signs in with the password \
        of --password-file, else of $\(SubsonicAddress.passwordVariable), else typed at the \
        terminal; it is added to each request as it goes out (a token and a fresh salt, or the \
        hex form for servers older than API 1.13) and kept nowhere.

        The manifest is a file or an http(s) URL, in any of these formats: plain text (one URL a \
        line, or PATH<TAB>URL), JSON or YAML (a list of entries with url, or urls for mirrors, and \
        optional path, size, sha256, headers, mtime), an M3U/M3U8 playlist, a podcast RSS feed, or \
        a Metalink 4 or 3.0 document (file names, http(s) URLs by priority, size, sha-256 hash and \
        sha-256 pieces). A file with several URLs is read from the best one that works: each \
        mirror is asked for the file's size before its first range and dropped for that file when \
        it differs, one that fails rests while the others take its requests, and a file none of \
        them serves fails with EIO naming each. Where piece hashes are given, a piece's bytes are \
        shown to readers and kept only once they match, and a bad piece drops the source that \
        served it and comes from another. The format is detected from \
        the file name's extension (.txt, .json, .yaml, .m3u8, .rss, .meta4, .metalink, ...), else \
        from the content; --format overrides it. A manifest fetched by URL uses the same --header, \
        --proxy and --ca-file as the files, and relative playlist entries resolve against its URL. \
        'rangefs refresh' reads the manifest again from the same place, in the same format.

        The largest file a mount accepts is \(FileSizeLimit.shown): a file whose server, listing, \
        manifest or cache states more fails alone with EFBIG ("File too large", the reason in the \
        log and 'rangefs status'); the other files read as usual. Manifests, feeds and listings \
        nested more than \(NestingDepthGuard.maxDepth) levels deep are refused.

        Examples:
          rangefs mount https://example.com/music/ /mnt/music
          rangefs mount davs://nas.local/remote.php/dav/files/me/Music/ /mnt/music
          rangefs mount sftp://me@nas.local/srv/music/ /mnt/music
          rangefs mount --identity ~/.ssh/media_key sftp://me@seedbox.example:2222/~/media/ /mnt/media
          rangefs mount s3://media-bucket/music/ /mnt/music
          rangefs mount --password-file ~/.navidrome-password \\
            subsonic+https://me@music.example.org/ /mnt/music
          rangefs mount --endpoint http://127.0.0.1:9000 --path-style s3://media/ /mnt/media
          rangefs mount media.txt /mnt/media
          rangefs mount https://example.com/podcast/feed.rss /mnt/podcast
          rangefs mount --format m3u --header 'Authorization: Bearer TOKEN' \\
            https://example.com/list?id=7 /mnt/list
          rangefs mount --cache-dir /var/cache/media --block-size 1M \\
            media.txt /mnt/media
          rangefs mount -f -o allow_other,default_permissions media.txt /mnt/media
          mount -t fuse.rangefs -o cache_dir=/var/cache/rangefs/media,prefetch=opened \\
            /etc/rangefs/media.txt /mnt/media
          # a line of /etc/fstab:
          /etc/rangefs/media.txt /mnt/media fuse.rangefs _netdev,cache_dir=DIR 0 0
        """
    )

    @Argument(help: "A web directory's URL (ending in '/'), a dav:// or davs:// address, an sftp://USER@HOST/PATH/ address, an s3://BUCKET/PREFIX/ address, a subsonic+https://USER@HOST/ address, or the manifest: a file or an http(s) URL (text, JSON, YAML, M3U, RSS or Metalink).")
    var manifest: String

    @Argument(help: "An existing directory to mount on.")
    var mountpoint: String

    @Option(help: ArgumentHelp("The manifest's format: auto detects it from the name, then the content.",
                               valueName: "format"))
    var format: ManifestFormatOption = .auto

    @Option(help: ArgumentHelp("How long a web directory's listing is trusted: one older than this is asked for again (with its ETag or date) when the directory is next looked at, and a file it then shows with another size or date is fetched anew, e.g. 30s, 5m, 1h.",
                               valueName: "duration"))
    var dirCacheTime: DurationValue = .minutes(5)

    @Option(help: "The most names a web directory's, WebDAV collection's, SFTP directory's or bucket's listings may show together: a directory whose listing would go past it cannot be read (EIO, said in the log), the rest of the mount goes on. Bounds the memory the listings take.")
    var maxListedEntries: Int = ListedDirectories.Settings.defaultMaxEntries

    @Option(help: "Where fetched data is kept (default: $XDG_CACHE_HOME/rangefs/<mountpoint>, else ~/.cache/rangefs/<mountpoint>).")
    var cacheDir: String?

    @Option(help: ArgumentHelp("Cache block size for newly seen files, e.g. 256K or 1M (4K to 64M).", valueName: "size"))
    var blockSize: SizeValue = .kibibytes(256)

    @Option(help: "What to fetch in the background: all (the start and end of every file first, where tags live, then every file), opened (the files opened) or none.")
    var prefetch: PrefetchPolicy = .all

    @Option(help: "Background transfers at once that complete files; every server with work gets one before any server gets a second. The starts and ends of a collection's files go up to 6 at once (with --max-rate, up to this many).")
    var maxDownloads: Int = 3

    @Option(help: ArgumentHelp("Cap on background download speed in bytes per second, e.g. 2M (foreground reads are never capped).",
                               valueName: "size"))
    var maxRate: SizeValue?

    @Option(help: "A file of extra CA certificates (PEM) to trust for https, besides the system's.")
    var caFile: String?

    @Option(help: ArgumentHelp("Evict least recently used data to keep the cache at most this big, e.g. 20G.", valueName: "size"))
    var cacheMaxSize: SizeValue?

    @Option(help: ArgumentHelp("Keep at least this much free on the cache's disk, e.g. 5G: background fetching stops there and reads evict least recently used data or are served without storing. Default: 15% of the disk, at most 4G; 0 turns the floor off.",
                               valueName: "size"))
    var cacheMinFree: SizeValue?

    @Option(help: "HTTP proxy for every request, e.g. http://cache.local:3128 (default: $http_proxy, $https_proxy, $no_proxy).")
    var proxy: String?

    @Option(help: ArgumentHelp("Serve Prometheus metrics at http://HOST:PORT/metrics, e.g. 127.0.0.1:9464. A bare PORT listens on 127.0.0.1; any other host (0.0.0.0, a LAN address) must be written out, as the metrics then leave this machine.",
                               valueName: "address"),
            transform: MetricsAddress.parsedArgument)
    var metricsAddress: MetricsAddress?

    @Option(name: .customLong("header"), help: "An extra request header, 'Name: value' (repeatable), also for a manifest given by URL; never logged and not shown by ps in the background mount.")
    var headers: [String] = []

    @OptionGroup(title: "Signing in")
    var signIn: SignInOptions

    @OptionGroup(title: "S3 buckets")
    var bucketOptions: BucketOptions

    @OptionGroup(title: "SSH servers (sftp://)")
    var sshOptions: SSHOptions

    @OptionGroup(title: "Subsonic music servers")
    var subsonicOptions: SubsonicOptions

    @Flag(inversion: .prefixedNo, help: "Whether the kernel reads complete files straight from the cache (FUSE passthrough: Linux 6.9 or later, as root; on by default). With --no-passthrough every read passes through rangefs.")
    var passthrough = true

    @Flag(name: [.customShort("f"), .long], help: "Stay in the foreground and log to stderr.")
    var foreground = false

    @Option(name: .customShort("o"), help: ArgumentHelp(
        "Mount options, comma-separated: FUSE options such as allow_other or default_permissions, and this command's settings as key=value, e.g. cache_dir=DIR,prefetch=none (repeatable).",
        valueName: "options"))
    var options: [String] = []

    @Option(help: "The least important messages the log keeps.")
    var logLevel: Logger.Level = .info

    /// Set by the background launch: the pipe on which the mount reports that it is up.
    @Option(help: .hidden)
    var readyFd: Int32?

    /// Set by the background launch of an sftp:// mount: the pipe that carries the key's
    /// passphrase and the password read or asked for by the launching command.
    @Option(help: .hidden)
    var sshSecretsFd: Int32?

    /// Set by the background launch: the pipe that carries the `--header`s, which may hold
    /// secrets and so stay off the mount process's command line.
    @Option(help: .hidden)
    var headerFd: Int32?

    /// Set by the background launch when the manifest URL holds credentials or a query (a
    /// token, often): the real URL comes on this pipe, the command line shows it redacted.
    @Option(help: .hidden)
    var manifestFd: Int32?

    func validate() throws {
        guard (4 << 10)...(64 << 20) ~= blockSize.bytes else {
            throw ValidationError("--block-size must be between 4K and 64M, e.g. 256K (got '\(blockSize.argument)')")
        }
        guard (1...64).contains(maxDownloads) else {
            throw ValidationError("--max-downloads must be between 1 and 64")
        }
        if let maxRate, maxRate.bytes == 0 {
            throw ValidationError("--max-rate must be a positive number of bytes per second, e.g. 500K or 2M (got '\(maxRate.argument)')")
        }
        if let proxy, !(proxy.hasPrefix("http://") || proxy.hasPrefix("https://") || proxy.hasPrefix("socks")) {
            throw ValidationError("--proxy must be a URL such as http://proxy:3128 (got '\(proxy)')")
        }
        guard maxListedEntries >= 1 else { throw ValidationError("--max-listed-entries must be 1 or more") }
        _ = try HeaderArguments.parse(headers)
        if let caFile, !FileManager.default.isReadableFile(atPath: caFile) {
            throw ValidationError("--ca-file \(caFile) cannot be read")
        }
    }

    /// A RangeFS mount whose process died leaves "Transport endpoint is not connected"
    /// behind; mounting there again is what the user wants, so clear it first.
    /// `statvfs`, not `stat`: the kernel may still answer `stat` of the root from its
    /// attribute cache, but a filesystem query always reaches the dead process.
    private func clearStaleMount(at path: String) throws {
        var info = statvfs()
        guard statvfs(path, &info) != 0, errno == ENOTCONN || errno == ECONNABORTED,
              MountTable.current().contains(where: { $0.mountpoint == path && $0.type == "fuse.rangefs" }) else { return }
        let result = try runTool("/bin/fusermount3", ["-u", "-z", path], timeout: .seconds(10))
        guard result.status == 0 else {
            throw CommandFailure("\(path) is a stale mount and could not be cleared: \(result.output)")
        }
    }

    mutating func run() throws {
        let mountPath = absolutePath(mountpoint)
        var clientConfiguration = CurlClient.Configuration()
        clientConfiguration.caFile = caFile.map(absolutePath)
        clientConfiguration.proxy = proxy
        clientConfiguration.netrcFile = try signIn.netrcPath()
        // The background mount gets a URL holding secrets on a pipe, which reads once.
        var argument: String
        do {
            argument = try manifestFd.map { try BackgroundLaunch.readPrivateInput(from: $0) } ?? manifest
        } catch {
            throw CommandFailure("\(error)")
        }
        // An sftp:// address is listed over SSH and read with ranged SFTP reads, signed in once
        // here (a passphrase asked now goes to the background mount on a pipe).
        let sftp = try sftpSource(argument)
        clientConfiguration.ssh = sftp?.signIn
        // A dav:// or davs:// address is its http(s) URL listed by WebDAV (so is the background
        // mount started below: it is given that URL and --format webdav).
        if let collection = try Self.webDAVCollection(argument, format: format) {
            argument = collection.absoluteString
            format = .webDAV
        }
        // An s3:// address is a bucket's listing, read and signed by the bucket's own rules.
        let bucket = try bucketOptions.bucket(for: argument)
        clientConfiguration.dialect = bucket?.dialect
        // A subsonic+https:// address is a music server's library; its user signs in when the
        // mount starts (`MountRunner`), which finds the form of credentials the server takes.
        let subsonic = try subsonicOptions.server(for: argument, signIn: signIn)
        let loader = try sftp.map { ManifestLoader(location: .remote($0.address.rootURL), headers: [:]) }
            ?? manifestLoader(argument: argument, bucket: bucket, subsonic: subsonic)
        let listingRoot = try sftp.map { $0.address.rootURL } ?? bucket.map { $0.address.rootURL } ?? subsonic?.rootURL
            ?? Self.listingRoot(of: loader, format: format)
        // A mount in the background reads the manifest in the process started below, which
        // reports a bad one on this terminal and mounts nothing: reading it here as well would
        // double the time to mount (100,000 entries take about half a second to read). A web
        // directory is listed by the mount itself, as it is looked at.
        let startsBackgroundMount = !foreground && readyFd == nil
        let loaded = startsBackgroundMount ? nil
            : try listingRoot.map { Manifest(source: $0.redactedForDisplay, entries: []) }
                ?? load(loader, clientConfiguration: clientConfiguration)
        try clearStaleMount(at: mountPath)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: mountPath, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw CommandFailure("mountpoint \(mountPath) is not a directory")
        }
        if MountTable.current().contains(where: { $0.mountpoint == mountPath }) {
            throw CommandFailure("\(mountPath) is already a mountpoint (rangefs unmount \(mountPath) first)")
        }
        let mountOptions = options.flatMap { $0.split(separator: ",").map(String.init) }

        if startsBackgroundMount {
            return try startBackgroundMount(loader: loader, mountPath: mountPath, mountOptions: mountOptions,
                                            sftp: sftp, bucket: bucket, subsonic: subsonic)
        }
        guard let loaded else { preconditionFailure("a mount served by this process has read its manifest") }
        var prefetchConfiguration = Prefetcher.Configuration()
        prefetchConfiguration.policy = prefetch
        prefetchConfiguration.maxDownloads = maxDownloads
        // --max-rate is shared by --max-downloads transfers (`MountRunner`): heads take no more at once.
        if maxRate != nil { prefetchConfiguration.maxHeadTransfers = maxDownloads }
        var listingSettings = ListedDirectories.Settings()
        listingSettings.maxAge = dirCacheTime.duration
        listingSettings.maxEntries = maxListedEntries
        let runner = MountRunner(manifest: loaded, loader: loader,
                                 listing: listingRoot.map { root in
                                     MountRunner.Listing(root: root, source: sftp.map { .sftp($0.address, $0.signIn) }
                                                             ?? bucket.map { .bucket($0.address) }
                                                             ?? subsonic.map { .subsonic($0.signIn) }
                                                             ?? (format.directory == .webDAV ? .webDAV : .webDirectory),
                                                         settings: listingSettings)
                                 },
                                 mountpoint: mountPath, cachePath: cachePath,
                                 blockSize: blockSize.bytes, fuseOptions: mountOptions,
                                 prefetch: prefetchConfiguration, maxRate: maxRate?.bytes,
                                 clientConfiguration: clientConfiguration,
                                 cacheLimits: CacheLimits(maxBytes: cacheMaxSize?.bytes,
                                                          minFree: cacheMinFree.map { .bytes($0.bytes) } ?? .standard),
                                 passthrough: passthrough, metricsAddress: metricsAddress,
                                 logLevel: logLevel,
                                 readyDescriptor: readyFd)
        try runner.run()
    }

    /// The web directory or WebDAV collection whose listing is mounted (with its trailing `/`),
    /// or nil for a manifest: a URL ending in `/`, or any http(s) URL with `--format index` or
    /// `--format webdav`.
    static func listingRoot(of loader: ManifestLoader, format: ManifestFormatOption) throws -> URL? {
        guard case .remote(let url) = loader.location else {
            switch format.directory {
            case .index: throw CommandFailure("--format index mounts a web directory: give its http(s) URL")
            case .webDAV: throw CommandFailure("--format webdav mounts a WebDAV collection: give its http(s), dav:// or davs:// URL")
            case nil: return nil
            }
        }
        let isDirectory = URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedPath.hasSuffix("/") ?? false
        guard format.directory != nil || (format.format == nil && isDirectory) else { return nil }
        return ListedDirectories.directoryURL(url)
    }

    /// The http(s) URL of a `dav://` or `davs://` address, or nil for any other argument.
    static func webDAVCollection(_ argument: String, format: ManifestFormatOption) throws -> URL? {
        let url: URL?
        do {
            url = try WebDAVAddress.httpURL(of: argument)
        } catch {
            throw CommandFailure("\(error)")
        }
        guard let url else { return nil }
        guard format == .auto || format == .webDAV else {
            throw CommandFailure("--format \(format.argument) does not go with a WebDAV address (\(url.redactedForDisplay))")
        }
        return url
    }

    /// Where fetched data is kept, as an absolute path.
    var cachePath: String {
        absolutePath(cacheDir ?? CacheDirectory.defaultPath(forMountpoint: absolutePath(mountpoint)))
    }

    /// Where the manifest is (`argument`), in which format, and the headers for every request:
    /// from the command line, or for the background mount from the private pipe. A bucket's
    /// "manifest" is its listing, at the prefix's URL.
    private func manifestLoader(argument: String, bucket: BucketSource?, subsonic: SubsonicSource?) throws -> ManifestLoader {
        let headerArguments = try headerFd.map { descriptor in
            try BackgroundLaunch.readPrivateInput(from: descriptor).split(separator: "\n").map(String.init)
        } ?? headers
        var headers = try HeaderArguments.parse(headerArguments)
        if let bucket {
            try signIn.checkNotForBucket()
            return ManifestLoader(location: .remote(bucket.address.rootURL), headers: headers)
        }
        if let subsonic {
            // The user and password go in each API call (`SubsonicDialect`), not in a header.
            return ManifestLoader(location: .remote(subsonic.rootURL), headers: headers)
        }
        let location: ManifestLocation
        do {
            location = try ManifestLocation(argument: argument)
        } catch {
            throw CommandFailure("\(error)")
        }
        let resolved: ManifestLocation = switch location {
        case .file(let path): .file(path: absolutePath(path))
        case .remote: location
        }
        // The background mount gets the Authorization they make with the other headers.
        if headerFd == nil {
            let url: URL? = if case .remote(let url) = resolved { url } else { nil }
            headers = try signIn.adding(to: headers, for: url)
        }
        return ManifestLoader(location: resolved, format: format.format, headers: headers)
    }

    /// Reads the manifest before anything is mounted, so a bad one is reported here and
    /// nothing is mounted half. A remote one is fetched with a client of its own.
    private func load(_ loader: ManifestLoader, clientConfiguration: CurlClient.Configuration) throws -> Manifest {
        let client = loader.isRemote
            ? CurlClient(configuration: clientConfiguration, logger: Logger(label: "rangefs", factory: { _ in SwiftLogNoOpLogHandler() }))
            : nil
        defer { client?.shutdown() }
        do {
            return try loader.load(client: client)
        } catch {
            throw CommandFailure("\(error)")
        }
    }
}
