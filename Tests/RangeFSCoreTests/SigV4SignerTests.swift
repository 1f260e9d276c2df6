import Foundation
import Testing
@testable import RangeFSCore

// The signer is checked against AWS's published example and against botocore (the signer of
// the AWS CLI and boto3), run once through Tests/Fixtures/sigv4-botocore.py on a table of
// requests. python3 with botocore is required: scripts/install-deps.sh installs it.

/// One request of the table, signed by both.
struct SigningCase: CustomTestStringConvertible, Sendable, Encodable {
    var name: String
    var method = "GET"
    var url: String
    var headers: [String: String] = [:]
    var region = "us-east-1"
    var accessKeyID = "AKIAIOSFODNN7EXAMPLE"
    var secretAccessKey = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    var sessionToken: String? = nil
    var date = "2026-11-24T12:34:56Z"
    var testDescription: String { name }

    func rangeFSHeaders() throws -> (headers: [String: String], canonicalRequest: String) {
        let signer = SigV4Signer(credentials: AWSCredentials(accessKeyID: accessKeyID, secretAccessKey: secretAccessKey,
                                                             sessionToken: sessionToken), region: region)
        let requestURL = try #require(URL(string: url), "\(name): not a URL: \(url)")
        let when = try #require(ISO8601DateFormatter().date(from: date))
        let headers = signer.signatureHeaders(method: method, url: requestURL, headers: headers, date: when)
        let signed = signer.signedRequest(method: method, url: requestURL, headers: self.headers,
                                          payloadHash: SigV4Signer.emptyPayloadHash, date: when)
        return (Dictionary(uniqueKeysWithValues: headers.map { ($0.key.lowercased(), $0.value) }), signed.canonicalRequest)
    }
}

private let signingCases: [SigningCase] = [
    SigningCase(name: "GET path-style on loopback", url: "http://127.0.0.1:9000/media/plain.txt"),
    SigningCase(name: "HEAD virtual-hosted eu-central-1", method: "HEAD",
                url: "https://media.s3.eu-central-1.amazonaws.com/plain.txt", region: "eu-central-1"),
    SigningCase(name: "GET with a port that is not the default", url: "https://media.s3.amazonaws.com:8443/a.txt"),
    SigningCase(name: "https with its default port written out", url: "https://media.s3.amazonaws.com:443/a.txt"),
    SigningCase(name: "http with its default port written out", url: "http://127.0.0.1:80/media/a.txt"),
    SigningCase(name: "upper-case host", url: "https://MEDIA.S3.AmazonAWS.com/a.txt"),
    SigningCase(name: "IPv6 loopback", url: "http://[::1]:9000/media/a.txt"),
    SigningCase(name: "key with spaces, raw", url: "http://127.0.0.1:9000/media/sub dir/with  space.txt"),
    SigningCase(name: "key with spaces, already encoded", url: "http://127.0.0.1:9000/media/sub%20dir/with%20%20space.txt"),
    SigningCase(name: "unicode key, raw", url: "https://media.s3.amazonaws.com/ünïcödé/é-日本.mp3"),
    SigningCase(name: "unicode key, already encoded",
                url: "https://media.s3.amazonaws.com/%C3%BCn%C3%AFc%C3%B6d%C3%A9/%C3%A9-%E6%97%A5%E6%9C%AC.mp3"),
    SigningCase(name: "unicode key, lower-case escapes", url: "https://media.s3.amazonaws.com/%c3%a9-%e6%97%a5.mp3"),
    SigningCase(name: "plus in a key, raw", url: "http://127.0.0.1:9000/media/a+b.mp3"),
    SigningCase(name: "plus in a key, encoded", url: "http://127.0.0.1:9000/media/a%2Bb.mp3"),
    SigningCase(name: "tilde and equals in a key", url: "http://127.0.0.1:9000/media/~x=y.txt"),
    SigningCase(name: "punctuation in a key", url: "http://127.0.0.1:9000/media/it's%20(1)%20!%20@$&,;:*%5B%5D.txt"),
    SigningCase(name: "question mark and hash in a key, encoded", url: "http://127.0.0.1:9000/media/why%3F%23.txt"),
    SigningCase(name: "percent in a key, encoded", url: "http://127.0.0.1:9000/media/100%25.txt"),
    SigningCase(name: "dots and empty segments are not normalized", url: "http://127.0.0.1:9000/media/a//b/./c/../d"),
    SigningCase(name: "bucket root listing, path-style", url: "http://127.0.0.1:9000/media?list-type=2&delimiter=/"),
    SigningCase(name: "ListObjectsV2 with a prefix, raw", url: "http://127.0.0.1:9000/media?list-type=2&prefix=sub dir/&delimiter=/"),
    SigningCase(name: "ListObjectsV2 with a prefix, encoded",
                url: "http://127.0.0.1:9000/media?list-type=2&prefix=sub%20dir%2F&delimiter=%2F"),
    SigningCase(name: "ListObjectsV2 with an empty prefix", url: "https://media.s3.amazonaws.com/?delimiter=/&prefix=&list-type=2"),
    SigningCase(name: "ListObjectsV2 with a unicode prefix, virtual-hosted", url: "https://media.s3.eu-central-1.amazonaws.com/?list-type=2&prefix=日本/é+1/&delimiter=/",
                region: "eu-central-1"),
    SigningCase(name: "continuation token with = and /",
                url: "http://127.0.0.1:9000/media?list-type=2&continuation-token=1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=&prefix=a/&delimiter=/"),
    SigningCase(name: "continuation token with an encoded +",
                url: "http://127.0.0.1:9000/media?list-type=2&continuation-token=ab%2Bcd%2F%3D%3D&delimiter=%2F"),
    SigningCase(name: "prefix with an encoded & and =", url: "http://127.0.0.1:9000/media?list-type=2&prefix=a%26b%3Dc%2F&delimiter=%2F"),
    SigningCase(name: "percent in a key, raw", url: "http://127.0.0.1:9000/media/100%.txt"),
    SigningCase(name: "parameters out of order and repeated", url: "http://127.0.0.1:9000/media?b=2&a=2&a=1&A=3"),
    SigningCase(name: "parameter without a value", url: "https://media.s3.amazonaws.com/?location"),
    SigningCase(name: "session token", url: "https://media.s3.amazonaws.com/a.txt",
                sessionToken: "IQoJb3JpZ2luX2VjEHIaCXVzLWVhc3QtMSJHMEUCIQD/abc+def=="),
    SigningCase(name: "range header", url: "http://127.0.0.1:9000/media/big.bin", headers: ["Range": "bytes=1048576-2097151"]),
    SigningCase(name: "range and If-Match, names in odd case", url: "http://127.0.0.1:9000/media/big.bin",
                headers: ["RANGE": "bytes=0-9", "if-Match": "\"9bb58f26192e4ba00f01e2e7b136bbd8\""]),
    SigningCase(name: "header values with spaces to trim and fold", url: "http://127.0.0.1:9000/media/a.txt",
                headers: ["Range": "  bytes=0-9  ", "X-Custom": "a   b \t c"]),
    // Foundation's URL(string:) encodes the % of %20 too when the text also has raw characters:
    // this path is sent (and signed) as sub%2520dir.
    SigningCase(name: "everything at once, half encoded, eu-central-1", method: "HEAD",
                url: "https://media.s3.eu-central-1.amazonaws.com:4443/sub%20dir/日本 é+~=.flac",
                headers: ["Range": "bytes=0-0", "If-Match": "\"abc\""], region: "eu-central-1",
                accessKeyID: "ASIAEXAMPLE2", secretAccessKey: "other/secret+key=", sessionToken: "token/with+chars=",
                date: "2027-01-01T00:00:00Z"),
    SigningCase(name: "a date just before midnight", url: "http://127.0.0.1:9000/media/a.txt", date: "2026-12-31T23:59:59Z"),
]

/// What botocore made of one request.
struct BotocoreSignature: Decodable {
    var headers: [String: String]
    var canonicalRequest: String
    var stringToSign: String
}

/// botocore's signatures for `signingCases`, by index; computed once for all the tests below.
private let botocoreSignatures: Result<[BotocoreSignature], BotocoreUnavailable> = signWithBotocore(signingCases)

struct BotocoreUnavailable: Error, CustomStringConvertible {
    var description: String
}

private func signWithBotocore(_ cases: [SigningCase]) -> Result<[BotocoreSignature], BotocoreUnavailable> {
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/sigv4-botocore.py")
    let advice = "python3 with botocore is needed to check the signer (scripts/install-deps.sh installs boto3)"
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", script.path]
    let input = Pipe(), output = Pipe()
    let errors = FileManager.default.temporaryDirectory.appendingPathComponent("sigv4-botocore-\(UUID().uuidString).err")
    _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
    defer { try? FileManager.default.removeItem(at: errors) }
    process.standardInput = input
    process.standardOutput = output
    guard let errorHandle = try? FileHandle(forWritingTo: errors) else {
        return .failure(BotocoreUnavailable(description: "cannot write \(errors.path)"))
    }
    process.standardError = errorHandle
    do {
        try process.run()
    } catch {
        return .failure(BotocoreUnavailable(description: "\(advice): cannot start python3: \(error)"))
    }
    // The script answers in well under a second; a hung interpreter must not hang the suite.
    let watchdog = DispatchWorkItem { if process.isRunning { process.terminate() } }
    DispatchQueue.global().asyncAfter(deadline: .now() + 60, execute: watchdog)
    defer { watchdog.cancel() }
    do {
        // botocore gets the URL as Foundation will send it (URL(string:) encodes raw characters).
        let sent = cases.map { request in
            var sent = request
            sent.url = URL(string: request.url)?.absoluteString ?? request.url
            return sent
        }
        try input.fileHandleForWriting.write(contentsOf: JSONEncoder().encode(sent))
        try input.fileHandleForWriting.close()
    } catch {
        process.terminate()
        return .failure(BotocoreUnavailable(description: "\(advice): writing to the script failed: \(error)"))
    }
    let answer = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    try? errorHandle.close()
    let stderrText = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
    guard process.terminationStatus == 0 else {
        return .failure(BotocoreUnavailable(description:
            "\(advice): the script exited with \(process.terminationStatus):\n\(stderrText)"))
    }
    do {
        let signatures = try JSONDecoder().decode([BotocoreSignature].self, from: answer)
        guard signatures.count == cases.count else {
            return .failure(BotocoreUnavailable(description: "botocore answered \(signatures.count) of \(cases.count) requests"))
        }
        return .success(signatures)
    } catch {
        return .failure(BotocoreUnavailable(description: "botocore's answer is not the expected JSON: \(error)"))
    }
}

@Suite("SigV4 signer")
struct SigV4SignerTests {
    /// The GET Object example of "Signature Calculations for the Authorization Header"
    /// (AWS S3 API reference, sig-v4-header-based-auth), with its published values.
    @Test func signsAWSsPublishedGetObjectExample() throws {
        let signer = SigV4Signer(credentials: AWSCredentials(accessKeyID: "AKIAIOSFODNN7EXAMPLE",
                                                             secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
                                 region: "us-east-1")
        let url = try #require(URL(string: "https://examplebucket.s3.amazonaws.com/test.txt"))
        let date = Date(timeIntervalSince1970: 1_369_353_600) // 2013-05-24T00:00:00Z
        let headers = signer.signatureHeaders(method: "GET", url: url, headers: ["Range": "bytes=0-9"], date: date)
        #expect(headers["Authorization"] == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            + "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
            + "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
        #expect(headers["x-amz-date"] == "20130524T000000Z")
        #expect(headers["x-amz-content-sha256"] == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(headers["x-amz-security-token"] == nil)
        #expect(headers.count == 3)
        let signed = signer.signedRequest(method: "GET", url: url, headers: ["Range": "bytes=0-9"],
                                          payloadHash: SigV4Signer.emptyPayloadHash, date: date)
        #expect(signed.stringToSign == """
            AWS4-HMAC-SHA256
            20130524T000000Z
            20130524/us-east-1/s3/aws4_request
            7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972
            """)
    }

    @Test(arguments: signingCases)
    func signsLikeBotocore(request: SigningCase) throws {
        let index = try #require(signingCases.firstIndex { $0.name == request.name })
        #expect(signingCases.filter { $0.name == request.name }.count == 1, "row names must be unique")
        let botocore: BotocoreSignature
        switch botocoreSignatures {
        case .failure(let problem): Issue.record("\(problem)"); return
        case .success(let signatures): botocore = signatures[index]
        }
        let rangeFS = try request.rangeFSHeaders()
        #expect(rangeFS.headers == botocore.headers, """
            row \(index) '\(request.name)' (\(request.method) \(request.url)) is signed differently
            RangeFS's canonical request:
            \(rangeFS.canonicalRequest)
            botocore's canonical request:
            \(botocore.canonicalRequest)
            """)
    }

    @Test func aPathEncodedOrNotIsSignedTheSame() throws {
        let pairs = [("key with spaces, raw", "key with spaces, already encoded"),
                     ("unicode key, raw", "unicode key, already encoded"),
                     ("ListObjectsV2 with a prefix, raw", "ListObjectsV2 with a prefix, encoded"),
                     ("plus in a key, raw", "plus in a key, encoded")]
        for (raw, encoded) in pairs {
            let rawCase = try #require(signingCases.first { $0.name == raw })
            let encodedCase = try #require(signingCases.first { $0.name == encoded })
            #expect(try rawCase.rangeFSHeaders().headers == encodedCase.rangeFSHeaders().headers, "\(raw)")
        }
    }

    @Test func aSignerReusedAcrossDaysSignsLikeAFreshOne() throws {
        let credentials = AWSCredentials(accessKeyID: "AKID", secretAccessKey: "secret")
        let reused = SigV4Signer(credentials: credentials, region: "eu-central-1")
        let url = try #require(URL(string: "http://127.0.0.1:9000/media/a.txt"))
        for seconds: TimeInterval in [1_800_000_000, 1_800_086_400, 1_800_000_000, 1_800_003_600] {
            let date = Date(timeIntervalSince1970: seconds)
            let fresh = SigV4Signer(credentials: credentials, region: "eu-central-1")
            #expect(reused.signatureHeaders(method: "GET", url: url, date: date)
                == fresh.signatureHeaders(method: "GET", url: url, date: date), "\(date)")
        }
    }

    @Test func theSignersOwnHeadersReplaceTheCallersAndHeaderNamesAreCaseBlind() throws {
        let signer = SigV4Signer(credentials: AWSCredentials(accessKeyID: "AKID", secretAccessKey: "secret", sessionToken: "t"),
                                 region: "us-east-1")
        let url = try #require(URL(string: "http://127.0.0.1:9000/media/a.txt"))
        let date = Date(timeIntervalSince1970: 1_800_000_000)
        let plain = signer.signatureHeaders(method: "GET", url: url, headers: ["Range": "bytes=0-9"], date: date)
        let cluttered = signer.signatureHeaders(method: "GET", url: url, headers: [
            "range": "bytes=0-9", "Authorization": "Basic x", "X-Amz-Date": "19700101T000000Z",
            "x-amz-security-token": "old", "X-Amz-Content-SHA256": "UNSIGNED-PAYLOAD",
        ], date: date)
        #expect(cluttered == plain)
        #expect(plain["Authorization"]?.contains("SignedHeaders=host;range;x-amz-content-sha256;x-amz-date;x-amz-security-token,") == true)
    }

    @Test func aGivenPayloadHashIsSentAndSigned() throws {
        let signer = SigV4Signer(credentials: AWSCredentials(accessKeyID: "AKID", secretAccessKey: "secret"), region: "us-east-1")
        let url = try #require(URL(string: "http://127.0.0.1:9000/media/a.txt"))
        let date = Date(timeIntervalSince1970: 1_800_000_000)
        let unsigned = signer.signatureHeaders(method: "GET", url: url, payloadHash: "UNSIGNED-PAYLOAD", date: date)
        #expect(unsigned["x-amz-content-sha256"] == "UNSIGNED-PAYLOAD")
        #expect(unsigned["Authorization"] != signer.signatureHeaders(method: "GET", url: url, date: date)["Authorization"])
    }

    @Test func s3URIEncodingKeepsOnlyUnreservedCharacters() {
        #expect(S3URIEncoding.encode("a b/é~_.-+=?#%", keepingSlashes: true) == "a%20b/%C3%A9~_.-%2B%3D%3F%23%25")
        #expect(S3URIEncoding.encode("a/b=", keepingSlashes: false) == "a%2Fb%3D")
        // Escapes already there are decoded once; a % that starts none is a literal %.
        #expect(S3URIEncoding.reencode("a%20b%2fc%zz%4", keepingSlashes: true) == "a%20b/c%25zz%254")
        #expect(SigV4Signer.canonicalPath("") == "/")
    }

    /// Why a request URL is built from keys encoded with S3URIEncoding, never from half-encoded text.
    @Test func foundationEncodesThePercentOfAnEscapeWhenTheTextAlsoHasRawCharacters() throws {
        let mixed = try #require(URL(string: "http://127.0.0.1:9000/media/sub%20dir/日本 é.txt"))
        #expect(mixed.absoluteString == "http://127.0.0.1:9000/media/sub%2520dir/%E6%97%A5%E6%9C%AC%20%C3%A9.txt")
        let built = try #require(URL(string: "http://127.0.0.1:9000/media/"
            + S3URIEncoding.encode("sub dir/日本 é.txt", keepingSlashes: true)))
        #expect(built.absoluteString == "http://127.0.0.1:9000/media/sub%20dir/%E6%97%A5%E6%9C%AC%20%C3%A9.txt")
    }

    @Test func credentialsNeverShowTheSecretOrTheToken() {
        let credentials = AWSCredentials(accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI-SECRET",
                                         sessionToken: "TOKEN-VALUE")
        var dumped = ""
        dump(credentials, to: &dumped)
        for shown in ["\(credentials)", String(reflecting: credentials), dumped, "\([credentials])"] {
            #expect(!shown.contains("SECRET") && !shown.contains("TOKEN-VALUE") && !shown.contains("AKIAIOSFODNN7"), "\(shown)")
        }
        #expect("\(credentials)" == "access key …MPLE with a session token")
    }
}
