import Foundation
import Testing
@testable import RangeFSCore

/// The verdicts on replies that decide whether a body may fill the cache.
@Suite struct ResponseCheckTests {
    static let url = URL(string: "http://127.0.0.1:1/file.bin")!
    static let validator = RemoteValidator(etag: "\"v1\"", lastModified: nil)

    static func request(_ range: Range<UInt64>, size: UInt64 = 1000, wholeBody: Bool = false) -> RangeRequest {
        RangeRequest(url: url, headers: [:], range: range, expectedSize: size, validator: validator, wholeBody: wholeBody)
    }

    static func reply(_ status: Int, _ headers: [(String, String)], length: UInt64? = nil,
                      redirected: Bool = false) -> ResponseFacts {
        ResponseFacts(status: status, headers: headers.map { ($0.0.lowercased(), $0.1) }, contentLength: length,
                      redirected: redirected)
    }

    @Test func rightRangeIsAccepted() {
        let facts = Self.reply(206, [("Content-Range", "bytes 100-199/1000"), ("ETag", "\"v1\"")], length: 100)
        #expect(ResponseCheck.range(facts, for: Self.request(100..<200)) == nil)
    }

    @Test(arguments: ["gzip", "br", "deflate", "identity, gzip", "x-gzip"])
    func encodedRangeIsRefused(coding: String) {
        let facts = Self.reply(206, [("Content-Range", "bytes 0-99/1000"), ("Content-Encoding", coding)], length: 60)
        guard case .protocolViolation(let why) = ResponseCheck.range(facts, for: Self.request(0..<100)) else {
            Issue.record("Content-Encoding: \(coding) was accepted")
            return
        }
        #expect(why.contains("Content-Encoding: \(coding)"))
    }

    @Test("a PROPFIND's document is its 207 Multi-Status; a 200 (a page, not a multistatus) is refused, a GET's 200 taken")
    func propfindWantsMultiStatus() {
        let propfind = DocumentRequest(url: Self.url, method: .propfind(body: "<x/>"), maxBytes: 1 << 20)
        let get = DocumentRequest(url: Self.url, maxBytes: 1 << 20)
        #expect(ResponseCheck.document(Self.reply(207, [], length: 10), for: propfind) == nil)
        #expect(ResponseCheck.document(Self.reply(200, [], length: 10), for: propfind) == .status(200, retryAfter: nil))
        #expect(ResponseCheck.document(Self.reply(200, [], length: 10), for: get) == nil)
        #expect(ResponseCheck.document(Self.reply(207, [], length: 10), for: get) == .status(207, retryAfter: nil))
        #expect(ResponseCheck.document(Self.reply(207, [], length: 2 << 20), for: propfind) != nil, "the cap holds")
    }

    @Test func identityEncodingIsAccepted() {
        let facts = Self.reply(206, [("Content-Range", "bytes 0-99/1000"), ("Content-Encoding", "Identity")], length: 100)
        #expect(ResponseCheck.range(facts, for: Self.request(0..<100)) == nil)
    }

    @Test(arguments: [("gzip, chunked", false), ("chunked", true), ("Chunked", true), ("deflate", false)])
    func transferCodingsOtherThanChunkedAreRefused(coding: String, accepted: Bool) {
        let facts = Self.reply(206, [("Content-Range", "bytes 0-99/1000"), ("Transfer-Encoding", coding)])
        #expect((ResponseCheck.range(facts, for: Self.request(0..<100)) == nil) == accepted)
    }

    @Test(arguments: [UInt64(99), 101, 0, 1000])
    func lengthDisagreeingWithContentRangeIsRefused(length: UInt64) {
        let facts = Self.reply(206, [("Content-Range", "bytes 0-99/1000")], length: length)
        guard case .protocolViolation = ResponseCheck.range(facts, for: Self.request(0..<100)) else {
            Issue.record("Content-Length \(length) for 100 bytes was accepted")
            return
        }
    }

    @Test func wholeBodyEncodedIsRefusedBeforeItsLengthIsTakenForAChange() {
        let facts = Self.reply(200, [("Content-Encoding", "gzip"), ("ETag", "\"v1\"")], length: 400)
        guard case .protocolViolation = ResponseCheck.range(facts, for: Self.request(0..<1000, wholeBody: true)) else {
            Issue.record("an encoded whole body was not refused as encoded")
            return
        }
    }

    @Test func otherValidatorIsAChangeWhereItCameFromAndMaybeAMirrorBehindARedirect() {
        let other = [("Content-Range", "bytes 0-99/1000"), ("ETag", "\"v2\"")]
        #expect(ResponseCheck.range(Self.reply(206, other, length: 100), for: Self.request(0..<100))
            == .changed("ETag was \"v1\", now \"v2\""))
        #expect(ResponseCheck.range(Self.reply(206, other, length: 100, redirected: true), for: Self.request(0..<100))
            == .servedElsewhere("ETag was \"v1\", now \"v2\""))
        // If-Range did not match there: the whole body of another copy.
        #expect(ResponseCheck.range(Self.reply(200, [("ETag", "\"v2\"")], length: 1000, redirected: true), for: Self.request(0..<100))
            == .servedElsewhere("ETag was \"v1\", now \"v2\""))
    }

    @Test func wholeBodyOfTheSameVersionToIfRangeIsAConditionNotHonouredNotIgnoredRanges() {
        let same = Self.reply(200, [("ETag", "\"v1\"")], length: 1000)
        #expect(ResponseCheck.range(same, for: Self.request(0..<100)) == .conditionNotHonoured)
        var plain = Self.request(0..<100)
        plain.conditional = false
        #expect(ResponseCheck.range(same, for: plain) == .rangesNotSupported)
        // S3's If-Match answered with the whole object says nothing of ranges either.
        #expect(ResponseCheck.range(same, for: Self.request(0..<100), condition: .ifMatch) == .conditionNotHonoured)
    }

    @Test func weakETagGoesNowhereNearIfRangeAndAWeakDateNeither() {
        let weak = RemoteValidator(etag: "W/\"4e20-1\"", lastModified: "Sun, 29 Nov 2026 05:00:00 GMT")
        #expect(weak.ifRangeValue == nil)
        var strongDate = weak
        strongDate.lastModifiedIsStrong = true
        #expect(strongDate.ifRangeValue == nil, "nor the date beside a weak ETag")
        strongDate.etag = nil
        #expect(strongDate.ifRangeValue == "Sun, 29 Nov 2026 05:00:00 GMT", "a strong date alone")
        #expect(RemoteValidator(etag: "\"4e20-1\"", lastModified: nil).ifRangeValue == "\"4e20-1\"")
        var request = Self.request(0..<100)
        request.validator = weak
        #expect(request.conditionHeader(.ifRange) == nil)
        // Sent without If-Range, a 200 of the same version is a plain range request ignored.
        #expect(ResponseCheck.range(Self.reply(200, [("ETag", "\"4e20-1\"")], length: 1000), for: request) == .rangesNotSupported)
    }

    @Test(arguments: [("Sun, 29 Nov 2026 05:00:00 GMT", "Sun, 29 Nov 2026 05:00:01 GMT", true),
                      ("Sun, 29 Nov 2026 05:00:00 GMT", "Sun, 29 Nov 2026 05:00:00 GMT", false),
                      ("Sun, 29 Nov 2026 05:00:05 GMT", "Sun, 29 Nov 2026 05:00:00 GMT", false)])
    func aDateIsStrongOnlyASecondBeforeTheReply(lastModified: String, date: String, strong: Bool) {
        let facts = Self.reply(206, [("Last-Modified", lastModified), ("Date", date)])
        #expect(facts.validator.lastModifiedIsStrong == strong)
        #expect(Self.reply(206, [("Last-Modified", lastModified)]).validator.lastModifiedIsStrong == false, "no Date: cannot be told")
    }

    @Test func weakAndStrongETagsOfOneOpaqueTagAreOneVersion() {
        var request = Self.request(0..<100)
        request.validator = RemoteValidator(etag: "W/\"4e20-1\"", lastModified: nil)
        let strong = Self.reply(206, [("Content-Range", "bytes 0-99/1000"), ("ETag", "\"4e20-1\"")], length: 100)
        #expect(ResponseCheck.range(strong, for: request) == nil, "W/\"x\" then \"x\" was taken as a change")
        let other = Self.reply(206, [("Content-Range", "bytes 0-99/1000"), ("ETag", "\"4e20-2\"")], length: 100)
        #expect(ResponseCheck.range(other, for: request) == .changed("ETag was W/\"4e20-1\", now \"4e20-2\""))
        #expect(ResponseCheck.versionChange(from: RemoteValidator(etag: "\"x\"", lastModified: nil),
                                            to: RemoteValidator(etag: "W/\"x\"", lastModified: nil)) == nil)
    }

    @Test func aDateOnlyValidatorIsComparedOnPartialReplies() {
        var request = Self.request(0..<100)
        request.validator = RemoteValidator(etag: nil, lastModified: "Sun, 29 Nov 2026 05:00:00 GMT")
        let later = Self.reply(206, [("Content-Range", "bytes 0-99/1000"), ("Last-Modified", "Sun, 29 Nov 2026 05:00:09 GMT")], length: 100)
        #expect(ResponseCheck.range(later, for: request)
            == .changed("Last-Modified was Sun, 29 Nov 2026 05:00:00 GMT, now Sun, 29 Nov 2026 05:00:09 GMT"))
    }

    @Test func probeOfAnEncodedReplyTrustsNoLength() {
        let head = Self.reply(200, [("Content-Encoding", "gzip")], length: 321)
        guard case .failure(.protocolViolation) = ResponseCheck.probedSize(head, firstByte: false) else {
            Issue.record("the length of a gzip-encoded HEAD was taken as the file's size")
            return
        }
        #expect(ResponseCheck.probedSize(Self.reply(200, [], length: 321), firstByte: false) == .success(321))
        #expect(ResponseCheck.probedSize(Self.reply(206, [("Content-Range", "bytes 0-0/5000")], length: 1), firstByte: true) == .success(5000))
        #expect(ResponseCheck.probedSize(Self.reply(416, [("Content-Range", "bytes */0")]), firstByte: true) == .success(0))
    }
}

/// Which place a file's ranges come from, and when a fresh answer means a new version.
@Suite struct FetchSourceTests {
    static let origin = URL(string: "http://origin.test/f.bin")!
    static let mirrorA = URL(string: "http://a.test/f.bin")!
    static let mirrorB = URL(string: "http://b.test/f.bin")!
    static let tagA = RemoteValidator(etag: "\"a\"", lastModified: nil)
    static let tagB = RemoteValidator(etag: "\"b\"", lastModified: nil)

    static func info(size: UInt64 = 100, _ validator: RemoteValidator, from url: URL?) -> RemoteFileInfo {
        RemoteFileInfo(size: size, validator: validator, modified: nil, finalURL: url)
    }

    @Test func sameMirrorSameValidatorIsTheSameVersion() {
        let source = FetchSource(location: Self.mirrorA, validator: Self.tagA)
        #expect(source.verdict(on: Self.info(Self.tagA, from: Self.mirrorA), probedURL: Self.origin, origin: Self.origin, size: 100) == .same)
    }

    @Test func anotherMirrorWithTheSameSizeIsAMove() {
        let source = FetchSource(location: Self.mirrorA, validator: Self.tagA)
        #expect(source.verdict(on: Self.info(Self.tagB, from: Self.mirrorB), probedURL: Self.origin, origin: Self.origin, size: 100)
            == .moved(FetchSource(location: Self.mirrorB, validator: Self.tagB)))
        // The manifest URL answers itself again: no location any more.
        #expect(source.verdict(on: Self.info(Self.tagB, from: nil), probedURL: Self.origin, origin: Self.origin, size: 100)
            == .moved(FetchSource(location: nil, validator: Self.tagB)))
    }

    @Test func anotherValidatorAtTheSamePlaceIsAChange() {
        let pinned = FetchSource(location: Self.mirrorA, validator: Self.tagA)
        #expect(pinned.verdict(on: Self.info(Self.tagB, from: Self.mirrorA), probedURL: Self.origin, origin: Self.origin, size: 100)
            == .changed("ETag was \"a\", now \"b\""))
        // Probing the mirror itself (as `verify` does): it answered without a redirect.
        #expect(pinned.verdict(on: Self.info(Self.tagB, from: nil), probedURL: Self.mirrorA, origin: Self.origin, size: 100)
            == .changed("ETag was \"a\", now \"b\""))
        let direct = FetchSource(location: nil, validator: Self.tagA)
        #expect(direct.verdict(on: Self.info(Self.tagB, from: nil), probedURL: Self.origin, origin: Self.origin, size: 100)
            == .changed("ETag was \"a\", now \"b\""))
    }

    @Test func anotherSizeAnywhereIsAChange() {
        let source = FetchSource(location: Self.mirrorA, validator: Self.tagA)
        #expect(source.verdict(on: Self.info(size: 101, Self.tagB, from: Self.mirrorB), probedURL: Self.origin, origin: Self.origin, size: 100)
            == .changed("size was 100, now 101"))
    }

    @Test func headersStayWithTheirOrigin() {
        let headers = ["Authorization": "Bearer x", "Cookie": "c=1", "X-Api-Key": "k"]
        let elsewhere = FetchSource(location: Self.mirrorA, validator: Self.tagA)
        #expect(elsewhere.requestHeaders(headers, origin: Self.origin).isEmpty)
        // Another port or scheme is another origin; a default port written out is the same one.
        for other in ["http://origin.test:8080/f.bin", "https://origin.test/f.bin", "http://ORIGIN.test:80/g.bin"] {
            let sent = FetchSource.headers(headers, sentTo: URL(string: other)!, origin: Self.origin)
            #expect(sent == (other.hasSuffix("g.bin") ? headers : [:]), "\(other)")
        }
        #expect(elsewhere.requestURL(origin: Self.origin) == Self.mirrorA)
        let samePlace = FetchSource(location: URL(string: "http://origin.test/mirror/f.bin")!, validator: Self.tagA)
        #expect(samePlace.requestHeaders(headers, origin: Self.origin) == headers)
        #expect(FetchSource(location: nil, validator: Self.tagA).requestURL(origin: Self.origin) == Self.origin)
    }
}
