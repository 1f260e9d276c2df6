import FaultServer
import Foundation
import Logging
import Testing
@testable import RangeFSCore

// Replies captured from a real Supysonic (Tests/Fixtures/subsonic, whose README says how), and
// hand-written ones for what other servers write.

private let fixtures = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fixtures/subsonic")

private func fixture(_ name: String) throws -> Data {
    try Data(contentsOf: fixtures.appendingPathComponent(name))
}

private let address = try! SubsonicAddress.parse("subsonic+https://alice@music.example:4533/navidrome/")!

@Suite("Subsonic address")
struct SubsonicAddressTests {
    @Test("subsonic+https://USER@HOST:PORT/PATH/ is the server's base URL without the user, and the user")
    func parsesAddress() throws {
        #expect(address.base.absoluteString == "https://music.example:4533/navidrome/")
        #expect(address.user == "alice")
        let plain = try #require(try SubsonicAddress.parse("SUBSONIC+HTTP://127.0.0.1:4040"))
        #expect(plain.base.absoluteString == "http://127.0.0.1:4040/")
        #expect(plain.user == nil)
        #expect(try SubsonicAddress.parse("https://music.example/") == nil)
        #expect(try SubsonicAddress.parse("dav://music.example/") == nil)
    }

    @Test("an address with a password, a query or no host is refused, without showing the password")
    func refusesBadAddresses() {
        for bad in ["subsonic+https://alice:hunter2@music.example/", "subsonic+https://music.example/?u=alice", "subsonic+https:///x"] {
            #expect(throws: SubsonicAddressError.self) { try SubsonicAddress.parse(bad) }
            do {
                _ = try SubsonicAddress.parse(bad)
            } catch {
                #expect(!error.description.contains("hunter2"))
            }
        }
    }

    @Test("every directory has a URL of its own below its layout's root, and back")
    func directoryURLs() {
        let cases: [(SubsonicAddress.Directory, String)] = [
            (.root(.id3), "https://music.example:4533/navidrome/id3/"),
            (.root(.folders), "https://music.example:4533/navidrome/folders/"),
            (.artist(id: "ar-1"), "https://music.example:4533/navidrome/id3/artist/ar-1/"),
            (.album(id: "a/b c&d"), "https://music.example:4533/navidrome/id3/album/a%2Fb%20c%26d/"),
            (.folder(id: "Björk"), "https://music.example:4533/navidrome/folders/Bj%C3%B6rk/"),
        ]
        for (directory, url) in cases {
            #expect(address.directoryURL(directory).absoluteString == url)
            #expect(address.directory(of: URL(string: url)!) == directory)
        }
        #expect(address.directory(of: URL(string: "https://music.example:4533/navidrome/id3/song/x/")!) == nil)
        #expect(address.directory(of: URL(string: "https://other.example:4533/navidrome/id3/")!) == nil)
    }

    @Test("the API calls hold no credential; ids and reserved characters are encoded")
    func apiURLs() {
        #expect(address.apiURL(listing: .root(.id3)).absoluteString == "https://music.example:4533/navidrome/rest/getArtists.view?f=json")
        #expect(address.apiURL(listing: .album(id: "a&b=c+d")).absoluteString
                == "https://music.example:4533/navidrome/rest/getAlbum.view?id=a%26b%3Dc%2Bd&f=json")
        #expect(address.apiURL(listing: .folder(id: "7")).absoluteString
                == "https://music.example:4533/navidrome/rest/getMusicDirectory.view?id=7&f=json")
        #expect(address.downloadURL(id: "tr-9").absoluteString == "https://music.example:4533/navidrome/rest/download.view?id=tr-9")
    }
}

@Suite("Subsonic sign-in")
struct SubsonicSignInTests {
    @Test("the token is md5(password + salt): RFC 1321's vectors and the API documentation's example")
    func tokenMath() {
        #expect(SubsonicCredentials.token(password: "", salt: "") == "d41d8cd98f00b204e9800998ecf8427e")
        #expect(SubsonicCredentials.token(password: "a", salt: "bc") == "900150983cd24fb0d6963f7d28e17f72")
        #expect(SubsonicCredentials.token(password: "message ", salt: "digest") == "f96b697d7cb7938d525a2f31aaf161d0")
        #expect(SubsonicCredentials.token(password: "12345678901234567890123456789012345678901234567890123456789012345678901234567890", salt: "")
                == "57edf4a22be3c955ac49da2e2107b67a")
        #expect(SubsonicCredentials.token(password: "sesame", salt: "c19b2d") == "26719a1196d2a940705a59634eb18eab")
    }

    @Test("credentials are added to the server's API calls as they go out, a fresh salt each time, and to nothing else")
    func signsAPICallsOnly() throws {
        let dialect = SubsonicDialect(address: address, credentials: SubsonicCredentials(user: "al&ce", password: "sesame", form: .token))
        let call = address.apiURL(listing: .root(.id3))
        let signed = dialect.sentURL(for: call, salt: "c19b2d")
        #expect(signed.absoluteString == call.absoluteString + "&u=al%26ce&t=26719a1196d2a940705a59634eb18eab&s=c19b2d&v=1.13.0&c=rangefs")
        let first = dialect.sentURL(for: call), second = dialect.sentURL(for: call)
        #expect(first != second)
        let salt = try #require(URLComponents(url: first, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "s" }?.value)
        #expect(salt.count == 12)
        // Another server, or a page of this one that is no API call (where a redirect led), gets nothing.
        for other in ["https://cdn.example/rest/download.view?id=1", "https://music.example:4533/navidrome/id3/", "http://music.example:4533/navidrome/rest/ping.view"] {
            #expect(dialect.sentURL(for: URL(string: other)!) == URL(string: other)!)
        }
        #expect(dialect.authorizationHeaders(method: "GET", url: call, date: Date()).isEmpty)
    }

    @Test("the hex form sends p=enc:HEX of the UTF-8 password with API 1.8.0")
    func hexPassword() {
        let dialect = SubsonicDialect(address: address, credentials: SubsonicCredentials(user: "alice", password: "s3cret pw", form: .hexPassword))
        let signed = dialect.sentURL(for: address.downloadURL(id: "1"), salt: "unused")
        #expect(signed.query == "id=1&u=alice&p=enc%3A733363726574207077&v=1.8.0&c=rangefs")
    }

    @Test("a server older than 1.13 or one that answers 41 is asked again with the hex password; other errors refuse")
    func chooseForm() throws {
        // Supysonic takes no token: it answers error 10 and says it speaks 1.12.0.
        let supysonic = try #require(apiError(try fixture("ping-token-unsupported.json")))
        #expect(SubsonicSignIn.next(after: .failed(supysonic), in: .token) == .retry(.hexPassword))
        let ldap = SubsonicAPIError(code: 41, message: "", serverVersion: SubsonicVersion("1.16.1"))
        #expect(SubsonicSignIn.next(after: .failed(ldap), in: .token) == .retry(.hexPassword))
        let wrong = try #require(apiError(try fixture("ping-wrong-password.json")))
        #expect(wrong.code == 40)
        #expect(SubsonicSignIn.next(after: .failed(wrong), in: .hexPassword) == .refused(wrong))
        #expect(wrong.description.contains("wrong user name or password"))
        let newWrong = SubsonicAPIError(code: 40, message: "Wrong username or password", serverVersion: SubsonicVersion("1.16.1"))
        #expect(SubsonicSignIn.next(after: .failed(newWrong), in: .token) == .refused(newWrong))
        #expect(SubsonicSignIn.next(after: .ok, in: .token) == .signedIn(.token))
        #expect(SubsonicSignIn.next(after: .ok, in: .hexPassword) == .signedIn(.hexPassword))
    }

    @Test("versions compare by number, not by text")
    func versions() {
        #expect(SubsonicVersion("1.12.0")! < SubsonicVersion.tokenSignIn)
        #expect(SubsonicVersion("1.9")! < SubsonicVersion("1.13.0")!)
        #expect(!(SubsonicVersion("1.16.1")! < SubsonicVersion.tokenSignIn))
        #expect(SubsonicVersion("x.1") == nil)
    }
}

private func apiError(_ body: Data) -> SubsonicAPIError? {
    do {
        _ = try SubsonicReply.parse(body)
        return nil
    } catch {
        if case .api(let error) = error { return error }
        return nil
    }
}

@Suite("Subsonic replies")
struct SubsonicReplyTests {
    @Test("getArtists gives every artist of every index")
    func artists() throws {
        let reply = try SubsonicReply.parse(try fixture("getArtists.json"))
        #expect(reply.version == SubsonicVersion("1.12.0"))
        #expect(reply.items.map(\.name) == ["AC/DC", "Björk"])
    }

    @Test("getArtist gives the albums with their years; getAlbum the songs with size, suffix, track and date")
    func albumsAndSongs() throws {
        let albums = try SubsonicReply.parse(try fixture("getArtist.json")).items
        #expect(albums.map(\.name) == ["Post/Pre", "Homogenic"])
        #expect(albums.map(\.year) == [1995, 1997])
        let songs = try SubsonicReply.parse(try fixture("getAlbum.json")).items
        #expect(songs.count == 2)
        #expect(songs[0].title == "Army of Me")
        #expect(songs[0].size == 8675)
        #expect(songs[0].suffix == "mp3")
        #expect(songs[0].track == 1)
        // Supysonic writes its time without a zone: read as UTC.
        #expect(songs[0].createdDate == ISO8601DateFormatter().date(from: "2026-12-01T21:48:59Z"))
    }

    @Test("getIndexes gives folders; getMusicDirectory folders and files")
    func folders() throws {
        let top = try SubsonicReply.parse(try fixture("getIndexes.json")).items
        #expect(top.map(\.id) == ["2", "4"])
        #expect(top.allSatisfy { $0.isDir == true })
        let artist = try SubsonicReply.parse(try fixture("getMusicDirectory-artist.json")).items
        #expect(artist.map(\.title) == ["Homogenic", "Post"])
        let album = try SubsonicReply.parse(try fixture("getMusicDirectory-album.json")).items
        #expect(album.map(\.path) == ["Björk/Post/01a.mp3", "Björk/Post/01b.mp3"])
    }

    @Test("ids written as numbers are read; a field of the wrong type is left out, not fatal")
    func otherServers() throws {
        let body = Data(#"{"subsonic-response":{"status":"ok","version":"1.16.1","album":{"song":[{"id":42,"title":"T","size":"big","track":3,"suffix":"flac","created":"2024-05-01T10:00:00.000Z"}]}}}"#.utf8)
        let song = try #require(try SubsonicReply.parse(body).items.first)
        #expect(song.id == "42")
        #expect(song.size == nil)
        #expect(song.createdDate == ISO8601DateFormatter().date(from: "2024-05-01T10:00:00Z"))
        let long = String(repeating: "x", count: SubsonicReply.maxIDBytes + 1)
        let odd = Data(#"{"subsonic-response":{"status":"ok","album":{"song":[{"id":""},{"id":"\#(long)"},{"id":"ok"}]}}}"#.utf8)
        #expect(try SubsonicReply.parse(odd).items.map(\.id) == ["ok"], "an empty or overlong id is left out")
    }

    @Test("a reply of more items than the mount holds, one that is no API reply, or one nested without end, is refused")
    func refusals() {
        let many = Data(("{\"subsonic-response\":{\"status\":\"ok\",\"album\":{\"song\":["
                         + (0..<11).map { "{\"id\":\"\($0)\"}" }.joined(separator: ",") + "]}}}").utf8)
        #expect(throws: SubsonicReplyError.self) { try SubsonicReply.parse(many, maxItems: 10) }
        #expect((try? SubsonicReply.parse(many, maxItems: 11))?.items.count == 11)
        for bad in ["<html>login</html>", "{}", #"{"subsonic-response":{"status":"failed"}}"#, String(repeating: "[", count: 100_000)] {
            #expect(throws: SubsonicReplyError.self) { try SubsonicReply.parse(Data(bad.utf8)) }
        }
    }
}

/// The sign-in's pings through a real client, against a FaultServer on loopback that answers
/// every ping alike (it routes by path, not query).
@Suite("Subsonic sign-in through the mount's client")
struct SubsonicSignInThroughClientTests {
    let server: FaultServer
    let signIn: SubsonicSignIn

    init() throws {
        server = try FaultServer()
        signIn = SubsonicSignIn(address: SubsonicAddress(base: server.url("/music/"), user: "alice"), user: "alice", password: "pw")
    }

    /// A client whose requests `dialect` signs, as the mount's; shut down by `body`'s end.
    func withClient<T>(_ dialect: SubsonicDialect, _ body: (CurlClient) throws -> T) rethrows -> T {
        var configuration = CurlClient.Configuration()
        configuration.dialect = dialect
        var logger = Logger(label: "rangefs-test")
        logger.logLevel = .critical
        let client = CurlClient(configuration: configuration, logger: logger)
        defer { client.shutdown() }
        return try body(client)
    }

    func publish(_ path: String, _ body: Data) {
        server.publish(path, bytes: Array(body))
        var options = PathOptions()
        options.contentType = "application/json"
        server.configure(path, options)
    }

    @Test("the ping and the mount's first listing go on one connection, both signed with the form the server took")
    func pingAndListingShareAConnection() throws {
        publish("/music/rest/ping.view", try fixture("ping.json"))
        publish("/music/rest/getArtists.view", try fixture("getArtists.json"))
        let dialect = signIn.dialect(form: .token)
        let listed = try withClient(dialect) { client in
            #expect(try signIn.signIn(through: client, dialect: dialect) == .token)
            let lister = SubsonicLister(ListingDownload(client: client, timeout: .seconds(10), logger: Logger(label: "rangefs-test")),
                                        address: signIn.address)
            return try FilesystemHarness.wait { completion in
                lister.list(signIn.address.rootURL(.id3), heldVersion: nil, completion: completion)
            }
        }
        guard case .listed(let children, _, _, _) = try listed.get() else {
            Issue.record("expected the artists")
            return
        }
        #expect(!children.isEmpty)
        let requests = server.requests
        #expect(requests.map(\.path) == ["/music/rest/ping.view", "/music/rest/getArtists.view"])
        #expect(Set(requests.map(\.connection)) == [1], "\(requests.map(\.connection))")
        #expect(requests.allSatisfy { $0.target.contains("&t=") && !$0.target.contains("&p=") })
    }

    @Test("a server that refuses the token is pinged again with the hex password on the same connection; refused again, the sign-in says why")
    func retriesWithTheHexPasswordOnTheSameConnection() throws {
        // Supysonic's answer to a token: error 10, "1.12.0"; the same to the hex password here.
        publish("/music/rest/ping.view", try fixture("ping-token-unsupported.json"))
        let dialect = signIn.dialect(form: .token)
        let outcome = withClient(dialect) { client in
            Result { () throws(SubsonicSignInError) in try signIn.signIn(through: client, dialect: dialect) }
        }
        guard case .failure(.refused(let error)) = outcome else {
            Issue.record("expected a refusal, got \(outcome)")
            return
        }
        #expect(error.code == 10)
        let requests = server.requests
        #expect(requests.count == 2)
        #expect(requests.first?.target.contains("&t=") == true)
        #expect(requests.last?.target.contains("&p=enc%3A7077") == true, "\(requests.last?.target ?? "")")
        #expect(Set(requests.map(\.connection)) == [1])
        #expect(dialect.credentials.form == .hexPassword)
    }
}

@Suite("Subsonic error documents")
struct SubsonicErrorReplyTests {
    private let dialect = SubsonicDialect(address: address, credentials: SubsonicCredentials(user: "alice", password: "pw", form: .token))

    @Test("a download answered 200 with XML or JSON is an error, decided from its type; audio is not; nor is a listing call")
    func toldApartByType() {
        let download = address.downloadURL(id: "1")
        for type in ["text/xml; charset=utf-8", "application/json", "Application/XML"] {
            #expect(dialect.isErrorReply(url: download, status: 200, headers: [("content-type", type)]), "\(type)")
        }
        for type in ["audio/mpeg", "audio/flac", "application/octet-stream"] {
            #expect(!dialect.isErrorReply(url: download, status: 206, headers: [("content-type", type)]), "\(type)")
        }
        #expect(!dialect.isErrorReply(url: download, status: 200, headers: []))
        #expect(!dialect.isErrorReply(url: address.apiURL(listing: .root(.id3)), status: 200, headers: [("content-type", "application/json")]))
    }

    @Test("the error of Supysonic's XML documents and of a JSON one is read and explained")
    func readsTheError() throws {
        let wrong = try #require(SubsonicErrorReply.parse(Array(try fixture("download-wrong-password.xml"))))
        #expect(wrong.code == 40 && wrong.message == "Wrong username or password." && wrong.serverVersion == SubsonicVersion("1.12.0"))
        let detail = try #require(dialect.errorDetail(url: address.downloadURL(id: "1"), status: 200,
                                                      body: Array(try fixture("download-wrong-password.xml")),
                                                      headers: [("content-type", "text/xml")]))
        #expect(detail.explanation.contains("wrong user name or password") && !detail.isTransient)
        let gone = try #require(SubsonicErrorReply.parse(Array(try fixture("download-not-found.xml"))))
        #expect(gone.code == 70)
        let json = try #require(SubsonicErrorReply.parse(Array(try fixture("ping-wrong-password.json"))))
        #expect(json.code == 40)
        #expect(SubsonicErrorReply.parse(Array("<html>oops</html>".utf8)) == nil)
        #expect(SubsonicErrorReply.parse(Array(#"<subsonic-response status="ok"/>"#.utf8)) == nil)
    }
}

@Suite("Subsonic layout")
struct SubsonicLayoutTests {
    @Test("artists and albums are directories named safely; an album shows its year")
    func directories() throws {
        let artists = SubsonicLayout.entries(of: .root(.id3), items: try SubsonicReply.parse(try fixture("getArtists.json")).items, address: address)
        #expect(artists.map(\.name) == ["AC-DC", "Björk"])
        #expect(artists.allSatisfy { $0.isDirectory })
        #expect(address.directory(of: artists[1].url) == .artist(id: "a858004f-a95d-4fe1-81a8-dba272a80639"))
        let albums = SubsonicLayout.entries(of: .artist(id: "x"), items: try SubsonicReply.parse(try fixture("getArtist.json")).items, address: address)
        #expect(albums.map(\.name) == ["Post-Pre (1995)", "Homogenic (1997)"])
        #expect(address.directory(of: albums[0].url) == .album(id: "fb76ce88-c0fc-480a-95f2-6b44dc2e292a"))
    }

    @Test("songs are NN Title.ext with the API's size, downloaded by id; equal names are made unique")
    func songs() throws {
        let songs = SubsonicLayout.entries(of: .album(id: "x"), items: try SubsonicReply.parse(try fixture("getAlbum.json")).items, address: address)
        #expect(songs.map(\.name) == ["01 Army of Me.mp3", "01 Army of Me (2).mp3"])
        #expect(songs.map(\.size) == [8675, 8675])
        #expect(songs[0].url == address.downloadURL(id: "82eb7258-2697-4cee-923d-54738c6a81fb"))
        #expect(!songs[0].isDirectory)
    }

    @Test("an album of several discs numbers D-NN; a song without title, track or suffix still gets a name; hostile text is made safe")
    func awkwardSongs() {
        let items = [SubsonicItem(id: "1", title: "A", track: 1, discNumber: 1, suffix: "flac"),
                     SubsonicItem(id: "2", title: "B", track: 1, discNumber: 2, suffix: "flac"),
                     SubsonicItem(id: "3", discNumber: 2),
                     SubsonicItem(id: "4", title: "..", track: 4, discNumber: 2, suffix: "../x"),
                     SubsonicItem(id: "5", title: "line\nbreak\u{0}", track: 5, discNumber: 2, suffix: "mp3")]
        let names = SubsonicLayout.entries(of: .album(id: "x"), items: items, address: address).map(\.name)
        #expect(names == ["1-01 A.flac", "2-01 B.flac", "Unknown Title", "2-04 Unknown Title", "2-05 line break.mp3"])
    }

    @Test("the folder layout keeps the server's file names, and a folder's title")
    func folderNames() throws {
        let artist = SubsonicLayout.entries(of: .folder(id: "4"), items: try SubsonicReply.parse(try fixture("getMusicDirectory-artist.json")).items, address: address)
        #expect(artist.map(\.name) == ["Homogenic", "Post"])
        #expect(artist.allSatisfy { $0.isDirectory })
        #expect(address.directory(of: artist[1].url) == .folder(id: "6"))
        let album = SubsonicLayout.entries(of: .folder(id: "6"), items: try SubsonicReply.parse(try fixture("getMusicDirectory-album.json")).items, address: address)
        #expect(album.map(\.name) == ["01a.mp3", "01b.mp3"])
        #expect(album.allSatisfy { !$0.isDirectory && $0.size == 8675 })
    }
}
