import Foundation
import Testing
@testable import RangeFSCore

/// Every listing parser reads its page in time linear in its size, whatever the page's shape:
/// each shape that cost a search to the page's end once per link is timed against a page of the
/// same size laid out as the server writes it, in the same run, by the CPU time the parsing took
/// (the least of three runs each). A quadratic reading of these pages takes tens of times longer.
@Suite("Listing shapes")
struct ListingShapeTimeTests {
    static let url = URL(string: "http://127.0.0.1:8080/d/")!
    static let links = 4_000

    static func name(_ index: Int) -> String { "track-\(String(format: "%06d", index)).mp3" }

    /// nginx's autoindex page: a link and its row per line, or (`separator: " "`) all on one line.
    static func nginxPage(links: Int = links, separator: String = "\r\n", closed: Bool = true) -> Data {
        var page = "<html><head><title>Index of /d/</title></head><body><h1>Index of /d/</h1><hr><pre>"
        for index in 0..<links {
            page += "<a href=\"\(name(index))\">\(name(index))\(closed ? "</a>" : "") 24-Nov-2026 09:27 \(1000 + index)\(separator)"
        }
        return Data((page + "</pre><hr></body></html>").utf8)
    }

    /// The CPU time this thread has used: what other work on the machine does not lengthen.
    static func threadCPUTime() -> Duration {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return .seconds(now.tv_sec) + .nanoseconds(now.tv_nsec)
    }

    /// The least CPU time of three runs of `body`.
    static func fastest(_ body: () throws -> Void) rethrows -> Duration {
        var best = Duration.seconds(3600)
        for _ in 0..<3 {
            let start = threadCPUTime()
            try body()
            best = min(best, threadCPUTime() - start)
        }
        return best
    }

    /// Parses `shape` and the nginx page on lines, padded to the same size, and checks the
    /// shape took at most twice as long.
    static func expectLinear(_ shape: Data, _ what: String, contentType: String = "text/html",
                             check: (WebListing) -> Void = { _ in }) throws {
        var baseline = nginxPage()
        if shape.count > baseline.count { baseline += Data(repeating: UInt8(ascii: " "), count: shape.count - baseline.count) }
        let expected = try fastest { _ = try WebListing.parse(baseline, url: url, contentType: "text/html") }
        var listing: WebListing?
        let took = try fastest { listing = try WebListing.parse(shape, url: url, contentType: contentType) }
        #expect(took <= expected * 2, "\(what): \(took), the same size on lines: \(expected)")
        check(listing!)
    }

    @Test func aPageOnOneLine() throws {
        try Self.expectLinear(Self.nginxPage(separator: " "), "one line") { listing in
            #expect(listing.entries.count == Self.links)
            #expect(listing.entries.last?.size == UInt64(1000 + Self.links - 1), "each row is read up to the next link")
        }
    }

    @Test func linksNeverClosed() throws {
        try Self.expectLinear(Self.nginxPage(separator: " ", closed: false), "no </a>") { listing in
            #expect(listing.entries.count == Self.links)
            #expect(listing.entries.allSatisfy { $0.size == nil }, "a link without </a> has no row")
        }
    }

    @Test func unclosedLinksBeforeOneLongRow() throws {
        var page = (0..<Self.links).map { "<a href=\"\(Self.name($0))\">" }.joined()
        page += "</a>" + String(repeating: "24-Nov-2026 ", count: 20_000)
        try Self.expectLinear(Data(page.utf8), "one row after every unclosed link") { listing in
            #expect(listing.entries.count == Self.links)
        }
    }

    @Test func deeplyNestedTags() throws {
        let depth = 40_000
        let links = String(decoding: Self.nginxPage(separator: " "), as: UTF8.self)
        let nested = String(repeating: "<div><span>", count: depth) + links + String(repeating: "</span></div>", count: depth)
        // The same tags side by side: nesting them costs nothing more.
        let sideBySide = String(repeating: "<div><span></span></div>", count: depth) + links
        let expected = try Self.fastest { _ = try WebListing.parse(Data(sideBySide.utf8), url: Self.url, contentType: "text/html") }
        var listing: WebListing?
        let took = try Self.fastest { listing = try WebListing.parse(Data(nested.utf8), url: Self.url, contentType: "text/html") }
        #expect(took <= expected * 2, "nested: \(took), side by side: \(expected)")
        #expect(listing?.entries.count == Self.links)
    }

    @Test func unclosedCommentsScriptsAndAttributes() throws {
        for (opener, what) in [("<!--", "comments"), ("<script>", "scripts"), ("<a title=\"x", "attribute values")] {
            let page = String(decoding: Self.nginxPage(separator: " "), as: UTF8.self) + String(repeating: opener + " ", count: 20_000)
            try Self.expectLinear(Data(page.utf8), "unclosed \(what)") { listing in
                #expect(listing.entries.count == Self.links)
            }
        }
    }

    @Test func nginxJSONOnOneLine() throws {
        let items = (0..<Self.links).map { "{ \"name\":\"\(Self.name($0))\", \"type\":\"file\", \"mtime\":\"Tue, 24 Nov 2026 09:27:24 GMT\", \"size\":\($0) }" }
        try Self.expectLinear(Data(("[" + items.joined(separator: ",") + "]").utf8), "JSON", contentType: "application/json") { listing in
            #expect(listing.entries.count == Self.links)
        }
    }

    @Test func nginxXMLOnOneLineAndDeclarationsNeverClosed() throws {
        let files = (0..<Self.links).map { "<file mtime=\"2026-11-24T09:27:24Z\" size=\"\($0)\">\(Self.name($0))</file>" }
        let page = "<?xml version=\"1.0\"?><list>" + files.joined() + "</list>"
        try Self.expectLinear(Data(page.utf8), "XML", contentType: "text/xml") { listing in
            #expect(listing.entries.count == Self.links)
        }
        // Each declaration without its `>` was searched for one to the end of the page.
        let declarations = String(repeating: "<!DOCTYPE list ", count: 20_000)
        // As many markup declarations, closed: `<!--   comment ` is as long as `<!DOCTYPE list `.
        let baseline = String(repeating: "<!--   comment ", count: 20_000)
        let expected = Self.fastest { _ = try? XMLInputGuard.check(baseline) }
        let took = Self.fastest { _ = try? XMLInputGuard.check(declarations) }
        #expect(took <= expected * 2, "declarations never closed: \(took), comments: \(expected)")
    }

    @Test func bucketPagesOnOneLineOrOnLines() throws {
        func page(separator: String) -> Data {
            let contents = (0..<Self.links).map {
                "<Contents><Key>d/\(Self.name($0))</Key><Size>\($0)</Size><ETag>\"e\($0)\"</ETag></Contents>"
            }
            return Data(("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult><Name>b</Name><Prefix>d/</Prefix>"
                + contents.joined(separator: separator) + "<IsTruncated>false</IsTruncated></ListBucketResult>").utf8)
        }
        let lines = page(separator: "\n"), oneLine = page(separator: "")
        var parsed: BucketListingPage?
        let expected = try Self.fastest { _ = try BucketListingPage.parse(lines) }
        let took = try Self.fastest { parsed = try BucketListingPage.parse(oneLine) }
        #expect(took <= expected * 2, "one line: \(took), on lines: \(expected)")
        #expect(parsed?.objects.count == Self.links)
    }

    @Test func aPageWithMoreEntriesThanTheMountHoldsIsRefusedWithTheReason() throws {
        let page = Self.nginxPage(links: 101)
        #expect(try WebListing.parse(page, url: Self.url, contentType: "text/html", maxEntries: 101).entries.count == 101)
        #expect {
            try WebListing.parse(page, url: Self.url, contentType: "text/html", maxEntries: 100)
        } throws: { error in
            (error as? WebListingError)?.reason.contains("more than 100 entries") == true
                && (error as? WebListingError)?.reason.contains("--max-listed-entries") == true
        }
    }
}
