import ArgumentParser
import Foundation
import Logging
import RangeFSCore

struct ManifestCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "manifest",
        abstract: "Print a web directory's, a WebDAV collection's, an SFTP directory's or a bucket's tree as a manifest, to freeze or edit it.",
        discussion: """
        Lists URL and every directory below it (nginx autoindex in HTML, JSON or XML, Apache \
        mod_autoindex, lighttpd, Python's http.server, or any page of links) and prints each file \
        as a manifest that 'rangefs mount' reads unchanged: 'path<TAB>url' lines (text), or JSON \
        with the sizes and dates the listings state exactly. A link's href names the file, not \
        the text shown; links out of a directory (parent, sort, other hosts) are ignored, and a \
        link whose name cannot be a file name is left out with a note on standard error. A \
        directory that cannot be listed is reported there too, and the exit status is then 1. \
        Empty directories do not appear: a manifest lists files.

        A dav://HOST/PATH/ or davs://HOST/PATH/ address lists a WebDAV collection, one PROPFIND \
        (Depth: 1) a directory, with the exact sizes and dates it states; each file's URL is its \
        http (dav://) or https (davs://) URL.

        An sftp://USER@HOST[:PORT]/PATH/ address lists a directory of an SSH server over SFTP, \
        signed in and with its host key checked as 'rangefs mount' does; each file's URL is its \
        sftp:// URL.

        An s3://BUCKET/PREFIX/ address lists the bucket's keys below PREFIX (ListObjectsV2), \
        signed with the credentials 'rangefs mount' would use; each object's URL is its \
        https (or --endpoint) URL.

        Examples:
          rangefs manifest http://host/music/ > music.txt
          rangefs manifest --format json --header 'Authorization: Bearer TOKEN' https://host/private/ > private.json
          rangefs manifest --no-sign-request s3://public-bucket/photos/ > photos.txt
          rangefs mount music.txt /mnt/music
        """
    )

    enum OutputFormat: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    @Argument(help: "The URL of a directory listing, a dav:// or davs:// address of a WebDAV collection, an sftp://USER@HOST/PATH/ address, or an s3://BUCKET/PREFIX/ address.")
    var url: String

    @Option(help: "text ('path<TAB>url' lines) or json (with sizes and dates).")
    var format: OutputFormat = .text

    @Option(help: "Directory levels listed below URL.")
    var maxDepth: Int = 32

    @Option(help: "Listings fetched at once.")
    var maxListings: Int = 4

    @Option(help: "The most names the listings may show together; a directory whose listing would go past it is not listed.")
    var maxListedEntries: Int = ListedDirectories.Settings.defaultMaxEntries

    @Option(name: .customLong("header"), help: "An extra request header, 'Name: value' (repeatable), e.g. for a protected listing; never written into the manifest.")
    var headers: [String] = []

    @Option(help: "HTTP proxy for every request, e.g. http://cache.local:3128 (default: $http_proxy, $https_proxy, $no_proxy).")
    var proxy: String?

    @Option(help: "A file of extra CA certificates (PEM) to trust for https, besides the system's.")
    var caFile: String?

    @OptionGroup(title: "Signing in")
    var signIn: SignInOptions

    @OptionGroup(title: "S3 buckets")
    var bucketOptions: BucketOptions

    @OptionGroup(title: "SSH servers (sftp://)")
    var sshOptions: SSHOptions

    func validate() throws {
        guard maxDepth >= 0 else { throw ValidationError("--max-depth must be 0 or more") }
        guard (1...64).contains(maxListings) else { throw ValidationError("--max-listings must be 1 to 64") }
        guard maxListedEntries >= 1 else { throw ValidationError("--max-listed-entries must be 1 or more") }
        if let caFile, !FileManager.default.isReadableFile(atPath: caFile) {
            throw ValidationError("--ca-file \(caFile) cannot be read")
        }
    }

    func run() throws {
        let bucket = try bucketOptions.bucket(for: url)
        let root: URL
        let source: MountRunner.Listing.Source
        let sftp: SFTPAddress?
        do {
            sftp = try SFTPAddress.parse(url, localUser: ProcessInfo.processInfo.environment["USER"] ?? NSUserName())
        } catch {
            throw CommandFailure("\(error)")
        }
        if let sftp {
            root = sftp.rootURL
            source = .sftp(sftp, try sshOptions.signIn(for: sftp, passwordFile: signIn.passwordFile))
        } else if let bucket {
            root = bucket.address.rootURL
            source = .bucket(bucket.address)
        } else if let collection = try MountCommand.webDAVCollection(url, format: .auto) {
            root = ListedDirectories.directoryURL(collection)
            source = .webDAV
        } else if case .remote(let url) = try ManifestLocation(argument: url) {
            root = ListedDirectories.directoryURL(url)
            source = .webDirectory
        } else {
            throw ValidationError("URL must be an http(s) URL of a directory listing, a dav:// or davs:// address, an s3:// or an sftp:// address (got '\(url)')")
        }
        var configuration = CurlClient.Configuration()
        configuration.caFile = caFile.map(absolutePath)
        configuration.proxy = proxy
        configuration.netrcFile = try signIn.netrcPath()
        configuration.dialect = bucket?.dialect
        if case .sftp(_, let signIn) = source { configuration.ssh = signIn }
        let client = CurlClient(configuration: configuration, logger: Logger(label: "rangefs", factory: { _ in SwiftLogNoOpLogHandler() }))
        defer { client.shutdown() }
        // What is left out (a bad name, a link out of the tree, too deep) is a note on stderr.
        let notes = Logger(label: "rangefs", factory: { _ in NoteLogHandler() })
        var settings = ListedDirectories.Settings()
        settings.maxDepth = maxDepth
        settings.maxInFlight = maxListings
        settings.maxEntries = maxListedEntries
        if bucket != nil { try signIn.checkNotForBucket() }
        // An SFTP server signs in over SSH (`sshOptions`); --password-file's password is its.
        let headers = sftp != nil ? [:] : try signIn.adding(to: HeaderArguments.parse(headers), for: root)
        let listing = MountRunner.Listing(root: root, source: source, settings: settings)
        let lister = listing.lister(client: client, headers: headers, policy: FetchPolicy(),
                                    sftp: listing.sftpConnection(timeout: .seconds(configuration.stallTimeoutSeconds), logger: notes),
                                    logger: notes)
        let tree = ListedDirectories(root: root, lister: lister, settings: settings, logger: notes) { _ in }
        // Every listing has its own timeout and bounded retries, and the depth bounds how many there are.
        let failures = tree.listEverything(timeout: .seconds(86_400))
        guard tree.isListed(nil) else {
            let why = failures.first.map { failure in bucket.map { MountRunner.refusal(failure, of: $0.address) } ?? "\(failure)" }
            throw CommandFailure(why ?? "\(root.redactedForDisplay): not listed")
        }
        // Sorted by path, as a person reads a manifest.
        let entries = tree.snapshot.manifest.entries
            .sorted { $0.path.description.utf8.lexicographicallyPrecedes($1.path.description.utf8) }
            .enumerated().map { line, entry in
                var numbered = entry
                numbered.line = line + 1
                return numbered
            }
        switch format {
        case .text: Terminal.write(try ManifestWriter.text(entries))
        case .json: Terminal.write(ManifestWriter.json(entries))
        }
        guard failures.isEmpty else {
            for failure in failures { writeError("Error: \(failure)") }
            writeError("Error: \(failures.count) directories could not be listed; their files are missing above")
            throw ExitCode(1)
        }
    }
}

/// Log lines as notes for a person at a terminal: "note: …" on stderr, notices and warnings
/// only; errors are the command's to report (once, at the end, with its exit status).
struct NoteLogHandler: LogHandler {
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .notice

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        guard event.level < .error else { return }
        writeError("note: \(event.message)")
    }
}
