import FaultServer
import Foundation
import Logging
import Synchronization
import Testing
@testable import RangeFSCore

/// A whole web directory listed as `rangefs manifest` lists it, against pages a FaultServer
/// serves on loopback: loops through redirects, the depth limit, directories that cannot be
/// listed, and what is said about what was left out.
@Suite("Web directory: listing a whole tree")
struct WebDirectoryWalkTests {
    let http: LoopbackHTTP

    init() throws {
        http = try LoopbackHTTP()
    }

    var server: FaultServer { http.server }

    /// A page in Python's http.server style linking `names`, served chunked as HTML.
    func listing(_ path: String, _ names: [String]) {
        let items = names.map { "<li><a href=\"\($0)\">\($0)</a></li>" }.joined(separator: "\n")
        server.publish(path, bytes: Array("<html><body><a href=\"../\">up</a><ul>\n\(items)\n</ul></body></html>".utf8))
        server.configure(path, PathOptions(chunked: true, contentType: "text/html; charset=utf-8"))
    }

    /// Lists everything below `path`; returns the tree, the failures and the notes logged.
    func walk(_ path: String, maxDepth: Int = 32) -> (tree: ListedDirectories, failures: [FetchError], notes: [String]) {
        let notes = NoteRecorder()
        var settings = ListedDirectories.Settings()
        settings.maxDepth = maxDepth
        let lister = WebDirectoryLister(ListingDownload(client: http.client, timeout: .seconds(10), logger: notes.logger))
        let tree = ListedDirectories(root: ListedDirectories.directoryURL(server.url(path)), lister: lister,
                                     settings: settings, logger: notes.logger) { _ in }
        let failures = tree.listEverything(timeout: .seconds(30))
        return (tree, failures, notes.lines)
    }

    @Test func aTreeIsListedOnceWithoutLoopsAndWithinTheDepthLimit() {
        listing("site/", ["a/", "b/", "f1.txt", "a%20b.txt"])
        listing("site/a/", ["loop/", "deep/", "f2.txt"])
        listing("site/a/deep/", ["d2/", "f4.txt"])
        listing("site/a/deep/d2/", ["f5.txt"])
        // A directory whose URL redirects back to the top: its page is the top's.
        server.configure("site/a/loop/", PathOptions(redirectsInTurn: ["/site/"]))
        // site/b/ is not there: 404.
        let (tree, failures, notes) = walk("site/", maxDepth: 2)
        let (manifest, directories, _) = tree.snapshot
        let base = server.url("site/").absoluteString
        // Directory by directory, each in its listing's order.
        #expect(manifest.entries.map(\.path.description) == ["f1.txt", "a b.txt", "a/f2.txt", "a/deep/f4.txt"])
        #expect(manifest.entries.map(\.urlString) == [base + "f1.txt", base + "a%20b.txt", base + "a/f2.txt", base + "a/deep/f4.txt"])
        #expect(manifest.entries.map(\.line) == [1, 2, 3, 4])
        #expect(failures.count == 1 && failures[0].file.hasSuffix("site/b/") && failures[0].description.contains("404"),
                "\(failures)")
        #expect(Set(directories.map(\.description)) == ["a", "a/deep", "a/loop", "b"], "d2 is too deep; loop shows nothing")
        #expect(notes.contains { $0.contains("a/loop") && $0.contains("shown as the top") }, "\(notes)")
        #expect(notes.contains { $0.contains("a/deep/d2") && $0.contains("deeper") }, "\(notes)")
        #expect(server.requests(for: "site/").count == 2, "the top, and once more through the redirect")
        #expect(server.requests(for: "site/a/deep/d2/").isEmpty)
    }

    @Test func aTopURLWithoutItsSlashIsTheDirectory() {
        listing("music/", ["x.mp3"])
        let (tree, failures, _) = walk("music")
        #expect(failures.isEmpty)
        #expect(tree.snapshot.manifest.entries.map(\.urlString) == [server.url("music/x.mp3").absoluteString])
    }

    @Test func aTopThatCannotBeListedSaysWhy() {
        let (missing, missingFailures, _) = walk("nothing/")
        #expect(!missing.isListed(nil))
        #expect(missingFailures.first?.description.contains("HTTP status 404") == true, "\(missingFailures)")
        server.publish("song.mp3/", bytes: [0xFF, 0xFB, 0x90, 0x00])
        server.configure("song.mp3/", PathOptions(contentType: "audio/mpeg"))
        let (song, songFailures, _) = walk("song.mp3/")
        #expect(!song.isListed(nil))
        guard case .unreadableListing(let why) = songFailures.first?.reason else {
            Issue.record("\(songFailures)")
            return
        }
        #expect(why == "not a directory listing (Content-Type: audio/mpeg)")
    }
}

/// The log's lines at notice and above, as `rangefs manifest` prints them as notes.
final class NoteRecorder: Sendable {
    private let recorded = Mutex<[String]>([])

    var lines: [String] { recorded.withLock { $0 } }

    var logger: Logger {
        Logger(label: "rangefs-test") { _ in Handler(recorder: self) }
    }

    struct Handler: LogHandler {
        let recorder: NoteRecorder
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .notice

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            recorder.recorded.withLock { $0.append("\(event.message)") }
        }
    }
}
