import Foundation
import Testing
@testable import RangeFSCore

// Listing pages captured from the real servers (nginx 1.22, Apache 2.4, lighttpd 1.4.69,
// Python 3.11's http.server) serving the awkward tree of WebListingServerTests, kept in
// Tests/Fixtures/web-listings. To capture them again, run that suite with
// RANGEFS_CAPTURE_LISTINGS set to the fixture folder:
//   RANGEFS_CAPTURE_LISTINGS=$PWD/Tests/Fixtures/web-listings swift test --filter WebListingServerTests
// (plain.txt keeps its date there; the other dates are those of the capture).

private let fixtures = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fixtures/web-listings")

/// One captured page: where it came from and what its server said it was.
struct CapturedPage: CustomTestStringConvertible, Sendable {
    var file: String
    var url: String
    var contentType: String
    var format: WebListingFormat
    /// Which sizes the page states exactly.
    var sizes: Sizes
    var testDescription: String { file }

    enum Sizes: Sendable { case exact, belowRounding(UInt64), none }

    func parse() throws -> WebListing {
        let data = try Data(contentsOf: fixtures.appendingPathComponent(file))
        return try WebListing.parse(data, url: URL(string: url)!, contentType: contentType)
    }
}

private let pages: [CapturedPage] = [
    CapturedPage(file: "nginx-html.html", url: "http://127.0.0.1:18431/html/", contentType: "text/html",
                 format: .nginxHTML, sizes: .exact),
    // `autoindex_exact_size off`: bytes below 10,000, then 20K, 1M.
    CapturedPage(file: "nginx-html-rounded-sizes.html", url: "http://127.0.0.1:18431/human/", contentType: "text/html",
                 format: .nginxHTML, sizes: .belowRounding(10_000)),
    CapturedPage(file: "nginx.json", url: "http://127.0.0.1:18431/json/", contentType: "application/json",
                 format: .nginxJSON, sizes: .exact),
    CapturedPage(file: "nginx.xml", url: "http://127.0.0.1:18431/xml/", contentType: "text/xml",
                 format: .nginxXML, sizes: .exact),
    CapturedPage(file: "apache-plain.html", url: "http://127.0.0.1:18432/plain/", contentType: "text/html;charset=ISO-8859-1",
                 format: .apachePlain, sizes: .none),
    // apr_strfsize: bytes below 973, then 1.0K …
    CapturedPage(file: "apache-fancy.html", url: "http://127.0.0.1:18432/fancy/", contentType: "text/html;charset=ISO-8859-1",
                 format: .apacheFancy, sizes: .belowRounding(973)),
    CapturedPage(file: "apache-table.html", url: "http://127.0.0.1:18432/table/", contentType: "text/html;charset=ISO-8859-1",
                 format: .apacheTable, sizes: .belowRounding(973)),
    // Every size rounded, even 5 bytes ("0.1K").
    CapturedPage(file: "lighttpd.html", url: "http://127.0.0.1:18433/", contentType: "text/html;charset=utf-8",
                 format: .lighttpd, sizes: .none),
    CapturedPage(file: "python-http-server.html", url: "http://127.0.0.1:18434/", contentType: "text/html; charset=utf-8",
                 format: .pythonHTTPServer, sizes: .none),
]

/// The top of the awkward tree (AwkwardTree in the integration tests): names, directory or not, and sizes.
let awkwardTop: [(name: String, isDirectory: Bool, size: UInt64)] = [
    ("Case", true, 0), ("empty", true, 0), ("sub dir", true, 0), ("big", true, 0),
    ("case", false, 1), ("plain.txt", false, 5), ("with space.txt", false, 1), ("hash#name.txt", false, 2),
    ("question?mark.txt", false, 3), ("percent%41.txt", false, 4), ("amp&name.txt", false, 5),
    ("[bracket].txt", false, 6), ("_underscore.txt", false, 7), ("ünïcödé-日本.txt", false, 3),
    ("empty-file.bin", false, 0), ("Episode 1: a colon.txt", false, 5), ("twenty-k.bin", false, 20_000), ("one-and-half-m.bin", false, 1_500_000),
    ("it's \"quoted\" <angle>.txt", false, 1), (String(repeating: "L", count: 246) + ".txt", false, 4),
]

@Suite("Web listings: pages captured from real servers")
struct WebListingPageTests {
    @Test(arguments: pages)
    func everyEntryOfTheTreeIsReadFromTheLinksAndNothingElse(page: CapturedPage) throws {
        let listing = try page.parse()
        #expect(listing.format == page.format)
        #expect(listing.skipped.isEmpty, "\(listing.skipped)")
        let read = Dictionary(uniqueKeysWithValues: listing.entries.map { ($0.name, $0) })
        #expect(listing.entries.count == awkwardTop.count, "\(listing.entries.map(\.name))")
        for expected in awkwardTop {
            let entry = try #require(read[expected.name], "\(expected.name) missing from \(page.file)")
            #expect(entry.isDirectory == expected.isDirectory, "\(expected.name)")
            let encoded = ListingBase.encodeSegment(expected.name) + (expected.isDirectory ? "/" : "")
            #expect(entry.url.absoluteString == page.url + encoded)
            let stated: UInt64? = switch page.sizes {
            case _ where expected.isDirectory: nil
            case .exact: expected.size
            case .belowRounding(let limit): expected.size < limit ? expected.size : nil
            case .none: nil
            }
            #expect(entry.size == stated, "\(expected.name) in \(page.file)")
        }
    }

    @Test func datesAreTakenOnlyWhereTheirZoneIsKnown() throws {
        func plainDate(_ file: String) throws -> Date? {
            let page = try #require(pages.first { $0.file == file })
            return try page.parse().entries.first { $0.name == "plain.txt" }?.modified
        }
        // plain.txt was touched to 2026-01-02 03:04:05 UTC.
        let exact = Date(timeIntervalSince1970: 1_767_323_045)
        #expect(try plainDate("nginx.json") == exact)
        #expect(try plainDate("nginx.xml") == exact)
        #expect(try plainDate("nginx-html.html") == exact.addingTimeInterval(-5), "GMT to the minute")
        for file in ["apache-fancy.html", "apache-table.html", "lighttpd.html", "python-http-server.html"] {
            #expect(try plainDate(file) == nil, "\(file): local time of an unknown zone, or no date")
        }
    }

    @Test func aSubdirectoryPageListsItsEntriesWithoutTheParentLink() throws {
        let data = try Data(contentsOf: fixtures.appendingPathComponent("lighttpd-subdirectory.html"))
        let listing = try WebListing.parse(data, url: URL(string: "http://127.0.0.1:18433/Case/")!, contentType: "text/html")
        #expect(listing.entries == [
            WebListingEntry(name: "inside.txt", url: URL(string: "http://127.0.0.1:18433/Case/inside.txt")!, isDirectory: false),
        ])
    }
}
