import Foundation

/// How an S3 bucket is spoken to beyond plain HTTP (`ServerDialect`): every request signed
/// with Signature Version 4 (none for a public bucket), `If-Match` with the object's ETag on
/// every range (S3 answers `412` once the object was overwritten), and error replies read for
/// their S3 code, turned into a sentence that says what to change (`S3Failure`).
public struct S3Dialect: ServerDialect {
    /// Nil for `--no-sign-request`.
    private let signer: SigV4Signer?
    private let address: BucketAddress

    public init(signer: SigV4Signer?, address: BucketAddress) {
        self.signer = signer
        self.address = address
    }

    /// Only requests to the bucket's own origin are signed: a redirect to another server (a
    /// CDN, another host) gets no signature and no session token.
    public func authorizationHeaders(method: String, url: URL, date: Date) -> [String: String] {
        guard url.isSameOrigin(as: address.base) else { return [:] }
        return signer?.signatureHeaders(method: method, url: url, date: date) ?? [:]
    }

    public var rangeCondition: RangeCondition { .ifMatch }

    public func errorDetail(url: URL, status: Int, body: [UInt8], headers: [(name: String, value: String)]) -> ServerErrorDetail? {
        let regionHeader = headers.first { $0.name == "x-amz-bucket-region" }?.value
        let reply = S3ErrorReply.parse(Data(body))
        let failure = S3Failure.explain(status: status, reply: reply, bucketRegionHeader: regionHeader,
                                        request: failedRequest(url))
        return ServerErrorDetail(code: reply?.code ?? "HTTP \(status)", explanation: failure.sentence,
                                 isTransient: failure.isTransient)
    }

    /// A listing page's URL carries the prefix in its query; any other URL is an object's.
    private func failedRequest(_ url: URL) -> S3FailedRequest {
        let query = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        let operation: S3FailedRequest.Operation
        if query.contains(where: { $0.name == "list-type" }) {
            operation = .listing(prefix: query.first { $0.name == "prefix" }?.value ?? "")
        } else {
            operation = .reading(key: address.key(of: url) ?? url.path)
        }
        return S3FailedRequest(bucket: address.bucket, operation: operation, region: address.region, isSigned: signer != nil)
    }
}
