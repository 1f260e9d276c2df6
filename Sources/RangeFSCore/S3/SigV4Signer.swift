import Crypto
import Foundation
import Synchronization

/// An AWS access key, with the session token of temporary credentials. Printing it never
/// shows the secret or the token (it ends up in messages and logs).
public struct AWSCredentials: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable {
    public var accessKeyID: String
    public var secretAccessKey: String
    public var sessionToken: String?

    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
    }

    /// `access key AKIA…MPLE with a session token`: the last four characters, as the AWS CLI shows them.
    public var description: String {
        "access key …\(accessKeyID.suffix(4))" + (sessionToken == nil ? "" : " with a session token")
    }

    public var debugDescription: String { description }
    /// No children, so `dump` and the debugger's summaries show only `description`.
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}

/// AWS Signature Version 4 for S3 requests sent with headers (not presigned URLs):
/// https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html
public struct SigV4Signer: Sendable {
    public let credentials: AWSCredentials
    public let region: String
    public let service: String
    private let signingKeys = SigningKeyCache()

    public init(credentials: AWSCredentials, region: String, service: String = "s3") {
        self.credentials = credentials
        self.region = region
        self.service = service
    }

    /// SHA-256 of an empty body in hex: the payload hash of every GET and HEAD.
    public static let emptyPayloadHash = hexSHA256(Data())

    /// The headers to add to a request so S3 accepts it: Authorization, x-amz-date,
    /// x-amz-content-sha256, and x-amz-security-token when the credentials have one.
    /// `headers` are the request's other headers that are to be signed (names lowercased,
    /// values trimmed and inner runs of whitespace folded); `host` comes from `url`, with its
    /// port when that is not the scheme's default. The path and query are signed in S3's
    /// encoding (S3URIEncoding) whether `url` has them encoded already or not; send them so.
    public func signatureHeaders(method: String, url: URL, headers: [String: String] = [:],
                                 payloadHash: String = emptyPayloadHash, date: Date) -> [String: String] {
        let request = signedRequest(method: method, url: url, headers: headers, payloadHash: payloadHash, date: date)
        let signature = HMAC<SHA256>.authenticationCode(for: Data(request.stringToSign.utf8),
                                                        using: signingKey(day: request.day))
        var added = request.addedHeaders
        added["Authorization"] = "AWS4-HMAC-SHA256 Credential=\(credentials.accessKeyID)/\(request.scope), "
            + "SignedHeaders=\(request.signedHeaders), Signature=\(Self.hex(signature))"
        return added
    }

    /// Everything signed for one request, kept apart so tests can show where two signers differ.
    struct SignedRequest {
        var canonicalRequest: String
        var stringToSign: String
        var signedHeaders: String
        var scope: String
        var day: String
        var addedHeaders: [String: String]
    }

    func signedRequest(method: String, url: URL, headers: [String: String], payloadHash: String,
                       date: Date) -> SignedRequest {
        let timestamp = Self.timestamp(date)
        let day = String(timestamp.prefix(8))
        var added = ["x-amz-date": timestamp, "x-amz-content-sha256": payloadHash]
        if let token = credentials.sessionToken { added["x-amz-security-token"] = token }

        // Lowercased name → values; names differing only in case are joined with commas. The
        // signer's own headers replace any the caller gave.
        var signed: [String: [String]] = [:]
        for name in headers.keys.sorted()
        where !added.keys.contains(name.lowercased()) && name.lowercased() != "authorization" {
            signed[name.lowercased(), default: []].append(Self.foldedValue(headers[name]!))
        }
        if signed["host"] == nil { signed["host"] = [Self.host(of: url)] }
        for (name, value) in added { signed[name] = [value] }
        let names = signed.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        let canonicalHeaders = names.map { "\($0):\(signed[$0]!.joined(separator: ","))\n" }.joined()
        let signedHeaders = names.joined(separator: ";")

        let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        let canonicalRequest = [
            method.uppercased(),
            Self.canonicalPath(components?.percentEncodedPath ?? ""),
            Self.canonicalQuery(components?.percentEncodedQuery),
            canonicalHeaders,
            signedHeaders,
            payloadHash,
        ].joined(separator: "\n")
        let scope = "\(day)/\(region)/\(service)/aws4_request"
        let stringToSign = ["AWS4-HMAC-SHA256", timestamp, scope, Self.hexSHA256(Data(canonicalRequest.utf8))]
            .joined(separator: "\n")
        return SignedRequest(canonicalRequest: canonicalRequest, stringToSign: stringToSign,
                             signedHeaders: signedHeaders, scope: scope, day: day, addedHeaders: added)
    }

    /// The path as sent, in S3's encoding; S3 neither encodes it twice nor removes `.`, `..` or `//`.
    static func canonicalPath(_ percentEncodedPath: String) -> String {
        percentEncodedPath.isEmpty ? "/" : S3URIEncoding.reencode(percentEncodedPath, keepingSlashes: true)
    }

    /// Every `name=value` in S3's encoding (a bare `name` is `name=`), sorted by name, then value.
    static func canonicalQuery(_ percentEncodedQuery: String?) -> String {
        guard let query = percentEncodedQuery, !query.isEmpty else { return "" }
        let pairs = query.split(separator: "&", omittingEmptySubsequences: true).map { parameter in
            let parts = parameter.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (name: S3URIEncoding.reencode(parts[0], keepingSlashes: false),
                    value: parts.count > 1 ? S3URIEncoding.reencode(parts[1], keepingSlashes: false) : "")
        }
        return pairs.sorted { left, right in
            left.name == right.name ? left.value.utf8.lexicographicallyPrecedes(right.value.utf8)
                                    : left.name.utf8.lexicographicallyPrecedes(right.name.utf8)
        }.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
    }

    /// `Host` as the client sends it: lowercase, brackets around IPv6, the port unless it is the scheme's default.
    static func host(of url: URL) -> String {
        var host = (url.host ?? "").lowercased()
        if host.contains(":"), !host.hasPrefix("[") { host = "[\(host)]" }
        let defaultPort = url.scheme?.lowercased() == "https" ? 443 : 80
        if let port = url.port, port != defaultPort { host += ":\(port)" }
        return host
    }

    /// A header value trimmed, with every inner run of whitespace made one space.
    static func foldedValue(_ value: String) -> String {
        value.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }).joined(separator: " ")
    }

    /// `20130524T000000Z` in UTC.
    static func timestamp(_ date: Date) -> String {
        let parts = utcCalendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        func two(_ value: Int?) -> String { value.map { $0 < 10 ? "0\($0)" : "\($0)" } ?? "00" }
        return "\(parts.year ?? 1970)\(two(parts.month))\(two(parts.day))T\(two(parts.hour))\(two(parts.minute))\(two(parts.second))Z"
    }

    private static let utcCalendar: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }()

    /// The key for one day's signatures, derived from the secret through date, region, service.
    private func signingKey(day: String) -> SymmetricKey {
        if let key = signingKeys.key(day: day) { return key }
        var key = SymmetricKey(data: Data("AWS4\(credentials.secretAccessKey)".utf8))
        for part in [day, region, service, "aws4_request"] {
            key = SymmetricKey(data: Data(HMAC<SHA256>.authenticationCode(for: Data(part.utf8), using: key)))
        }
        signingKeys.store(key, day: day)
        return key
    }

    static func hexSHA256(_ data: Data) -> String { hex(SHA256.hash(data: data)) }

    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

/// The last signing key derived, for its day: a mount signs every request with the same key
/// until midnight UTC. One lock, held only to read or replace the pair (never while deriving).
private final class SigningKeyCache: Sendable {
    /// The key's bytes: plain data crosses the lock, SymmetricKey is not Sendable.
    private let latest = Mutex<(day: String, key: Data)?>(nil)

    func key(day: String) -> SymmetricKey? {
        latest.withLock { $0?.day == day ? $0?.key : nil }.map { SymmetricKey(data: $0) }
    }

    func store(_ key: SymmetricKey, day: String) {
        let bytes = key.withUnsafeBytes { Data($0) }
        latest.withLock { $0 = (day, bytes) }
    }
}
