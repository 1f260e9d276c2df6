import Foundation
import Testing
@testable import RangeFSCore

// ListObjectsV2 replies captured from moto's server and taken from AWS's documentation, kept in
// Tests/Fixtures/s3-listings (its README says how each was made). The keys, prefixes, tokens and
// counts expected of each are also what botocore's own parser (with its url decoding) reads
// from the same files.

let s3Fixtures = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fixtures/s3-listings")

func s3Fixture(_ name: String) throws -> Data {
    try Data(contentsOf: s3Fixtures.appendingPathComponent(name))
}

/// What one fixture must read as.
struct ExpectedListing: CustomTestStringConvertible, Sendable {
    var file: String
    var bucket: String?
    var prefix: String
    var delimiter: String? = "/"
    var startAfter: String?
    var keys: [String]
    var commonPrefixes: [String] = []
    var nextContinuationToken: String?
    var keyCount: Int?
    var wasURLEncoded: Bool
    var testDescription: String { file }
}

/// The keys put into moto's `media` bucket under `photos/`, decoded, in S3's order.
let motoPhotoKeys = [
    "photos/", "photos/amp&lt.jpg", "photos/cat.jpg", "photos/clash", "photos/it's \"quoted\" <angle>.jpg",
    "photos/percent%41.jpg", "photos/plus+sign.jpg", "photos/question?.jpg", "photos/tilde~.jpg",
    "photos/with space.jpg", "photos/ünïcödé-日本.jpg",
]
let motoPhotoPrefixes = ["photos/../", "photos/./", "photos/2024/", "photos/a/", "photos/clash/"]

private let goodReplies: [ExpectedListing] = [
    ExpectedListing(file: "moto-photos-url.xml", bucket: "media", prefix: "photos/", keys: motoPhotoKeys,
                    commonPrefixes: motoPhotoPrefixes, keyCount: 16, wasURLEncoded: true),
    ExpectedListing(file: "moto-photos-plain.xml", bucket: "media", prefix: "photos/", keys: motoPhotoKeys,
                    commonPrefixes: motoPhotoPrefixes, keyCount: 16, wasURLEncoded: false),
    ExpectedListing(file: "moto-top-url.xml", bucket: "media", prefix: "", keys: ["readme.txt"],
                    commonPrefixes: ["photos/", "sub dir/"], keyCount: 3, wasURLEncoded: true),
    // moto writes a space as %20 and a + as %2B, in keys and in prefixes alike.
    ExpectedListing(file: "moto-sub-dir-url.xml", bucket: "media", prefix: "sub dir/", keys: ["sub dir/a b+c.txt"],
                    commonPrefixes: ["sub dir/plus+dir/", "sub dir/ü/"], keyCount: 3, wasURLEncoded: true),
    ExpectedListing(file: "moto-empty-segment-url.xml", bucket: "media", prefix: "photos/a/", keys: [],
                    commonPrefixes: ["photos/a//"], keyCount: 1, wasURLEncoded: true),
    ExpectedListing(file: "moto-pages-1.xml", bucket: "many", prefix: "dir/", keys: ["dir/file-00.bin", "dir/file-01.bin"],
                    nextContinuationToken: "67bb965588ddecdbf63de5582eb3dd44", keyCount: 2, wasURLEncoded: true),
    ExpectedListing(file: "moto-pages-2.xml", bucket: "many", prefix: "dir/", keys: ["dir/file-02.bin", "dir/file-03.bin"],
                    nextContinuationToken: "47536d82a281d21925828f951a64fe59", keyCount: 2, wasURLEncoded: true),
    ExpectedListing(file: "moto-pages-3.xml", bucket: "many", prefix: "dir/", keys: ["dir/file-04.bin"],
                    keyCount: 1, wasURLEncoded: true),
    ExpectedListing(file: "aws-doc-continuation.xml", bucket: "bucket", prefix: "", delimiter: nil, keys: ["happyface.jpg"],
                    nextContinuationToken: "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=", keyCount: 1000, wasURLEncoded: false),
    ExpectedListing(file: "aws-doc-delimiter.xml", bucket: "example-bucket", prefix: "photos/2006/", keys: ["photos/2006/"],
                    commonPrefixes: ["photos/2006/February/", "photos/2006/January/"], keyCount: 3, wasURLEncoded: false),
    // AWS's spelling: a space as +, a real + as %2B.
    ExpectedListing(file: "aws-style-url-encoded.xml", bucket: "media", prefix: "summer 2024/", startAfter: "summer 2024/a",
                    keys: ["summer 2024/1+1=2.txt", "summer 2024/my beach photo.jpg", "summer 2024/über 日本.mp3"],
                    commonPrefixes: ["summer 2024/new folder/"], keyCount: 4, wasURLEncoded: true),
]

@Suite("S3 buckets: ListObjectsV2 replies")
struct BucketListingTests {
    @Test(arguments: goodReplies)
    func aCapturedReplyReadsAsItsServerMeantIt(expected: ExpectedListing) throws {
        let page = try BucketListingPage.parse(try s3Fixture(expected.file))
        #expect(page.bucket == expected.bucket)
        #expect(page.prefix == expected.prefix)
        #expect(page.delimiter == expected.delimiter)
        #expect(page.startAfter == expected.startAfter)
        #expect(page.objects.map(\.key) == expected.keys)
        #expect(page.commonPrefixes == expected.commonPrefixes)
        #expect(page.isTruncated == (expected.nextContinuationToken != nil))
        #expect(page.nextContinuationToken == expected.nextContinuationToken)
        #expect(page.keyCount == expected.keyCount)
        #expect(page.wasURLEncoded == expected.wasURLEncoded)
    }

    @Test func anObjectKeepsItsSizeETagWithQuotesAndTimeToTheMillisecond() throws {
        let moto = try BucketListingPage.parse(try s3Fixture("moto-photos-url.xml"))
        let cat = try #require(moto.objects.first { $0.key == "photos/cat.jpg" })
        #expect(cat == BucketObject(key: "photos/cat.jpg", size: 14, etag: "\"4e619f5b28df4a9744963e6700abe7ca\"",
                                    lastModified: Date(timeIntervalSince1970: 1_795_523_091)))
        // AWS escapes the quotes as &quot;; they are part of the ETag all the same.
        let aws = try BucketListingPage.parse(try s3Fixture("aws-doc-continuation.xml"))
        #expect(aws.objects == [BucketObject(key: "happyface.jpg", size: 11, etag: "\"70ee1738b6b21e2c8a43f3a5ab0eee71\"",
                                             lastModified: Date(timeIntervalSince1970: 1_416_598_805))])
        let encoded = try BucketListingPage.parse(try s3Fixture("aws-style-url-encoded.xml"))
        let photo = try #require(encoded.objects.first { $0.key.hasSuffix(".jpg") })
        #expect(photo.size == 10_485_760)
        #expect(photo.etag == "\"9a0364b9e99bb480dd25e1f0284c8555-2\"")
        #expect(photo.lastModified == Date(timeIntervalSince1970: 1_719_912_615.25))
    }

    @Test func theSameKeysComeOutOfAnEncodedAndAPlainReply() throws {
        let encoded = try BucketListingPage.parse(try s3Fixture("moto-photos-url.xml"))
        let plain = try BucketListingPage.parse(try s3Fixture("moto-photos-plain.xml"))
        #expect(encoded.objects == plain.objects)
        #expect(encoded.commonPrefixes == plain.commonPrefixes)
    }

    @Test func encodedValuesDecodePlusAsSpaceAndEscapesAsUTF8Bytes() {
        let cases: [(String, String?)] = [
            ("my+file.txt", "my file.txt"), ("1%2B1", "1+1"), ("a%20b", "a b"), ("+%2B+", " + "),
            ("%C3%BCber", "über"), ("%e6%97%a5", "日"), ("a%2Fb", "a/b"), ("%00", "\u{0}"), ("plain", "plain"),
            ("100%", nil), ("%4", nil), ("%ZZ", nil), ("%C3", nil), ("%FF%FE", nil),
        ]
        for (encoded, decoded) in cases {
            #expect(S3URLDecoding.decode(encoded) == decoded, "\(encoded)")
        }
    }

    @Test func withoutEncodingTypeKeysAreTakenAsWrittenSpacesIncluded() throws {
        let page = try parse(listing(contents: "<Contents><Key> a+b%41 </Key><Size>1</Size></Contents><Contents><Key>   </Key><Size>1</Size></Contents>"))
        #expect(page.objects.map(\.key) == [" a+b%41 ", "   "])
        #expect(!page.wasURLEncoded)
    }

    @Test func aPageThatSaysItIsCompleteHasNoTokenEvenIfOneIsWritten() throws {
        let page = try parse(listing(truncated: "false", contents: "<NextContinuationToken>x</NextContinuationToken>"))
        #expect(!page.isTruncated)
        #expect(page.nextContinuationToken == nil)
        // A server that leaves IsTruncated out is taken at its token.
        let untold = try parse(#"<ListBucketResult><NextContinuationToken>t1</NextContinuationToken></ListBucketResult>"#)
        #expect(untold.isTruncated && untold.nextContinuationToken == "t1")
        let done = try parse("<ListBucketResult/>")
        #expect(!done.isTruncated && done.objects.isEmpty && done.prefix == "")
    }

    @Test func everyPageOfAPaginatedListingIsRead() throws {
        let pages = try (1...3).map { try BucketListingPage.parse(try s3Fixture("moto-pages-\($0).xml")) }
        #expect(pages.map(\.isTruncated) == [true, true, false])
        let directory = BucketDirectory(prefix: "dir/", pages: pages)
        #expect(directory.children.map(\.name) == (0...4).map { "file-0\($0).bin" })
        #expect(directory.children.compactMap { if case .file(let file) = $0 { file.size } else { nil } } == [0, 1, 2, 3, 4] as [UInt64])
    }

    @Test(arguments: badReplies)
    func aBadReplyIsRefusedWithItsReason(bad: BadReply) {
        do throws(BucketListingError) {
            let page = try BucketListingPage.parse(Data(bad.body))
            Issue.record("accepted: \(page)")
        } catch {
            #expect(error.kind == bad.kind, "\(error)")
            #expect(error.reason.contains(bad.reason), "\(error.reason)")
        }
    }

    @Test func anErrorDocumentInPlaceOfAListingCarriesTheServersError() throws {
        let body = try s3Fixture("moto-error-no-such-bucket.xml")
        do throws(BucketListingError) {
            _ = try BucketListingPage.parse(body)
            Issue.record("accepted an error document")
        } catch {
            guard case .serverError(let reply) = error.kind else {
                Issue.record("\(error)")
                return
            }
            #expect(reply.code == "NoSuchBucket")
            #expect(error.reason.contains("NoSuchBucket (The specified bucket does not exist)"))
        }
    }

    func parse(_ text: String) throws -> BucketListingPage {
        try BucketListingPage.parse(Data(text.utf8))
    }
}

/// A ListBucketResult around `contents`.
func listing(truncated: String = "false", encoding: String? = nil, contents: String) -> String {
    let encodingType = encoding.map { "<EncodingType>\($0)</EncodingType>" } ?? ""
    return #"<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">"#
        + "<Name>b</Name><Prefix></Prefix><IsTruncated>\(truncated)</IsTruncated>\(encodingType)\(contents)</ListBucketResult>"
}

struct BadReply: CustomTestStringConvertible, Sendable {
    var name: String
    var body: [UInt8]
    var kind: BucketListingError.Kind
    /// A part of the reason that says what is wrong.
    var reason: String
    var testDescription: String { name }

    init(_ name: String, _ body: String, _ kind: BucketListingError.Kind, _ reason: String) {
        self.init(name, Array(body.utf8), kind, reason)
    }

    init(_ name: String, _ body: [UInt8], _ kind: BucketListingError.Kind, _ reason: String) {
        self.name = name
        self.body = body
        self.kind = kind
        self.reason = reason
    }
}

private func object(key: String = "k", size: String = "1", extra: String = "") -> String {
    "<Contents><Key>\(key)</Key><Size>\(size)</Size>\(extra)</Contents>"
}

private let badReplies: [BadReply] = [
    BadReply("empty body", "", .notXML, "not XML"),
    BadReply("plain text", "Service Unavailable", .notXML, "not XML"),
    BadReply("unclosed elements", "<ListBucketResult><Contents><Key>a</Key>", .notXML, "line 1"),
    BadReply("not UTF-8", Array("<ListBucketResult><Contents><Key>".utf8) + [0xFF, 0xFE] + Array("</Key><Size>1</Size></Contents></ListBucketResult>".utf8),
             .notXML, "not UTF-8"),
    BadReply("an entity declaration", #"<!DOCTYPE x [<!ENTITY e "k">]><ListBucketResult><Contents><Key>&e;</Key><Size>1</Size></Contents></ListBucketResult>"#,
             .notXML, "DTD"),
    BadReply("an HTML page", "<html><body>Login</body></html>", .notAListing, "<html>"),
    BadReply("the bucket list", "<ListAllMyBucketsResult><Buckets/></ListAllMyBucketsResult>", .notAListing, "<ListAllMyBucketsResult>"),
    BadReply("a size in letters", listing(contents: object(size: "abc")), .badValue, "Size of 'k' is 'abc'"),
    BadReply("a negative size", listing(contents: object(size: "-1")), .badValue, "'-1', not a whole number"),
    BadReply("a size with a plus", listing(contents: object(size: "+1")), .badValue, "'+1'"),
    BadReply("a fractional size", listing(contents: object(size: "1.5")), .badValue, "'1.5'"),
    BadReply("an empty size", listing(contents: object(size: "")), .badValue, "Size of 'k' is ''"),
    BadReply("a size beyond 64 bits", listing(contents: object(size: "99999999999999999999")), .badValue, "99999999999999999999"),
    BadReply("no size", listing(contents: "<Contents><Key>k</Key></Contents>"), .missingField, "'k' of the listing has no Size"),
    BadReply("no key", listing(contents: object() + "<Contents><Size>1</Size></Contents>"), .missingField, "object 2 of the listing has no Key"),
    BadReply("truncated without a token", listing(truncated: "true", contents: object()), .truncatedWithoutToken, "no NextContinuationToken"),
    BadReply("truncated with an empty token", listing(truncated: "true", contents: "<NextContinuationToken></NextContinuationToken>"),
             .truncatedWithoutToken, "no NextContinuationToken"),
    BadReply("version 1 paging", listing(truncated: "true", contents: object() + "<NextMarker>k</NextMarker>"),
             .truncatedWithoutToken, "ListObjects version 1"),
    BadReply("IsTruncated not a boolean", listing(truncated: "yes", contents: ""), .badValue, "IsTruncated is 'yes'"),
    BadReply("KeyCount not a number", listing(contents: "<KeyCount>many</KeyCount>"), .badValue, "KeyCount is 'many'"),
    BadReply("a time that is not ISO 8601", listing(contents: object(extra: "<LastModified>yesterday</LastModified>")),
             .badValue, "LastModified of 'k' is 'yesterday'"),
    BadReply("an unknown encoding", listing(encoding: "base64", contents: object()), .badEncoding, "EncodingType 'base64'"),
    BadReply("a broken escape in a key", listing(encoding: "url", contents: object(key: "a%ZZ")), .badEncoding, "Key 'a%ZZ'"),
    BadReply("half a UTF-8 character", listing(encoding: "url", contents: object(key: "%C3")), .badEncoding, "Key '%C3'"),
    BadReply("a broken escape in a prefix", listing(encoding: "url", contents: "<CommonPrefixes><Prefix>a%/</Prefix></CommonPrefixes>"),
             .badEncoding, "CommonPrefixes/Prefix 'a%/'"),
]
