import Foundation
import Testing
@testable import RangeFSCore

// Error bodies: moto's, captured (Tests/Fixtures/s3-listings/moto-error-*.xml), and AWS's
// documented shapes for the ones moto never sends (region refusals, expired tokens, throttling).

private let permanentRedirect = """
    <?xml version="1.0" encoding="UTF-8"?>
    <Error><Code>PermanentRedirect</Code><Message>The bucket you are attempting to access must be addressed using the specified endpoint. Please send all future requests to this endpoint.</Message><Endpoint>media.s3.eu-west-1.amazonaws.com</Endpoint><Bucket>media</Bucket><RequestId>0A1B2C3D4E5F6A7B</RequestId><HostId>aG9zdA==</HostId></Error>
    """
private let authorizationHeaderMalformed = """
    <?xml version="1.0" encoding="UTF-8"?>
    <Error><Code>AuthorizationHeaderMalformed</Code><Message>The authorization header is malformed; the region 'us-east-1' is wrong; expecting 'eu-central-1'</Message><Region>eu-central-1</Region><RequestId>531B68B3613F5C96</RequestId><HostId>aG9zdA==</HostId></Error>
    """
private let illegalLocationConstraint = """
    <Error><Code>IllegalLocationConstraintException</Code><Message>The ap-south-1 location constraint is incompatible for the region specific endpoint this request was sent to.</Message><RequestId>R</RequestId><HostId>H</HostId></Error>
    """
private func error(_ code: String, _ message: String) -> String {
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>\(code)</Code><Message>\(message)</Message><RequestId>R</RequestId></Error>"
}

@Suite("S3 buckets: error replies")
struct S3ErrorReplyTests {
    @Test func motosErrorDocumentsAreRead() throws {
        let expected: [(String, S3ErrorReply)] = [
            ("moto-error-no-such-bucket.xml", S3ErrorReply(code: "NoSuchBucket", message: "The specified bucket does not exist", bucketName: "nobucket")),
            ("moto-error-no-such-key.xml", S3ErrorReply(code: "NoSuchKey", message: "The specified key does not exist.", key: "nokey")),
            ("moto-error-access-denied.xml", S3ErrorReply(code: "AccessDenied", message: "Access Denied")),
            ("moto-error-invalid-access-key-id.xml", S3ErrorReply(code: "InvalidAccessKeyId", message: "The AWS Access Key Id you provided does not exist in our records.", bucketName: "media")),
            ("moto-error-signature-does-not-match.xml", S3ErrorReply(code: "SignatureDoesNotMatch", message: "The request signature we calculated does not match the signature you provided. Check your key and signing method.", bucketName: "media")),
        ]
        for (file, want) in expected {
            var reply = try #require(S3ErrorReply.parse(try s3Fixture(file)), "\(file)")
            #expect(reply.requestID?.isEmpty == false, "\(file)")
            reply.requestID = nil
            #expect(reply == want, "\(file)")
        }
    }

    @Test func awsRegionRefusalsNameTheRegion() throws {
        let redirect = try #require(S3ErrorReply.parse(Data(permanentRedirect.utf8)))
        #expect(redirect.endpoint == "media.s3.eu-west-1.amazonaws.com")
        #expect(redirect.bucketName == "media")
        #expect(redirect.statedRegion == "eu-west-1")
        let malformed = try #require(S3ErrorReply.parse(Data(authorizationHeaderMalformed.utf8)))
        #expect(malformed.region == "eu-central-1")
        #expect(malformed.statedRegion == "eu-central-1")
        let withoutElement = try #require(S3ErrorReply.parse(Data(error("AuthorizationHeaderMalformed", "the region 'us-east-1' is wrong; expecting 'eu-north-1'").utf8)))
        #expect(withoutElement.statedRegion == "eu-north-1")
        let constraint = try #require(S3ErrorReply.parse(Data(illegalLocationConstraint.utf8)))
        #expect(constraint.statedRegion == "ap-south-1")
    }

    @Test func endpointsTellTheirRegion() {
        let cases: [(String, String?)] = [
            ("media.s3.eu-west-1.amazonaws.com", "eu-west-1"), ("s3.eu-west-1.amazonaws.com", "eu-west-1"),
            ("media.s3-eu-west-1.amazonaws.com", "eu-west-1"), ("s3.amazonaws.com", "us-east-1"),
            ("media.s3.amazonaws.com", "us-east-1"), ("s3.cn-north-1.amazonaws.com.cn", "cn-north-1"),
            ("minio.example.org", nil), ("s3.amazonaws.com.evil.example", nil), ("", nil),
        ]
        for (endpoint, region) in cases {
            #expect(S3ErrorReply.region(inEndpoint: endpoint) == region, "\(endpoint)")
        }
    }

    @Test func aBodyThatIsNoS3ErrorDocumentIsNil() throws {
        let bodies = [
            "", "Internal Server Error", "<html><body><h1>502 Bad Gateway</h1></body></html>",
            "<Error><Message>no code</Message></Error>", "<Error><Code>  </Code></Error>",
            "<Error><Code>Unclosed", String(decoding: try s3Fixture("moto-top-url.xml"), as: UTF8.self),
        ]
        for body in bodies {
            #expect(S3ErrorReply.parse(Data(body.utf8)) == nil, "\(body.prefix(40))")
        }
    }
}

/// One error reply and what the user must be told.
struct ErrorCase: CustomTestStringConvertible, Sendable {
    var name: String
    var status: Int
    var body: String?
    var header: String?
    var operation: S3FailedRequest.Operation = .listing(prefix: "photos/")
    var isSigned = true
    var kind: S3Failure.Kind
    var sentence: String
    var testDescription: String { name }
}

private func moto(_ file: String) -> String {
    (try? String(decoding: s3Fixture(file), as: UTF8.self)) ?? "missing fixture \(file)"
}

private let errorCases: [ErrorCase] = [
    ErrorCase(name: "unknown access key", status: 403, body: moto("moto-error-invalid-access-key-id.xml"), kind: .unknownAccessKey,
              sentence: "s3://media/photos/: the server does not know this access key ID (InvalidAccessKeyId); check AWS_ACCESS_KEY_ID, or aws_access_key_id in the profile used (--profile, AWS_PROFILE)"),
    ErrorCase(name: "wrong secret key", status: 403, body: moto("moto-error-signature-does-not-match.xml"), kind: .wrongSecretKey,
              sentence: "s3://media/photos/: the request's signature does not match (SignatureDoesNotMatch): the secret access key is not the one of this access key ID; check AWS_SECRET_ACCESS_KEY, or aws_secret_access_key in the profile used"),
    ErrorCase(name: "denied listing", status: 403, body: moto("moto-error-access-denied.xml"), kind: .accessDenied,
              sentence: "s3://media/photos/: access denied to listing this prefix (AccessDenied); the credentials need s3:ListBucket on bucket 'media' for prefix 'photos/', or mount a prefix they may list"),
    ErrorCase(name: "denied listing of the top", status: 403, body: moto("moto-error-access-denied.xml"), operation: .listing(prefix: ""),
              kind: .accessDenied, sentence: "s3://media/: access denied to listing this prefix (AccessDenied); the credentials need s3:ListBucket on bucket 'media', or mount a prefix they may list"),
    ErrorCase(name: "denied listing, anonymous", status: 403, body: moto("moto-error-access-denied.xml"), isSigned: false, kind: .accessDenied,
              sentence: "s3://media/photos/: access denied to listing this prefix without credentials (AccessDenied): the bucket is not public; mount without --no-sign-request to sign with AWS credentials"),
    ErrorCase(name: "denied read", status: 403, body: moto("moto-error-access-denied.xml"), operation: .reading(key: "photos/cat.jpg"),
              kind: .accessDenied, sentence: "s3://media/photos/cat.jpg: access denied to reading this object (AccessDenied); the credentials need s3:GetObject on it"),
    ErrorCase(name: "denied read, anonymous", status: 403, body: moto("moto-error-access-denied.xml"), operation: .reading(key: "photos/cat.jpg"),
              isSigned: false, kind: .accessDenied, sentence: "s3://media/photos/cat.jpg: access denied to reading this object without credentials (AccessDenied): it is not public; mount without --no-sign-request to sign with AWS credentials"),
    ErrorCase(name: "denied HEAD without a body", status: 403, body: nil, operation: .reading(key: "a"), kind: .accessDenied,
              sentence: "s3://media/a: access denied to reading this object (HTTP 403); the credentials need s3:GetObject on it"),
    ErrorCase(name: "missing bucket", status: 404, body: moto("moto-error-no-such-bucket.xml"), kind: .noSuchBucket,
              sentence: "s3://media/photos/: there is no bucket 'media' (NoSuchBucket); check the name, and --endpoint for a server other than AWS"),
    ErrorCase(name: "missing key", status: 404, body: moto("moto-error-no-such-key.xml"), operation: .reading(key: "photos/cat.jpg"), kind: .noSuchKey,
              sentence: "s3://media/photos/cat.jpg: the object no longer exists (NoSuchKey); it was deleted or renamed after it was listed"),
    ErrorCase(name: "missing key, HEAD", status: 404, body: nil, operation: .reading(key: "x"), kind: .noSuchKey,
              sentence: "s3://media/x: the object no longer exists (HTTP 404); it was deleted or renamed after it was listed"),
    ErrorCase(name: "permanent redirect", status: 301, body: permanentRedirect, header: "eu-west-1", kind: .wrongRegion("eu-west-1"),
              sentence: "s3://media/photos/: bucket 'media' is in region eu-west-1, not us-east-1 (PermanentRedirect); mount with --region eu-west-1"),
    ErrorCase(name: "redirect of a HEAD, region in the header", status: 301, body: nil, header: "ap-southeast-2", kind: .wrongRegion("ap-southeast-2"),
              sentence: "s3://media/photos/: bucket 'media' is in region ap-southeast-2, not us-east-1 (HTTP 301); mount with --region ap-southeast-2"),
    ErrorCase(name: "redirect naming no region", status: 301, body: error("PermanentRedirect", "The bucket you are attempting to access must be addressed using the specified endpoint."),
              kind: .wrongRegion(nil), sentence: "s3://media/photos/: bucket 'media' is not in region us-east-1 (PermanentRedirect) and the server did not say which region it is in; give it with --region"),
    ErrorCase(name: "signed for the wrong region", status: 400, body: authorizationHeaderMalformed, kind: .wrongRegion("eu-central-1"),
              sentence: "s3://media/photos/: bucket 'media' is in region eu-central-1, not us-east-1 (AuthorizationHeaderMalformed); mount with --region eu-central-1"),
    ErrorCase(name: "a malformed header that is no region matter", status: 400,
              body: error("AuthorizationHeaderMalformed", "The authorization header is malformed; a non-empty Access Key (AKID) must be provided in the credential."),
              kind: .other, sentence: "s3://media/photos/: the server refused the request: HTTP 400, AuthorizationHeaderMalformed (The authorization header is malformed; a non-empty Access Key (AKID) must be provided in the credential.)"),
    ErrorCase(name: "location constraint", status: 400, body: illegalLocationConstraint, kind: .wrongRegion("ap-south-1"),
              sentence: "s3://media/photos/: bucket 'media' is in region ap-south-1, not us-east-1 (IllegalLocationConstraintException); mount with --region ap-south-1"),
    ErrorCase(name: "expired token", status: 400, body: error("ExpiredToken", "The provided token has expired."), kind: .badSessionToken,
              sentence: "s3://media/photos/: the session token is expired or not valid (ExpiredToken); get new temporary credentials (AWS_SESSION_TOKEN, or aws_session_token in the profile) and mount again"),
    ErrorCase(name: "clock skew", status: 403, body: error("RequestTimeTooSkewed", "The difference between the request time and the current time is too large."),
              kind: .clockSkew, sentence: "s3://media/photos/: this machine's clock is too far from the server's (RequestTimeTooSkewed); set the clock right (NTP, timedatectl) and try again"),
    ErrorCase(name: "archived", status: 403, body: error("InvalidObjectState", "The operation is not valid for the object's storage class"),
              operation: .reading(key: "old.tar"), kind: .archived,
              sentence: "s3://media/old.tar: the object is archived (InvalidObjectState) and must be restored (S3 RestoreObject) before it can be read"),
    ErrorCase(name: "throttled", status: 503, body: error("SlowDown", "Please reduce your request rate."), kind: .transient,
              sentence: "s3://media/photos/: the server is busy or failing for now (SlowDown); trying again later should work"),
    ErrorCase(name: "internal error", status: 500, body: error("InternalError", "We encountered an internal error. Please try again."), kind: .transient,
              sentence: "s3://media/photos/: the server is busy or failing for now (InternalError); trying again later should work"),
    ErrorCase(name: "unavailable", status: 503, body: error("ServiceUnavailable", "Service is unable to handle request."), kind: .transient,
              sentence: "s3://media/photos/: the server is busy or failing for now (ServiceUnavailable); trying again later should work"),
    ErrorCase(name: "a proxy's 502 page", status: 502, body: "<html><body>Bad Gateway</body></html>", kind: .transient,
              sentence: "s3://media/photos/: the server is busy or failing for now (HTTP 502); trying again later should work"),
    ErrorCase(name: "any other code", status: 400, body: error("InvalidArgument", "Invalid Argument"), kind: .other,
              sentence: "s3://media/photos/: the server refused the request: HTTP 400, InvalidArgument (Invalid Argument)"),
    ErrorCase(name: "no document at all", status: 418, body: nil, kind: .other,
              sentence: "s3://media/photos/: the server refused the request: HTTP 418 without an S3 error document"),
]

@Suite("S3 buckets: what to tell the user")
struct S3FailureExplanationTests {
    @Test(arguments: errorCases)
    func eachErrorGetsOneSentenceToActOn(case c: ErrorCase) {
        let reply = c.body.flatMap { S3ErrorReply.parse(Data($0.utf8)) }
        if let body = c.body, body.contains("<Code>") {
            #expect(reply != nil, "the body did not parse")
        }
        let request = S3FailedRequest(bucket: "media", operation: c.operation, region: "us-east-1", isSigned: c.isSigned)
        let failure = S3Failure.explain(status: c.status, reply: reply, bucketRegionHeader: c.header, request: request)
        #expect(failure.kind == c.kind)
        #expect(failure.sentence == c.sentence)
        #expect(failure.isTransient == (c.kind == .transient))
    }

    @Test func aRedirectWithinTheSameRegionPointsAtTheEndpoint() throws {
        let body = error("PermanentRedirect", "Use the endpoint.").replacingOccurrences(of: "<RequestId>", with: "<Endpoint>media.s3.amazonaws.com</Endpoint><RequestId>")
        let request = S3FailedRequest(bucket: "media", operation: .listing(prefix: ""), region: "us-east-1", isSigned: true)
        let failure = S3Failure.explain(status: 301, reply: S3ErrorReply.parse(Data(body.utf8)), bucketRegionHeader: nil, request: request)
        #expect(failure.kind == .wrongRegion("us-east-1"))
        #expect(failure.sentence == "s3://media/: the server sends this bucket's requests elsewhere (to 'media.s3.amazonaws.com') (PermanentRedirect); check --endpoint and --path-style")
    }

    @Test func controlCharactersInAReplyNeverReachTheLogRaw() throws {
        let body = error("Weird", "line one&#10;line two&#9;end")
        let failure = S3Failure.explain(status: 400, reply: S3ErrorReply.parse(Data(body.utf8)), bucketRegionHeader: nil,
                                        request: S3FailedRequest(bucket: "media", operation: .listing(prefix: ""), region: "us-east-1", isSigned: true))
        #expect(!failure.sentence.unicodeScalars.contains { $0.value < 0x20 })
        #expect(failure.sentence.contains("line one\\x0Aline two\\x09end"))
    }
}
