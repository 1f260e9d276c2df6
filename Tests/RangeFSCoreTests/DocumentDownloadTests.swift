import FaultServer
import Foundation
import Testing
@testable import RangeFSCore

/// Whole documents (manifests, feeds, listings) fetched with libcurl from a FaultServer on
/// loopback: chunked replies, the size cap, revalidation with a 304, retries and redirects.
@Suite("Remote: whole documents of any length")
struct DocumentDownloadTests {
    let http: LoopbackHTTP

    init() throws {
        http = try LoopbackHTTP()
    }

    var server: FaultServer { http.server }
    var client: CurlClient { http.client }

    func download(_ path: String, maxBytes: UInt64 = 1 << 20, held: RemoteValidator? = nil) throws(RemoteError) -> FetchedDocument {
        var download = DocumentDownload(request: DocumentRequest(url: server.url(path), maxBytes: maxBytes, heldVersion: held,
                                                                 timeout: .seconds(20)), client: client)
        download.policy.retryBaseDelay = .milliseconds(20)
        return try download.fetch()
    }

    @Test func aChunkedReplyWithoutContentLengthIsReadWholeWithOneGet() throws {
        let bytes = FetchEngineHarness.bytes(300_000)
        server.publish("feed.xml", bytes: bytes)
        server.configure("feed.xml", PathOptions(chunked: true))
        let document = try download("feed.xml")
        #expect(document.bytes == Data(bytes))
        #expect(document.reply.notModified == false)
        #expect(document.reply.validator.etag == server.etag(of: "feed.xml"))
        #expect(document.reply.contentType == "application/octet-stream")
        #expect(document.reply.finalURL == server.url("feed.xml"))
        let requests = server.requests(for: "feed.xml")
        #expect(requests.map(\.method) == ["GET"], "no size request first: \(requests)")
        #expect(requests.first?.header("Range") == nil)
    }

    @Test(arguments: [true, false])
    func aReplyPastTheCapStopsTheTransferWithAClearError(chunked: Bool) throws {
        let total = 64 << 20
        server.publish("huge.txt", bytes: [UInt8](repeating: 0x61, count: total))
        server.configure("huge.txt", PathOptions(chunked: chunked))
        let error = #expect(throws: RemoteError.self) { try self.download("huge.txt", maxBytes: 1 << 20) }
        let expected = chunked ? "the reply is longer than the 1 MiB allowed; the transfer was stopped"
                               : "the reply is \(total) bytes, more than the 1 MiB allowed"
        #expect(error == .refused(expected))
        server.waitUntilQuiet(timeout: .seconds(10))
        let requests = server.requests(for: "huge.txt")
        #expect(requests.count == 1, "a reply too long is not tried again: \(requests)")
        // Socket buffers hold a few MiB at most: the transfer stopped, it did not read to the end.
        #expect((requests.first?.bodyBytesSent ?? total) < total / 4, "\(requests)")
    }

    @Test func aHeldVersionIsRevalidatedWithA304AndANewVersionIsFetched() throws {
        server.publish("list/", bytes: Array("first".utf8))
        server.configure("list/", PathOptions(chunked: true))
        let first = try download("list/")
        let unchanged = try download("list/", held: first.reply.validator)
        #expect(unchanged.reply.notModified)
        #expect(unchanged.bytes.isEmpty)
        #expect(unchanged.reply.validator == first.reply.validator)
        let sent = server.requests(for: "list/").last
        #expect(sent?.header("If-None-Match") == first.reply.validator.etag)
        #expect(sent?.header("If-Modified-Since") == first.reply.validator.lastModified)
        #expect(sent?.status == 304)

        server.publish("list/", bytes: Array("second".utf8))
        let changed = try download("list/", held: first.reply.validator)
        #expect(!changed.reply.notModified)
        #expect(changed.bytes == Data("second".utf8))
        #expect(changed.reply.validator != first.reply.validator)
    }

    @Test func aDateAloneRevalidatesWhenTheServerSendsNoETag() throws {
        server.publish("dated", bytes: Array("text".utf8))
        server.configure("dated", PathOptions(sendETag: false))
        let first = try download("dated")
        #expect(first.reply.validator.etag == nil)
        let again = try download("dated", held: first.reply.validator)
        #expect(again.reply.notModified)
        #expect(again.reply.validator == first.reply.validator, "the held validator stands for a 304 without one")
    }

    @Test func a304ToAnUnconditionalRequestIsAnError() throws {
        server.publish("odd", bytes: Array("x".utf8))
        server.inject(.status(304), for: "odd")
        #expect(throws: RemoteError.status(304)) { try self.download("odd") }
    }

    @Test func transientFailuresAreRetriedByTheOneRuleAndAMissingDocumentIsNot() throws {
        let bytes = FetchEngineHarness.bytes(200_000)
        server.publish("a.json", bytes: bytes)
        server.configure("a.json", PathOptions(chunked: true))
        server.inject(.status(503, retryAfter: "0"), for: "a.json")
        server.inject(.dropConnection(afterBodyBytes: 50_000), for: "a.json")
        let document = try download("a.json")
        #expect(document.bytes == Data(bytes), "the body of the dropped attempt is not kept")
        #expect(server.requests(for: "a.json").map(\.status) == [503, 200, 200])

        #expect(throws: RemoteError.status(404)) { try self.download("missing.json") }
        #expect(server.requests(for: "missing.json").count == 1)
    }

    @Test func theFinalURLAfterRedirectsIsReported() throws {
        server.publish("music/", bytes: Array("listing".utf8))
        server.inject(.redirect(to: "/music/", status: 301), for: "music")
        let document = try download("music")
        #expect(document.reply.finalURL == server.url("music/"))
        #expect(document.bytes == Data("listing".utf8))
    }

    @Test func aManifestServedChunkedLoadsByURL() throws {
        server.publish("a.bin", bytes: [1, 2, 3])
        server.publish("list.txt", bytes: Array("\(server.url("a.bin").absoluteString)\n".utf8))
        server.configure("list.txt", PathOptions(chunked: true))
        let manifest = try ManifestLoader(location: .remote(server.url("list.txt"))).load(client: client)
        #expect(manifest.entries.map(\.path.description) == ["a.bin"])
    }
}
