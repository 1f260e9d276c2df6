import Foundation
import Testing
@testable import RangeFSCore

/// Where a bucket's objects, prefixes and listing pages are, in path and virtual-hosted
/// style, and the way back from a URL to its key; the If-Match rule of a range reply.
@Suite("Bucket address")
struct BucketAddressTests {
    static let local = URL(string: "http://127.0.0.1:9000")!

    @Test func pathStylePutsTheBucketInThePath() throws {
        let address = try BucketAddress(bucket: "media", prefix: "music", region: "us-east-1", endpoint: Self.local, pathStyle: true)
        #expect(address.prefix == "music/")
        #expect(address.rootURL.absoluteString == "http://127.0.0.1:9000/media/music/")
        #expect(address.objectURL(key: "music/a b+c é~.mp3").absoluteString == "http://127.0.0.1:9000/media/music/a%20b%2Bc%20%C3%A9~.mp3")
        #expect(address.displayName == "s3://media/music/")
    }

    @Test func virtualHostedStyleIsAWSsDefault() throws {
        let address = try BucketAddress(bucket: "media", prefix: "", region: "eu-central-1")
        #expect(address.rootURL.absoluteString == "https://media.s3.eu-central-1.amazonaws.com/")
        #expect(address.objectURL(key: "a/b.txt").absoluteString == "https://media.s3.eu-central-1.amazonaws.com/a/b.txt")
        let custom = try BucketAddress(bucket: "media", prefix: "", region: "auto", endpoint: URL(string: "https://example.r2.cloudflarestorage.com")!)
        #expect(custom.rootURL.absoluteString == "https://media.example.r2.cloudflarestorage.com/")
    }

    @Test func aBucketWithADotGoesInThePathEvenOnAWS() throws {
        let address = try BucketAddress(bucket: "my.media", prefix: "", region: "us-east-1")
        #expect(address.rootURL.absoluteString == "https://s3.us-east-1.amazonaws.com/my.media/")
    }

    @Test(arguments: ["plain.txt", "with space/and+plus.txt", "日本語/ファイル.txt", "a=b&c?.txt", "percent%20kept.txt", "dir/"])
    func aKeyComesBackFromItsURL(key: String) throws {
        for pathStyle in [true, false] {
            let address = try BucketAddress(bucket: "media", prefix: "", region: "us-east-1", endpoint: Self.local, pathStyle: pathStyle)
            #expect(address.key(of: address.objectURL(key: key)) == key)
        }
    }

    @Test func aURLOfAnotherBucketHasNoKey() throws {
        let address = try BucketAddress(bucket: "media", prefix: "", region: "us-east-1", endpoint: Self.local, pathStyle: true)
        #expect(address.key(of: URL(string: "http://127.0.0.1:9000/other/a.txt")!) == nil)
        #expect(address.key(of: URL(string: "http://127.0.0.1:9001/media/a.txt")!) == nil)
    }

    @Test func aListingPageAsksOneLevelWithEncodedKeys() throws {
        let address = try BucketAddress(bucket: "media", prefix: "", region: "us-east-1", endpoint: Self.local, pathStyle: true)
        let first = address.listingURL(prefix: "a b/", continuationToken: nil)
        #expect(first.absoluteString == "http://127.0.0.1:9000/media/?list-type=2&delimiter=%2F&encoding-type=url&prefix=a%20b%2F")
        let next = address.listingURL(prefix: "", continuationToken: "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=")
        #expect(next.absoluteString.hasSuffix("&prefix=&continuation-token=1ueGcxLPRx1Tr%2FXYExHnhbYLgveDs2J%2Fwm36Hy4vbOwM%3D"))
        let items = URLComponents(url: next, resolvingAgainstBaseURL: false)?.queryItems ?? []
        #expect(items.first { $0.name == "continuation-token" }?.value == "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=")
    }

    @Test func s3AddressesAreRead() throws {
        #expect(try BucketAddress.parse(s3URL: "s3://media/") == ("media", ""))
        #expect(try BucketAddress.parse(s3URL: "s3://media") == ("media", ""))
        #expect(try BucketAddress.parse(s3URL: "S3://media/music/2024/") == ("media", "music/2024/"))
        #expect(throws: BucketAddressError.self) { try BucketAddress.parse(s3URL: "s3:///music/") }
        #expect(throws: BucketAddressError.self) { try BucketAddress.parse(s3URL: "http://media/") }
    }

    @Test(arguments: ["ab", "Media", "-media", "media-", "me dia", String(repeating: "a", count: 64), "médias"])
    func badBucketNamesAreRefused(name: String) {
        #expect(throws: BucketAddressError.self) { try BucketAddress(bucket: name, prefix: "", region: "us-east-1") }
    }

    @Test(arguments: ["ftp://127.0.0.1:9000", "http://127.0.0.1:9000/path", "http://127.0.0.1:9000?x=1"])
    func badEndpointsAreRefused(endpoint: String) {
        #expect(throws: BucketAddressError.self) {
            try BucketAddress(bucket: "media", prefix: "", region: "us-east-1", endpoint: URL(string: endpoint)!, pathStyle: true)
        }
    }

    /// S3 answers `412` to `If-Match` once the object changed: that is a change, not a failure to retry.
    @Test func a412ToIfMatchIsAChange() {
        let request = RangeRequest(url: Self.local, headers: [:], range: 0..<10, expectedSize: 100,
                                   validator: RemoteValidator(etag: "\"abc\"", lastModified: nil))
        let reply = ResponseFacts(status: 412, headers: [], contentLength: 0, redirected: false)
        guard case .changed = ResponseCheck.range(reply, for: request, condition: .ifMatch) else {
            Issue.record("412 to If-Match must be a change")
            return
        }
        #expect(ResponseCheck.range(reply, for: request, condition: .ifRange) == .status(412))
    }
}
