import ArgumentParser
import Foundation
import Logging
import RangeFSCore

struct ManifestCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "manifest",
        abstract: "Print a web directory's tree as a manifest, to freeze or edit it.",
        discussion: """
        Lists URL and every directory below it (nginx autoindex in HTML, JSON or XML, Apache \
        mod_autoindex, lighttpd, Python's http.server, or any page of links) and prints each file \
        as a manifest that 'rangefs mount' reads unchanged: 'path<TAB>url' lines (text), or JSON \
        with the sizes and dates the listings state exactly. A link's href names the file, not \
        the text shown; links out of a directory (parent, sort, other hosts) are ignored, and a \
        link whose name cannot be a file name is left out with a note on standard error. A \
        directory that cannot be listed is reported there too, and the exit status is then 1. \
        Empty directories do not appear: a manifest lists files.

        Examples:
          rangefs manifest http://host/music/ > music.txt
          rangefs manifest --format json --header 'Authorization: Bearer TOKEN' https://host/private/ > private.json
          rangefs mount music.txt /mnt/music
        """
    )

    enum OutputFormat: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    @Argument(help: "The URL of a directory listing.")
    var url: String

    @Option(help: "text ('path<TAB>url' lines) or json (with sizes and dates).")
    var format: OutputFormat = .text

    @Option(help: "Directory levels listed below URL.")
    var maxDepth: Int = 32

    @Option(help: "Listings fetched at once.")
    var maxListings: Int = 4

    @Option(name: .customLong("header"), help: "An extra request header, 'Name: value' (repeatable), e.g. for a protected listing; never written into the manifest.")
    var headers: [String] = []

    @Option(help: "HTTP proxy for every request, e.g. http://cache.local:3128 (default: $http_proxy, $https_proxy, $no_proxy).")
    var proxy: String?

    @Option(help: "A file of extra CA certificates (PEM) to trust for https, besides the system's.")
    var caFile: String?

    func validate() throws {
        guard maxDepth >= 0 else { throw ValidationError("--max-depth must be 0 or more") }
        guard (1...64).contains(maxListings) else { throw ValidationError("--max-listings must be 1 to 64") }
        if let caFile, !FileManager.default.isReadableFile(atPath: caFile) {
            throw ValidationError("--ca-file \(caFile) cannot be read")
        }
    }

    func run() throws {
        guard case .remote(let root) = try ManifestLocation(argument: url) else {
            throw ValidationError("URL must be an http(s) URL of a directory listing (got '\(url)')")
        }
        var configuration = CurlClient.Configuration()
        configuration.caFile = caFile.map(absolutePath)
        configuration.proxy = proxy
        let client = CurlClient(configuration: configuration, logger: Logger(label: "rangefs", factory: { _ in SwiftLogNoOpLogHandler() }))
        defer { client.shutdown() }
        var limits = WebListingCrawler.Limits()
        limits.maxDepth = maxDepth
        limits.listingsInFlight = maxListings
        let crawler = WebListingCrawler(root: root, headers: try HeaderArguments.parse(headers), client: client, limits: limits)
        let outcome: WebListingCrawler.Outcome
        do {
            outcome = try crawler.run()
        } catch {
            throw CommandFailure("\(error)")
        }
        for note in outcome.notes { writeError("note: \(note)") }
        switch format {
        case .text: Terminal.write(try ManifestWriter.text(outcome.entries))
        case .json: Terminal.write(ManifestWriter.json(outcome.entries))
        }
        guard outcome.failures.isEmpty else {
            for failure in outcome.failures { writeError("Error: \(failure)") }
            writeError("Error: \(outcome.failures.count) directories could not be listed; their files are missing above")
            throw ExitCode(1)
        }
    }
}
