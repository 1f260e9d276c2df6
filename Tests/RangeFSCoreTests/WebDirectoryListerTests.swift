import FaultServer
import Foundation
import Testing
@testable import RangeFSCore

/// The lister a listed mount uses, against a FaultServer on loopback: children of a page,
/// a held listing kept on a `304`, and failures as the mount sees them.
@Suite("Web listings: the directory lister")
struct WebDirectoryListerTests {
    let http: LoopbackHTTP

    init() throws {
        http = try LoopbackHTTP()
    }

    var server: FaultServer { http.server }
    var lister: WebDirectoryLister { WebDirectoryLister(client: http.client, timeout: .seconds(10), logger: http.logger) }

    func list(_ path: String, held: RemoteValidator? = nil) throws -> Result<ListingAnswer, FetchError> {
        try FilesystemHarness.wait { completion in lister.list(server.url(path), heldVersion: held, completion: completion) }
    }

    func publishPage(_ path: String, _ body: String, contentType: String = "text/html", options: PathOptions = PathOptions()) {
        server.publish(path, bytes: Array(body.utf8))
        var options = options
        options.chunked = true
        options.contentType = contentType
        server.configure(path, options)
    }

    @Test func aPageBecomesChildrenAndAHeldListingIsKeptOnA304() throws {
        publishPage("music/", #"<a href="../">up</a> <a href="A%20B/">A B/</a> <a href="x.mp3">x</a>"#)
        guard case .listed(let children, let validator, let place) = try list("music/").get() else {
            Issue.record("expected a listing")
            return
        }
        #expect(children == [
            WebListingEntry(name: "A B", url: URL(string: server.url("music/").absoluteString + "A%20B/")!, isDirectory: true),
            WebListingEntry(name: "x.mp3", url: server.url("music/x.mp3"), isDirectory: false),
        ])
        #expect(place == server.url("music/"))
        #expect(validator?.etag == server.etag(of: "music/"))
        guard case .unchanged(let kept) = try list("music/", held: validator).get() else {
            Issue.record("expected the held listing to be kept")
            return
        }
        #expect(kept == validator)
        #expect(server.requests(for: "music/").last?.status == 304)
    }

    @Test func aListingWithoutValidatorsHasNone() throws {
        publishPage("plain/", "[]", contentType: "application/json", options: PathOptions(sendETag: false, sendLastModified: false))
        guard case .listed(let children, let validator, _) = try list("plain/").get() else {
            Issue.record("expected a listing")
            return
        }
        #expect(children.isEmpty)
        #expect(validator == nil)
    }

    @Test func failuresNameTheDirectoryAndSayWhetherAskingAgainHelps() throws {
        guard case .failure(let missing) = try list("gone/"), case .remote(.status(404, _, _)) = missing.reason else {
            Issue.record("expected a 404")
            return
        }
        #expect(missing.file == server.url("gone/").absoluteString)
        publishPage("song/", "ID3", contentType: "audio/mpeg")
        guard case .failure(let notListing) = try list("song/"), case .unreadableListing(let why) = notListing.reason else {
            Issue.record("expected a refusal")
            return
        }
        #expect(why == "not a directory listing (Content-Type: audio/mpeg)")
        #expect(server.requests(for: "song/").count == 1, "asking again brings the same page: asked once")
    }
}
