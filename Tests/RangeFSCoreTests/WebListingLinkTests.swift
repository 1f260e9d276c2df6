import Foundation
import Testing
@testable import RangeFSCore

/// The rules for which links of a page are entries, on pages written to break them.
@Suite("Web listings: links, names and errors")
struct WebListingLinkTests {
    static let page = URL(string: "http://127.0.0.1:8080/music/")!

    func parse(_ body: String, url: URL = page, contentType: String? = "text/html") throws -> WebListing {
        try WebListing.parse(Data(body.utf8), url: url, contentType: contentType)
    }

    func names(_ body: String, url: URL = page) throws -> [String] {
        try parse(body, url: url).entries.map { $0.name + ($0.isDirectory ? "/" : "") }
    }

    @Test func linksThatLeaveTheDirectoryAreIgnored() throws {
        let page = """
        <html><body>
        <a href="../">up</a> <a href="/">root</a> <a href="/other/x.mp3">elsewhere</a>
        <a href="http://other.example/music/x.mp3">other host</a>
        <a href="http://127.0.0.1:9999/music/x.mp3">other port</a>
        <a href="https://127.0.0.1:8080/music/x.mp3">other scheme</a>
        <a href="?C=N;O=D">sort</a> <a href="?C=M&amp;O=A">sort</a> <a href="x.mp3?download=1">query</a>
        <a href="mailto:someone@example.org">mail</a> <a href="#top">top</a> <a href="x.mp3#t=10">fragment</a>
        <a href="javascript:void(0)">script</a> <a href="ftp://127.0.0.1:8080/music/x.mp3">ftp</a>
        <a href="deeper/y.mp3">two levels down</a> <a href="./">itself</a> <a href="">empty</a> <a>no href</a>
        <a href="a/../">back up</a>
        </body></html>
        """
        #expect(try names(page) == [])
    }

    @Test func linksIntoTheDirectoryCountHoweverTheyAreWritten() throws {
        let page = """
        <A HREF=plain.mp3>unquoted</A>
        <a class='x' href='single.mp3'>single quotes</a>
        <a href="./dot.mp3">dot</a>
        <a href="/music/absolute.mp3">absolute path</a>
        <a href="http://127.0.0.1:8080/music/full/">full URL</a>
        <a href="//127.0.0.1:8080/music/network-path.mp3">network path</a>
        <a href="HTTP://127.0.0.1:80/music/x">port 80 is not 8080</a>
        <a href="/%6Dusic/encoded-base.mp3">the base spelt with an escape</a>
        <a href="sub/../back.mp3">dot segments</a>
        <a href="a%2Fb.mp3">an escaped slash</a>
        <a href="./a:b.mp3">a colon, as Apache writes it</a> <a href="c%3Ad.mp3">a colon, as nginx writes it</a>
        """
        #expect(try names(page) == [
            "plain.mp3", "single.mp3", "dot.mp3", "absolute.mp3", "full/", "network-path.mp3",
            "encoded-base.mp3", "back.mp3", "a:b.mp3", "c:d.mp3",
        ])
        #expect(try parse(page).skipped.map(\.href) == ["a%2Fb.mp3"], "a name holding '/' is not an entry")
    }

    @Test func theHrefNamesTheEntryNotTheTextShown() throws {
        let page = """
        <a href="Long%20name%20that%20the%20server%20cut.mp3">Long name tha..&gt;</a>
        <a href="amp&amp;name.mp3">shown</a> <a href="it&#39;s.mp3">x</a> <a href="&#x5B;x&#x5D;.mp3">x</a>
        <a href="percent%2541.mp3">percent%41.mp3</a> <a href="_under.mp3">x</a> <a href="%5Bb%5D/">x</a>
        """
        #expect(try names(page) == [
            "Long name that the server cut.mp3", "amp&name.mp3", "it's.mp3", "[x].mp3", "percent%41.mp3",
            "_under.mp3", "[b]/",
        ])
        let urls = try parse(page).entries.map(\.url.absoluteString)
        #expect(urls[1] == "http://127.0.0.1:8080/music/amp%26name.mp3")
        #expect(urls[4] == "http://127.0.0.1:8080/music/percent%2541.mp3")
        #expect(urls[6] == "http://127.0.0.1:8080/music/%5Bb%5D/")
    }

    @Test func badNamesAreSkippedOneByOneWithAReason() throws {
        let long = String(repeating: "x", count: 256)
        let page = """
        <a href="good.mp3">good</a> <a href="nul%00.mp3">nul</a> <a href="latin%E9.mp3">latin-1</a>
        <a href="\(long)">long</a> <a href="tab%09.mp3">tab</a> <a href="also-good/">dir</a>
        """
        let listing = try parse(page)
        #expect(listing.entries.map(\.name) == ["good.mp3", "also-good"])
        try #require(listing.skipped.map(\.href) == ["nul%00.mp3", "latin%E9.mp3", long, "tab%09.mp3"], "\(listing.skipped)")
        #expect(listing.skipped[0].reason.contains("control character"), "\(listing.skipped[0])")
        #expect(listing.skipped[1].reason.contains("not UTF-8"), "\(listing.skipped[1])")
        #expect(listing.skipped[2].reason.contains("256 bytes"), "\(listing.skipped[2])")
    }

    @Test func commentsScriptsAndStylesHoldNoEntries() throws {
        let page = """
        <!-- <a href="commented.mp3">x</a> -->
        <script>document.write('<a href="scripted.mp3">x</a>')</script>
        <style>a[href="styled.mp3"] { color: red }</style>
        <SCRIPT type="text/javascript">var a = "<a href='upper.mp3'>";</SCRIPT>
        <a href="real.mp3">real</a>
        """
        #expect(try names(page) == ["real.mp3"])
    }

    @Test func aNameLinkedTwiceIsOneEntryWithTheFactsOfEither() throws {
        let page = """
        <html><head><title>Index of /music/</title></head><body><h1>Index of /music/</h1><hr><pre><a href="../">../</a>
        <a href="a.mp3"><img src="icon.gif"></a>
        <a href="a.mp3">a.mp3</a>                                              24-Nov-2026 09:27                1234
        </pre><hr></body></html>
        """
        let listing = try parse(page)
        #expect(listing.format == .nginxHTML)
        #expect(listing.entries.count == 1)
        #expect(listing.entries.first?.size == 1234)
    }

    @Test func aPageAtADirectoryURLWithoutItsSlashResolvesAsABrowserWould() throws {
        let url = URL(string: "http://127.0.0.1:8080/music")!
        #expect(try names(#"<a href="music/a.mp3">a</a> <a href="b.mp3">b</a>"#, url: url) == ["b.mp3"])
    }

    @Test func whatIsNotAListingGetsAClearError() throws {
        let audio = #expect(throws: WebListingError.self) { try parse("ID3", contentType: "audio/mpeg") }
        #expect(audio?.description == "http://127.0.0.1:8080/music/: not a directory listing (Content-Type: audio/mpeg)")
        #expect(throws: WebListingError.self) { try parse("[{\"name\": 1}]", contentType: "application/json") }
        #expect(throws: WebListingError.self) { try parse("<?xml version=\"1.0\"?><rss></rss>", contentType: "text/xml") }
        #expect(throws: WebListingError.self) { try parse("<?xml version=\"1.0\"?><list><file>", contentType: "text/xml") }
        #expect(throws: WebListingError.self) { try parse("a\u{0}b", contentType: nil) }
        #expect(throws: WebListingError.self) { try parse("<a href=x>", url: URL(string: "ftp://h/d/")!) }
    }

    @Test func structuredListingsSkipWhatIsNeitherFileNorDirectory() throws {
        let json = #"[{ "name":"fifo", "type":"other", "mtime":"Tue, 24 Nov 2026 09:27:24 GMT" }, { "name":"a b", "type":"file", "size":3 }]"#
        let listing = try parse(json, contentType: "application/json")
        #expect(listing.entries == [
            WebListingEntry(name: "a b", url: URL(string: "http://127.0.0.1:8080/music/a%20b")!, isDirectory: false, size: 3),
        ])
        #expect(listing.skipped.count == 1)
        let xml = #"<?xml version="1.0"?><list><directory>..</directory><file size="x">f</file></list>"#
        let fromXML = try parse(xml, contentType: "text/xml")
        #expect(fromXML.entries.map(\.name) == ["f"])
        #expect(fromXML.entries.first?.size == nil, "a size that is not a number is no size")
        #expect(fromXML.skipped.first?.reason.contains("'..'") == true, "\(fromXML.skipped)")
    }

    @Test func anEmptyDirectoryIsAnEmptyListing() throws {
        let nginx = """
        <html><head><title>Index of /music/</title></head><body><h1>Index of /music/</h1><hr><pre><a href="../">../</a>
        </pre><hr></body></html>
        """
        #expect(try parse(nginx).entries.isEmpty)
        #expect(try parse("[\n]", contentType: "application/json").entries.isEmpty)
    }
}
