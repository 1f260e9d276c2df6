import Foundation
import Logging
import RangeFSCore
import Synchronization
import Testing

/// Real listing servers on loopback serve the awkward tree; every directory's listing is
/// fetched with RangeFS's own client (`DocumentDownload`) and parsed (`WebListing.parse`), and
/// the entries must be the tree on disk: names, directory or not, and sizes where the format
/// states them exactly. Each file's URL, as built from its name, must bring its bytes.
///
/// With RANGEFS_CAPTURE_LISTINGS=DIR, the top-level pages are also written to DIR under the
/// names of the unit tests' fixtures (Tests/Fixtures/web-listings).
@Suite("Web listings from real servers", .serialized)
struct WebListingServerTests {
    /// One way a server lists the tree.
    struct Variant: Sendable {
        var kind: ListingServer.Kind
        var path: String
        var format: WebListingFormat
        /// Sizes below this are stated exactly; nil: none are.
        var exactBelow: UInt64?
        var fixture: String
    }

    static let variants: [Variant] = [
        Variant(kind: .nginx, path: "/html/", format: .nginxHTML, exactBelow: .max, fixture: "nginx-html.html"),
        Variant(kind: .nginx, path: "/human/", format: .nginxHTML, exactBelow: 10_000, fixture: "nginx-html-rounded-sizes.html"),
        Variant(kind: .nginx, path: "/json/", format: .nginxJSON, exactBelow: .max, fixture: "nginx.json"),
        Variant(kind: .nginx, path: "/xml/", format: .nginxXML, exactBelow: .max, fixture: "nginx.xml"),
        Variant(kind: .apache, path: "/plain/", format: .apachePlain, exactBelow: nil, fixture: "apache-plain.html"),
        Variant(kind: .apache, path: "/fancy/", format: .apacheFancy, exactBelow: 973, fixture: "apache-fancy.html"),
        Variant(kind: .apache, path: "/table/", format: .apacheTable, exactBelow: 973, fixture: "apache-table.html"),
        Variant(kind: .lighttpd, path: "/", format: .lighttpd, exactBelow: nil, fixture: "lighttpd.html"),
        Variant(kind: .python, path: "/", format: .pythonHTTPServer, exactBelow: nil, fixture: "python-http-server.html"),
    ]

    /// Built once for the run: 10,000 files take a while to write.
    static let tree: Result<URL, any Error> = Result {
        let root = try Scratch.makeDir("awkward-tree")
        try AwkwardTree.make(in: root)
        return root
    }

    @Test("each server's listings of every directory are the tree on disk", arguments: ListingServer.Kind.allCases)
    func listingsMatchTheTree(kind: ListingServer.Kind) throws {
        let root = try Self.tree.get()
        let server = try ListingServer(kind, serving: root)
        defer { server.stop() }
        let client = Self.client()
        defer { client.shutdown() }
        let directories = ["", "Case/", "empty/", "sub dir/", AwkwardTree.bigDirectory + "/"]
        for variant in Self.variants where variant.kind == kind {
            for directory in directories {
                let encoded = directory.split(separator: "/").map { Self.encode(String($0)) + "/" }.joined()
                let url = URL(string: server.baseURL + variant.path + encoded)!
                let document = try DocumentDownload(request: DocumentRequest(url: url, maxBytes: 32 << 20), client: client).fetch()
                if directory.isEmpty { try Self.capture(document.bytes, as: variant.fixture) }
                if kind == .lighttpd, directory == "Case/" { try Self.capture(document.bytes, as: "lighttpd-subdirectory.html") }
                let listing = try WebListing.parse(document.bytes, url: document.reply.finalURL,
                                                   contentType: document.reply.contentType)
                let place = "\(variant.path)\(directory)"
                #expect(listing.format == variant.format, "\(place)")
                #expect(listing.skipped.isEmpty, "\(place): \(listing.skipped)")
                let onDisk = try AwkwardTree.entries(of: root.appendingPathComponent(directory))
                #expect(Set(listing.entries.map(\.name)) == Set(onDisk.keys), "\(place)")
                #expect(listing.entries.count == onDisk.count, "\(place): each name once")
                for entry in listing.entries {
                    guard let disk = onDisk[entry.name] else { continue }
                    #expect(entry.isDirectory == disk.isDirectory, "\(place)\(entry.name)")
                    let stated = disk.isDirectory ? nil : variant.exactBelow.flatMap { disk.size < $0 ? disk.size : nil }
                    #expect(entry.size == stated, "\(place)\(entry.name): \(disk.size) bytes on disk")
                }
            }
        }
        // The URLs built from the names reach the files, on this server (one variant is enough:
        // they all build them the same way).
        let variant = try #require(Self.variants.first { $0.kind == kind })
        let top = try DocumentDownload(request: DocumentRequest(url: URL(string: server.baseURL + variant.path)!,
                                                                maxBytes: 32 << 20), client: client).fetch()
        let listing = try WebListing.parse(top.bytes, url: top.reply.finalURL, contentType: top.reply.contentType)
        for entry in listing.entries where !entry.isDirectory {
            let file = try DocumentDownload(request: DocumentRequest(url: entry.url, maxBytes: 4 << 20), client: client).fetch()
            let expected = try Data(contentsOf: root.appendingPathComponent(entry.name))
            #expect(file.bytes == expected, "\(entry.url)")
        }
    }

    @Test("a listing URL without its slash is redirected, and the listing read at the URL it led to")
    func aDirectoryURLWithoutItsSlash() throws {
        let root = try Self.tree.get()
        let server = try ListingServer(.nginx, serving: root)
        defer { server.stop() }
        let client = Self.client()
        defer { client.shutdown() }
        let url = URL(string: server.baseURL + "/html/sub%20dir")!
        let document = try DocumentDownload(request: DocumentRequest(url: url, maxBytes: 1 << 20), client: client).fetch()
        #expect(document.reply.finalURL.absoluteString == server.baseURL + "/html/sub%20dir/")
        let listing = try WebListing.parse(document.bytes, url: document.reply.finalURL, contentType: document.reply.contentType)
        #expect(listing.entries.map(\.url.absoluteString) == [server.baseURL + "/html/sub%20dir/inner.txt"])
    }

    /// Of the servers here only Apache with TrackModified sends a listing's validators, and even
    /// it answers a conditional request with the whole listing: a stored listing is checked by
    /// reading it again. The client must take that `200` as the new listing.
    @Test("a conditional request a listing server ignores brings the whole, current listing")
    func revalidationIgnoredByTheServer() throws {
        let root = try Scratch.makeDir("revalidated")
        try Data("a".utf8).write(to: root.appendingPathComponent("a.txt"))
        let server = try ListingServer(.apache, serving: root)
        defer { server.stop() }
        let client = Self.client()
        defer { client.shutdown() }
        let request = DocumentRequest(url: URL(string: server.baseURL + "/tracked/")!, maxBytes: 1 << 20)
        let first = try DocumentDownload(request: request, client: client).fetch()
        #expect(first.reply.validator.etag != nil && first.reply.validator.lastModified != nil, "TrackModified sends both")
        var again = request
        again.heldVersion = first.reply.validator
        let unchanged = try DocumentDownload(request: again, client: client).fetch()
        #expect(!unchanged.reply.notModified)
        #expect(unchanged.bytes == first.bytes)

        try Data("b".utf8).write(to: root.appendingPathComponent("b.txt"))
        let changed = try DocumentDownload(request: again, client: client).fetch()
        let names = try WebListing.parse(changed.bytes, url: changed.reply.finalURL, contentType: changed.reply.contentType)
            .entries.map(\.name)
        #expect(names == ["a.txt", "b.txt"])
    }

    @Test("rangefs manifest writes the tree nginx lists as a manifest that loads unchanged", arguments: ["text", "json"])
    func manifestCommand(format: String) throws {
        let root = try Self.tree.get()
        let server = try ListingServer(.nginx, serving: root)
        defer { server.stop() }
        let listing = server.baseURL + (format == "json" ? "/json/" : "/html/")
        let result = Command.run([try RangeFSBinary.path(), "manifest", "--format", format, listing], timeout: 120)
        try #require(result.succeeded, "\(result)")
        #expect(result.stderr.isEmpty, "nothing left out: \(result.stderr)")
        let file = try Scratch.makeDir("manifest").appendingPathComponent(format == "json" ? "tree.json" : "tree.txt")
        try result.stdoutData.write(to: file)
        let manifest = try Manifest.load(path: file.path)
        let onDisk = try Self.files(under: root)
        #expect(manifest.entries.count == onDisk.count)
        #expect(Set(manifest.entries.map(\.path.description)) == Set(onDisk.keys))
        for entry in manifest.entries {
            #expect(entry.size == (format == "json" ? onDisk[entry.path.description] : nil), "\(entry.path)")
            #expect(entry.urlString.hasPrefix(listing) && entry.url.path == URL(string: listing)!.path + "/" + entry.path.description,
                    "\(entry.urlString) names \(entry.path)")
        }
        let plain = manifest.entries.first { $0.path.description == "plain.txt" }
        #expect(plain?.modified == (format == "json" ? Date(timeIntervalSince1970: 1_767_323_045) : nil))
    }

    @Test("a mount's directory lister grows the tree nginx lists, one directory when it is asked for")
    func directoryLister() throws {
        let root = try Self.tree.get()
        let server = try ListingServer(.nginx, serving: root)
        defer { server.stop() }
        let client = Self.client()
        defer { client.shutdown() }
        var logger = Logger(label: "rangefs-test")
        logger.logLevel = .critical
        let directories = ListedDirectories(root: URL(string: server.baseURL + "/html/")!,
                                            lister: WebDirectoryLister(ListingDownload(client: client, logger: logger)), logger: logger) { _ in }
        func listed(_ path: EntryPath?) throws {
            let outcome = Mutex<Result<Void, FetchError>?>(nil)
            let done = DispatchSemaphore(value: 0)
            directories.ensureListed(path) { result in
                outcome.withLock { $0 = result }
                done.signal()
            }
            try #require(done.wait(timeout: .now() + 60) == .success, "listing \(String(describing: path)) timed out")
            try outcome.withLock { $0 }!.get()
        }
        let onDisk = try Self.files(under: root)
        func known() -> [String: UInt64?] {
            Dictionary(uniqueKeysWithValues: directories.snapshot.manifest.entries.map { ($0.path.description, $0.size) })
        }
        try listed(nil)
        let top = onDisk.filter { !$0.key.contains("/") }
        #expect(known() == top.mapValues { Optional($0) }, "the top files, with nginx's exact sizes")
        #expect(Set(directories.snapshot.directories.map(\.description)) == ["Case", "empty", "sub dir", AwkwardTree.bigDirectory])
        try listed(try EntryPath(validating: AwkwardTree.bigDirectory))
        try listed(try EntryPath(validating: "sub dir"))
        let expected = onDisk.filter { !$0.key.hasPrefix("Case/") }
        #expect(known() == expected.mapValues { Optional($0) }, "Case/ is not listed until asked for")
        #expect(known().count == top.count + AwkwardTree.bigCount + 1)
    }

    /// Every file below `root`, by its path relative to it, with its size.
    static func files(under root: URL) throws -> [String: UInt64] {
        var files: [String: UInt64] = [:]
        let enumerator = try #require(FileManager.default.enumerator(atPath: root.path))
        while let path = enumerator.nextObject() as? String {
            let attributes = try FileManager.default.attributesOfItem(atPath: root.appendingPathComponent(path).path)
            if attributes[.type] as? FileAttributeType == .typeRegular {
                files[path] = (attributes[.size] as? NSNumber)?.uint64Value
            }
        }
        return files
    }

    static func client() -> CurlClient {
        var logger = Logger(label: "rangefs-test")
        logger.logLevel = .critical
        return CurlClient(logger: logger)
    }

    static func encode(_ segment: String) -> String {
        segment.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? segment
    }

    static func capture(_ page: Data, as name: String) throws {
        guard let folder = ProcessInfo.processInfo.environment["RANGEFS_CAPTURE_LISTINGS"] else { return }
        try page.write(to: URL(fileURLWithPath: folder).appendingPathComponent(name))
    }
}
