import Foundation
import Testing
@testable import RangeFSCore

/// Redirects followed by the client: where each hop goes and which headers go with it.
struct RedirectHopTests {
    static let asked = URL(string: "http://files.test/a.bin")!
    static let given = ["Authorization": "Bearer x", "Cookie": "c=1", "X-Api-Key": "k"]

    @Test func theCallersHeadersGoOnlyToTheOriginAsked() throws {
        let first = RedirectHop(asked: Self.asked)
        #expect(first.headers(Self.given) == Self.given)
        let away = try #require(try first.next(status: 302, locationHeader: "http://cdn.test/a.bin", maxRedirects: 8).get())
        #expect(away.count == 1 && away.url.absoluteString == "http://cdn.test/a.bin")
        #expect(away.headers(Self.given).isEmpty)
        // Back on the origin asked, they go again.
        let back = try #require(try away.next(status: 307, locationHeader: "http://files.test/b.bin", maxRedirects: 8).get())
        #expect(back.count == 2 && back.headers(Self.given) == Self.given)
    }

    @Test func aURLsCredentialsGoBackToTheirOriginOnly() throws {
        let first = RedirectHop(asked: URL(string: "http://u:pw@files.test/a.bin")!)
        let same = try #require(try first.next(status: 302, locationHeader: "http://files.test/b.bin", maxRedirects: 8).get())
        #expect(same.url.absoluteString == "http://u:pw@files.test/b.bin")
        let away = try #require(try first.next(status: 302, locationHeader: "http://cdn.test/b.bin", maxRedirects: 8).get())
        #expect(away.url.absoluteString == "http://cdn.test/b.bin")
    }

    @Test func onlyRedirectStatusesWithALocationLeadOn() throws {
        let first = RedirectHop(asked: Self.asked)
        let there = "http://files.test/b.bin"
        for status in [301, 302, 303, 307, 308] {
            #expect(try first.next(status: status, locationHeader: there, maxRedirects: 8).get() != nil, "\(status)")
        }
        for status in [200, 206, 300, 304, 404] {
            #expect(try first.next(status: status, locationHeader: there, maxRedirects: 8).get() == nil, "\(status)")
        }
        #expect(try first.next(status: 302, locationHeader: nil, maxRedirects: 8).get() == nil)
        // A relative location resolves against the hop's URL.
        let relative = try #require(try first.next(status: 301, locationHeader: "../b/c.bin?x=1", maxRedirects: 8).get())
        #expect(relative.url.absoluteString == "http://files.test/b/c.bin?x=1")
    }

    @Test func redirectsAreBoundedAndStayOnHTTP() throws {
        var hop = RedirectHop(asked: Self.asked)
        for _ in 0..<3 { hop = try #require(try hop.next(status: 302, locationHeader: Self.asked.absoluteString, maxRedirects: 3).get()) }
        guard case .failure(.refused(let why)) = hop.next(status: 302, locationHeader: Self.asked.absoluteString, maxRedirects: 3) else {
            Issue.record("a fourth redirect was followed")
            return
        }
        #expect(why.contains("more than 3 redirects"))
        let file = RedirectHop(asked: Self.asked).next(status: 302, locationHeader: "file:///etc/passwd", maxRedirects: 8)
        guard case .failure(.refused) = file else {
            Issue.record("a redirect to file:// was followed")
            return
        }
        // The refusal names the target redacted.
        let secret = RedirectHop(asked: Self.asked).next(status: 302, locationHeader: "ftp://u:pw@h/x?token=t", maxRedirects: 8)
        guard case .failure(.refused(let text)) = secret else {
            Issue.record("ftp was followed")
            return
        }
        #expect(!text.contains("pw") && !text.contains("token=t"), "\(text)")
    }
}

/// S3 signatures go to the bucket's own server alone.
struct S3SigningOriginTests {
    @Test func onlyRequestsToTheEndpointAreSigned() throws {
        let address = try BucketAddress(bucket: "media", prefix: "", region: "us-east-1",
                                        endpoint: URL(string: "http://127.0.0.1:9000")!, pathStyle: true)
        let signer = SigV4Signer(credentials: AWSCredentials(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "secret", sessionToken: "tok"),
                                 region: "us-east-1")
        let dialect = S3Dialect(signer: signer, address: address)
        let date = Date(timeIntervalSince1970: 1_700_000_000)
        let own = dialect.authorizationHeaders(method: "GET", url: URL(string: "http://127.0.0.1:9000/media/a.bin")!, date: date)
        #expect(own["Authorization"] != nil && own["x-amz-security-token"] == "tok")
        for elsewhere in ["http://127.0.0.2:9000/media/a.bin", "http://127.0.0.1:9001/media/a.bin", "https://127.0.0.1:9000/media/a.bin"] {
            #expect(dialect.authorizationHeaders(method: "GET", url: URL(string: elsewhere)!, date: date).isEmpty, "\(elsewhere)")
        }
    }
}
