import FaultServer
import Foundation
import Testing
@testable import RangeFSCore

/// The crawler against listing pages a FaultServer serves on loopback: loops through
/// redirects, the depth limit, a directory that cannot be listed, and listings in flight.
@Suite("Web listings: the crawler")
struct WebListingCrawlerTests {
    let http: LoopbackHTTP

    init() throws {
        http = try LoopbackHTTP()
    }

    var server: FaultServer { http.server }
    var client: CurlClient { http.client }

    /// A page in Python's http.server style linking `names`, served chunked as HTML.
    func listing(_ path: String, _ names: [String], options: PathOptions = PathOptions()) {
        let items = names.map { "<li><a href=\"\($0)\">\($0)</a></li>" }.joined(separator: "\n")
        server.publish(path, bytes: Array("<html><body><a href=\"../\">up</a><ul>\n\(items)\n</ul></body></html>".utf8))
        var options = options
        options.chunked = true
        options.contentType = "text/html; charset=utf-8"
        server.configure(path, options)
    }

    func crawl(_ path: String, maxDepth: Int = 32, inFlight: Int = 4) throws(WebListingError) -> WebListingCrawler.Outcome {
        var limits = WebListingCrawler.Limits()
        limits.maxDepth = maxDepth
        limits.listingsInFlight = inFlight
        limits.timeout = .seconds(10)
        return try WebListingCrawler(root: server.url(path), client: client, limits: limits).run()
    }

    @Test func aTreeIsWalkedOnceWithoutLoopsAndWithinTheDepthLimit() throws {
        listing("site/", ["a/", "b/", "f1.txt", "a%20b.txt"])
        listing("site/a/", ["loop/", "deep/", "f2.txt"])
        listing("site/a/deep/", ["d2/", "f4.txt"])
        listing("site/a/deep/d2/", ["f5.txt"])
        // A directory whose URL redirects back to the root: its listing is the root's.
        server.configure("site/a/loop/", PathOptions(redirectsInTurn: ["/site/"]))
        // site/b/ is not there: 404.
        let outcome = try crawl("site/", maxDepth: 2)
        let base = server.url("site/").absoluteString
        #expect(outcome.entries.map(\.path.description) == ["a b.txt", "a/deep/f4.txt", "a/f2.txt", "f1.txt"])
        #expect(outcome.entries.map(\.urlString) == [base + "a%20b.txt", base + "a/deep/f4.txt", base + "a/f2.txt", base + "f1.txt"])
        #expect(outcome.entries.map(\.line) == [1, 2, 3, 4])
        #expect(outcome.failures.count == 1 && outcome.failures[0].contains("site/b/") && outcome.failures[0].contains("404"),
                "\(outcome.failures)")
        #expect(outcome.notes.contains { $0.contains("a/loop/") && $0.contains("listed already") }, "\(outcome.notes)")
        #expect(outcome.notes.contains { $0.contains("a/deep/d2/") && $0.contains("deeper than 2 levels") }, "\(outcome.notes)")
        #expect(server.requests(for: "site/").count == 2, "the root, and once more through the redirect")
        #expect(server.requests(for: "site/a/deep/d2/").isEmpty)
    }

    @Test func aRootURLWithoutItsSlashIsTheDirectory() throws {
        listing("music/", ["x.mp3"])
        let outcome = try crawl("music")
        #expect(outcome.entries.map(\.urlString) == [server.url("music/x.mp3").absoluteString])
    }

    @Test func aRootThatCannotBeListedIsAnError() throws {
        let missing = #expect(throws: WebListingError.self) { try self.crawl("nothing/") }
        #expect(missing?.reason.contains("HTTP status 404") == true, "\(String(describing: missing))")
        server.publish("song.mp3/", bytes: [0xFF, 0xFB, 0x90, 0x00])
        server.configure("song.mp3/", PathOptions(contentType: "audio/mpeg"))
        let notListing = #expect(throws: WebListingError.self) { try self.crawl("song.mp3/") }
        #expect(notListing?.reason == "not a directory listing (Content-Type: audio/mpeg)")
    }

    @Test func listingsInFlightAreBounded() throws {
        let names = (0..<8).map { "d\($0)/" }
        listing("wide/", names)
        let slow = PathOptions(latency: .milliseconds(300))
        for name in names { listing("wide/\(name)", ["f.txt"], options: slow) }
        let started = ContinuousClock.now
        let outcome = try crawl("wide/", inFlight: 2)
        let elapsed = ContinuousClock.now - started
        #expect(outcome.entries.count == 8)
        // Eight listings of 300 ms each, two at a time: four rounds at least.
        #expect(elapsed >= .milliseconds(1200), "\(elapsed)")
    }
}
