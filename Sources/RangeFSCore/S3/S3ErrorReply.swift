import Foundation

/// An S3 error document: `<Error><Code>NoSuchBucket</Code><Message>…</Message>…</Error>`,
/// with the optional fields that help say what to do (AWS and moto write them this way).
public struct S3ErrorReply: Sendable, Equatable, CustomStringConvertible {
    /// `AccessDenied`, `NoSuchKey`, `PermanentRedirect`, …
    public var code: String
    public var message: String?
    /// `<Region>`: the bucket's region, in AuthorizationHeaderMalformed replies.
    public var region: String?
    /// `<Endpoint>`: where the bucket must be addressed, in PermanentRedirect replies.
    public var endpoint: String?
    /// `<BucketName>` (or `<Bucket>`, as PermanentRedirect calls it).
    public var bucketName: String?
    public var key: String?
    public var requestID: String?

    public init(code: String, message: String? = nil, region: String? = nil, endpoint: String? = nil,
                bucketName: String? = nil, key: String? = nil, requestID: String? = nil) {
        self.code = code
        self.message = message
        self.region = region
        self.endpoint = endpoint
        self.bucketName = bucketName
        self.key = key
        self.requestID = requestID
    }

    /// The error a body states, or nil when the body is no S3 error document (empty, HTML
    /// from a proxy, another XML document, an `<Error>` without a `<Code>`).
    public static func parse(_ body: Data) -> S3ErrorReply? {
        guard let root = try? XMLElementTree.parseDocument(body), root.name == "Error" else { return nil }
        let reply = S3ErrorReply(root: root)
        return reply.code.isEmpty ? nil : reply
    }

    /// The fields of an `<Error>` element, each trimmed; absent or empty ones are nil.
    init(root: XMLElementTree) {
        func field(_ name: String) -> String? {
            guard let text = root.child(name)?.text.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty else { return nil }
            return text
        }
        self.init(code: field("Code") ?? "", message: field("Message"), region: field("Region"),
                  endpoint: field("Endpoint"), bucketName: field("BucketName") ?? field("Bucket"),
                  key: field("Key"), requestID: field("RequestId"))
    }

    /// `AccessDenied (Access Denied)`, for logs.
    public var description: String {
        // Quoted and stripped again: only the control characters' escaping is wanted.
        func shown(_ text: String) -> String { String(DisplayText.quoted(text).dropFirst().dropLast()) }
        guard let message else { return shown(code) }
        return "\(shown(code)) (\(shown(message)))"
    }

    /// The bucket's region where the reply names it: the `<Region>` element, the endpoint's
    /// host (`bucket.s3.eu-west-1.amazonaws.com`), or the message of a region refusal
    /// ("… expecting 'eu-west-1'", "The eu-west-1 location constraint is incompatible …").
    var statedRegion: String? {
        if let region { return region }
        if let endpoint, let region = Self.region(inEndpoint: endpoint) { return region }
        guard let message else { return nil }
        if let found = message.range(of: "expecting '") {
            let rest = message[found.upperBound...]
            if let end = rest.firstIndex(of: "'") { return Self.plausibleRegion(rest[..<end]) }
        }
        if message.hasPrefix("The "), let end = message.range(of: " location constraint") {
            return Self.plausibleRegion(message[message.index(message.startIndex, offsetBy: 4)..<end.lowerBound])
        }
        return nil
    }

    /// `s3.eu-west-1.amazonaws.com`, `b.s3-eu-west-1.amazonaws.com` → `eu-west-1`;
    /// `s3.amazonaws.com` (the global endpoint) → `us-east-1`.
    static func region(inEndpoint endpoint: String) -> String? {
        let labels = endpoint.lowercased().split(separator: ".")
        guard labels.count >= 3, labels.suffix(2) == ["amazonaws", "com"] || labels.suffix(3) == ["amazonaws", "com", "cn"] else { return nil }
        guard let s3 = labels.lastIndex(where: { $0 == "s3" || $0.hasPrefix("s3-") }) else { return nil }
        if labels[s3].hasPrefix("s3-") { return plausibleRegion(labels[s3].dropFirst(3)) }
        let next = labels[labels.index(after: s3)]
        return next == "amazonaws" ? "us-east-1" : plausibleRegion(next)
    }

    /// Region names are lowercase letters, digits and dashes (`eu-west-1`, `us-gov-west-1`).
    private static func plausibleRegion(_ text: some StringProtocol) -> String? {
        guard !text.isEmpty, text.utf8.count <= 40, text.contains("-"),
              text.utf8.allSatisfy({ (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == UInt8(ascii: "-") })
        else { return nil }
        return String(text)
    }
}
