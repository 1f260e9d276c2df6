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
    var lister: WebDirectoryLister { WebDirectoryLister(ListingDownload(client: http.client, timeout: .seconds(10), logger: http.logger)) }

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
        guard case .listed(let children, let validator, let place, _) = try list("music/").get() else {
            Issue.record("expected a listing")
            return
        }
        #expect(children == [
            WebListingEntry(name: "A B", url: URL(string: server.url("music/").absoluteString + "A%20B/")!, isDirectory: true),
            WebListingEntry(name: "x.mp3", url: server.url("music/x.mp3"), isDirectory: false),
        ])
        #expect(place == server.url("music/"))
        #expect(validator?.etag == server.etag(of: "music/"))
        guard case .unchanged(let kept, _) = try list("music/", held: validator).get() else {
            Issue.record("expected the held listing to be kept")
            return
        }
        #expect(kept == validator)
        #expect(server.requests(for: "music/").last?.status == 304)
    }

    /// A mount tells a near server from a distant one by the server's own time to answer a
    /// listing (the walk rule, `FileCatalog.treeWalked`): a late answer counts, the wait for a
    /// free connection behind other transfers does not.
    @Test func aListingsServerTimeIsTheServersAnswerNotTheWaitForAConnection() throws {
        publishPage("far/", "[]", contentType: "application/json", options: PathOptions(latency: .milliseconds(60)))
        let far = try list("far/").get()
        #expect(far.serverTime >= .milliseconds(55), "\(far.serverTime)")

        var configuration = CurlClient.Configuration()
        configuration.maxConnectionsPerHost = 1
        let client = CurlClient(configuration: configuration, logger: http.logger)
        defer { client.shutdown() }
        publishPage("near/", "[]", contentType: "application/json")
        server.publish("slow.bin", bytes: [UInt8](repeating: 7, count: 64 * 1024))
        server.configure("slow.bin", PathOptions(bytesPerSecond: 200 * 1024))
        // The only connection carries 64 KiB at 200 KiB/s for about 300 ms; the listing waits for it.
        let slow = DocumentDownload(request: DocumentRequest(url: server.url("slow.bin"), maxBytes: 1 << 20, timeout: .seconds(10)),
                                    client: client)
        let slowDone = DispatchSemaphore(value: 0)
        slow.start { _ in slowDone.signal() }
        try #require(FilesystemHarness.eventually(timeout: 5) { server.requests(for: "slow.bin").count == 1 })
        let lister = WebDirectoryLister(ListingDownload(client: client, timeout: .seconds(10), logger: http.logger))
        let asked = ContinuousClock.now
        let near = try FilesystemHarness.wait { completion in lister.list(server.url("near/"), heldVersion: nil, completion: completion) }.get()
        let waited = ContinuousClock.now - asked
        #expect(slowDone.wait(timeout: .now() + 10) == .success)
        try #require(waited >= .milliseconds(150), "the listing did not wait for the connection (\(waited)): the test proves nothing")
        #expect(near.serverTime < .milliseconds(25), "waited \(waited), server time \(near.serverTime)")
    }

    @Test func aListingWithoutValidatorsHasNone() throws {
        publishPage("plain/", "[]", contentType: "application/json", options: PathOptions(sendETag: false, sendLastModified: false))
        guard case .listed(let children, let validator, _, _) = try list("plain/").get() else {
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
