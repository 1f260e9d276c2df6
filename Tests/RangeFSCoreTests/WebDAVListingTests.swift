import Foundation
import Testing
@testable import RangeFSCore

// Multistatus replies captured from WsgiDAV, Apache mod_dav and rclone serve webdav (Tests/Fixtures/webdav, whose
// README says how), and hand-written ones for what real servers do less often.

private let fixtures = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fixtures/webdav")

/// The members of the captured tree, as the mount must show them: name → (directory, size).
private let capturedTree: [String: (isDirectory: Bool, size: UInt64?)] = [
    "plain.txt": (false, 5), "hash#name.txt": (false, 2), "question?mark.txt": (false, 3),
    "percent%41.txt": (false, 4), "amp&name.txt": (false, 5), "ünïcödé-日本.txt": (false, 3),
    "empty-file.bin": (false, 0), "it's \"quoted\" <angle>.txt": (false, 1),
    "sub dir": (true, nil), "empty": (true, nil),
]

private func multistatus(_ responses: String) -> Data {
    Data("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:multistatus xmlns:D=\"DAV:\">\(responses)</D:multistatus>".utf8)
}

private func member(_ href: String, collection: Bool = false, length: String? = nil,
                    modified: String? = nil, status: String = "HTTP/1.1 200 OK") -> String {
    let type = collection ? "<D:resourcetype><D:collection/></D:resourcetype>" : "<D:resourcetype/>"
    let size = length.map { "<D:getcontentlength>\($0)</D:getcontentlength>" } ?? ""
    let date = modified.map { "<D:getlastmodified>\($0)</D:getlastmodified>" } ?? ""
    return "<D:response><D:href>\(href)</D:href><D:propstat><D:prop>\(type)\(size)\(date)</D:prop>"
        + "<D:status>\(status)</D:status></D:propstat></D:response>"
}

@Suite("WebDAV multistatus")
struct WebDAVListingTests {
    @Test("each real server's reply gives every member once, with its exact size, and leaves the collection itself out",
          arguments: [("wsgidav-top.xml", "http://127.0.0.1:18080/"), ("apache-top.xml", "http://127.0.0.1:18081/dav/"),
                      ("rclone-top.xml", "http://127.0.0.1:18082/")])
    func capturedReplies(file: String, url: String) throws {
        let body = try Data(contentsOf: fixtures.appendingPathComponent(file))
        let listing = try WebDAVListing.parse(body, url: URL(string: url)!)
        #expect(listing.skipped.isEmpty)
        #expect(listing.entries.count == capturedTree.count)
        for entry in listing.entries {
            let expected = try #require(capturedTree[entry.name], "\(entry.name) is in the tree")
            #expect(entry.isDirectory == expected.isDirectory, "\(entry.name)")
            #expect(entry.size == expected.size, "\(entry.name)")
            #expect(entry.modified != nil, "\(entry.name) has its date")
        }
        let plain = try #require(listing.entries.first { $0.name == "plain.txt" })
        #expect(plain.modified == Date(timeIntervalSince1970: 1_767_323_045))
        #expect(plain.url.absoluteString == url + "plain.txt")
        // A child's URL escapes every reserved byte, whatever the server's href did.
        let hash = try #require(listing.entries.first { $0.name == "hash#name.txt" })
        #expect(hash.url.absoluteString == url + "hash%23name.txt")
        let directory = try #require(listing.entries.first { $0.name == "sub dir" })
        #expect(directory.url.absoluteString == url + "sub%20dir/")
    }

    @Test("hrefs written as absolute URLs, without a final slash on a collection, or encoded differently name the same members")
    func hrefForms() throws {
        let body = multistatus(
            member("http://127.0.0.1:8080/music/", collection: true)
            + member("http://127.0.0.1:8080/music/Album", collection: true)
            + member("/music/caf%C3%A9.mp3", length: "10")
            + member("/music/caf%c3%a9%202.mp3", length: "11")
            + member("song.mp3", length: "12"))
        let listing = try WebDAVListing.parse(body, url: URL(string: "http://127.0.0.1:8080/music/")!)
        #expect(listing.entries.map(\.name) == ["Album", "café.mp3", "café 2.mp3", "song.mp3"])
        #expect(listing.entries[0].isDirectory && listing.entries[0].url.absoluteString == "http://127.0.0.1:8080/music/Album/")
        #expect(listing.entries.map(\.size) == [nil, 10, 11, 12])
    }

    @Test("members deeper than one level (a server answering as for Depth: infinity), on another host, or above are left out")
    func onlyDirectMembersCount() throws {
        let body = multistatus(
            member("/music/", collection: true) + member("/music/a.mp3", length: "1")
            + member("/music/Album/", collection: true) + member("/music/Album/deep.mp3", length: "2")
            + member("http://elsewhere.example/music/b.mp3", length: "3") + member("/other.mp3", length: "4")
            + member("/music/../escape.mp3", length: "5"))
        let listing = try WebDAVListing.parse(body, url: URL(string: "http://127.0.0.1/music/")!)
        #expect(listing.entries.map(\.name) == ["a.mp3", "Album"])
    }

    @Test("a member the server will not describe is left out with its status; the others stay")
    func refusedMembers() throws {
        let body = multistatus(
            member("/d/", collection: true)
            + "<D:response><D:href>/d/locked.mp3</D:href><D:status>HTTP/1.1 403 Forbidden</D:status></D:response>"
            + member("/d/gone.mp3", length: "3", status: "HTTP/1.1 404 Not Found")
            + member("/d/ok.mp3", length: "7"))
        let listing = try WebDAVListing.parse(body, url: URL(string: "http://127.0.0.1/d/")!)
        #expect(listing.entries.map(\.name) == ["ok.mp3"])
        #expect(listing.skipped.map(\.href) == ["/d/locked.mp3", "/d/gone.mp3"])
        #expect(listing.skipped[0].reason.contains("403 Forbidden"))
        #expect(listing.skipped[1].reason.contains("404 Not Found"))
    }

    @Test("a size that is not a plain count of bytes is not taken (the file's size is then asked of the server)")
    func sizesMustBeExact() throws {
        let body = multistatus(
            member("/d/", collection: true) + member("/d/a", length: "-1") + member("/d/b", length: "1.5")
            + member("/d/c", length: " 42 ") + member("/d/d", length: "99999999999999999999999")
            + member("/d/e", length: "+3"))
        let listing = try WebDAVListing.parse(body, url: URL(string: "http://127.0.0.1/d/")!)
        #expect(listing.entries.map(\.size) == [nil, nil, 42, nil, nil])
    }

    @Test("names that cannot be file names are left out with the reason")
    func badNames() throws {
        let body = multistatus(
            member("/d/", collection: true) + member("/d/%0Aline") + member("/d/%FF%FE") + member("/d/fine.txt", length: "1"))
        let listing = try WebDAVListing.parse(body, url: URL(string: "http://127.0.0.1/d/")!)
        #expect(listing.entries.map(\.name) == ["fine.txt"])
        #expect(listing.skipped.count == 2)
    }

    @Test("a reply that is not a listing says what it is instead")
    func notAListing() {
        let url = URL(string: "http://127.0.0.1/d/")!
        let cases: [(String, String)] = [
            ("<html><body>hello</body></html>", "root element is <html>"),
            ("not xml at all", "not XML"),
            ("<?xml version=\"1.0\"?><!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]><D:multistatus xmlns:D=\"DAV:\"/>", "not XML"),
            ("<D:multistatus xmlns:D=\"DAV:\"></D:multistatus>", "neither the collection nor any member"),
        ]
        for (body, reason) in cases {
            #expect {
                try WebDAVListing.parse(Data(body.utf8), url: url)
            } throws: { error in
                (error as? WebListingError)?.reason.contains(reason) == true
            }
        }
    }

    @Test("a collection the server will not describe fails the listing with the status")
    func refusedCollection() {
        let body = multistatus("<D:response><D:href>/d/</D:href><D:status>HTTP/1.1 403 Forbidden</D:status></D:response>")
        #expect {
            try WebDAVListing.parse(body, url: URL(string: "http://127.0.0.1/d/")!)
        } throws: { error in
            (error as? WebListingError)?.reason.contains("403 Forbidden") == true
        }
    }

    @Test("an empty collection lists empty")
    func emptyCollection() throws {
        let listing = try WebDAVListing.parse(multistatus(member("/d/", collection: true)), url: URL(string: "http://127.0.0.1/d/")!)
        #expect(listing.entries.isEmpty && listing.skipped.isEmpty)
    }

    @Test("a collection of more members than the mount holds is refused as it is read")
    func tooManyMembers() {
        let body = multistatus(member("/d/", collection: true) + (0..<11).map { member("/d/f\($0)", length: "1") }.joined())
        #expect {
            try WebDAVListing.parse(body, url: URL(string: "http://127.0.0.1/d/")!, maxEntries: 10)
        } throws: { error in
            (error as? WebListingError)?.reason.contains("--max-listed-entries") == true
        }
        #expect((try? WebDAVListing.parse(body, url: URL(string: "http://127.0.0.1/d/")!, maxEntries: 11))?.entries.count == 11)
    }

    @Test("a multistatus nested past the depth limit is refused before libxml2 sees it")
    func deepNesting() {
        let depth = 100_000
        let body = Data(("<D:multistatus xmlns:D=\"DAV:\">" + String(repeating: "<D:x>", count: depth)
            + String(repeating: "</D:x>", count: depth) + "</D:multistatus>").utf8)
        #expect {
            try WebDAVListing.parse(body, url: URL(string: "http://127.0.0.1/d/")!)
        } throws: { error in
            (error as? WebListingError)?.reason.contains("nested") == true
        }
    }

    @Test("statuses that no WebDAV collection answers PROPFIND with are named for what they mean")
    func notWebDAVStatuses() {
        #expect(WebDAVLister.notACollection(.status(405))?.contains("not a WebDAV server") == true)
        #expect(WebDAVLister.notACollection(.status(501))?.contains("not a WebDAV server") == true)
        #expect(WebDAVLister.notACollection(.status(200))?.contains("207") == true)
        #expect(WebDAVLister.notACollection(.status(401)) == nil)
        #expect(WebDAVLister.notACollection(.status(404)) == nil)
        #expect(WebDAVLister.notACollection(.transport("reset")) == nil)
    }
}

@Suite("WebDAV addresses")
struct WebDAVAddressTests {
    @Test("dav:// and webdav:// are http, davs:// and webdavs:// are https; the rest of the URL is kept")
    func schemes() throws {
        #expect(try WebDAVAddress.httpURL(of: "dav://127.0.0.1:8080/music/")?.absoluteString == "http://127.0.0.1:8080/music/")
        #expect(try WebDAVAddress.httpURL(of: "DAVS://nas.local/remote.php/dav/files/me/")?.absoluteString
                == "https://nas.local/remote.php/dav/files/me/")
        #expect(try WebDAVAddress.httpURL(of: "webdav://me@host/a%20b/")?.absoluteString == "http://me@host/a%20b/")
        #expect(try WebDAVAddress.httpURL(of: "webdavs://host/")?.absoluteString == "https://host/")
    }

    @Test("other addresses are not WebDAV's, and a WebDAV scheme without a host is an error")
    func others() throws {
        #expect(try WebDAVAddress.httpURL(of: "https://host/music/") == nil)
        #expect(try WebDAVAddress.httpURL(of: "s3://bucket/") == nil)
        #expect(try WebDAVAddress.httpURL(of: "media.txt") == nil)
        #expect(try WebDAVAddress.httpURL(of: "dav.txt") == nil)
        #expect(throws: WebDAVAddressError.self) { try WebDAVAddress.httpURL(of: "dav:///music/") }
    }
}
