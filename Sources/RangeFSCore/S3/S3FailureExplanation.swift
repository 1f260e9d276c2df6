/// The request an S3 error answered, as far as explaining the error needs it.
public struct S3FailedRequest: Sendable, Equatable {
    public enum Operation: Sendable, Equatable {
        /// Listing the keys under a prefix ("" for the bucket's top).
        case listing(prefix: String)
        /// Reading one object.
        case reading(key: String)
    }

    public var bucket: String
    public var operation: Operation
    /// The region the request was sent to (and signed for, when signed).
    public var region: String
    /// False for `--no-sign-request`.
    public var isSigned: Bool

    public init(bucket: String, operation: Operation, region: String, isSigned: Bool) {
        self.bucket = bucket
        self.operation = operation
        self.region = region
        self.isSigned = isSigned
    }

    /// `s3://bucket/prefix/` or `s3://bucket/key`, to start a message with.
    var location: String {
        switch operation {
        case .listing(let prefix): "s3://\(bucket)/\(prefix)"
        case .reading(let key): "s3://\(bucket)/\(key)"
        }
    }
}

/// What an S3 error means for the user: a kind the caller acts on (retry, refuse the mount,
/// EIO), and one sentence that says what to do. Pure; built from the reply and its headers.
public struct S3Failure: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        case unknownAccessKey
        case wrongSecretKey
        case badSessionToken
        case clockSkew
        case accessDenied
        case noSuchBucket
        case noSuchKey
        /// The bucket lives in another region; the right one when the reply or the
        /// `x-amz-bucket-region` header names it.
        case wrongRegion(String?)
        /// Archived (Glacier) and not restored.
        case archived
        /// Throttling or a server fault: worth retrying.
        case transient
        case other
    }

    public var kind: Kind
    public var sentence: String

    public var isTransient: Bool { kind == .transient }
    public var description: String { sentence }

    /// Explains an error reply.
    /// - Parameters:
    ///   - status: the HTTP status.
    ///   - reply: the parsed body (`S3ErrorReply.parse`), nil when there was none (a HEAD) or
    ///     it was not an S3 error document.
    ///   - bucketRegionHeader: the `x-amz-bucket-region` header, if any.
    public static func explain(status: Int, reply: S3ErrorReply?, bucketRegionHeader: String?,
                               request: S3FailedRequest) -> S3Failure {
        let headerRegion = bucketRegionHeader.map { $0.trimmingCharacters(in: .whitespaces) }.flatMap { $0.isEmpty ? nil : $0 }
        let statedRegion = reply?.statedRegion ?? headerRegion
        let code = reply?.code
        let kind = classify(status: status, code: code, statedRegion: statedRegion, request: request)
        let because = code.map { "(\($0))" } ?? "(HTTP \(status))"
        return S3Failure(kind: kind, sentence: "\(request.location): " + text(kind, because: because, status: status, reply: reply, request: request))
    }

    private static func classify(status: Int, code: String?, statedRegion: String?, request: S3FailedRequest) -> Kind {
        switch code {
        case "InvalidAccessKeyId"?: return .unknownAccessKey
        case "SignatureDoesNotMatch"?: return .wrongSecretKey
        case "ExpiredToken"?, "InvalidToken"?, "TokenRefreshRequired"?: return .badSessionToken
        case "RequestTimeTooSkewed"?: return .clockSkew
        case "AccessDenied"?, "AllAccessDisabled"?: return .accessDenied
        case "NoSuchBucket"?: return .noSuchBucket
        case "NoSuchKey"?: return .noSuchKey
        case "PermanentRedirect"?, "IllegalLocationConstraintException"?:
            return .wrongRegion(statedRegion)
        case "AuthorizationHeaderMalformed"?:
            // Also sent for a malformed credential scope; only a named other region is a redirect.
            if let statedRegion, statedRegion != request.region { return .wrongRegion(statedRegion) }
            return .other
        case "InvalidObjectState"?: return .archived
        case "SlowDown"?, "InternalError"?, "ServiceUnavailable"?, "RequestTimeout"?: return .transient
        case _?: return .other
        case nil:
            // No body (a HEAD) or not S3's: the status alone.
            switch status {
            case 301:
                // S3's answer to a request at the wrong region's endpoint, named or not.
                return .wrongRegion(statedRegion)
            case 400 where statedRegion != nil && statedRegion != request.region:
                return .wrongRegion(statedRegion)
            case 403: return .accessDenied
            case 404:
                if case .reading = request.operation { return .noSuchKey }
                return .noSuchBucket
            case 429, 500...599: return .transient
            default: return .other
            }
        }
    }

    private static func text(_ kind: Kind, because: String, status: Int, reply: S3ErrorReply?,
                             request: S3FailedRequest) -> String {
        let bucket = DisplayText.quoted(request.bucket)
        switch kind {
        case .unknownAccessKey:
            return "the server does not know this access key ID \(because); check AWS_ACCESS_KEY_ID, or aws_access_key_id in the profile used (--profile, AWS_PROFILE)"
        case .wrongSecretKey:
            return "the request's signature does not match \(because): the secret access key is not the one of this access key ID; check AWS_SECRET_ACCESS_KEY, or aws_secret_access_key in the profile used"
        case .badSessionToken:
            return "the session token is expired or not valid \(because); get new temporary credentials (AWS_SESSION_TOKEN, or aws_session_token in the profile) and mount again"
        case .clockSkew:
            return "this machine's clock is too far from the server's \(because); set the clock right (NTP, timedatectl) and try again"
        case .accessDenied:
            switch (request.operation, request.isSigned) {
            case (.listing(let prefix), true):
                return "access denied to listing this prefix \(because); the credentials need s3:ListBucket on bucket \(bucket)\(prefix.isEmpty ? "" : " for prefix \(DisplayText.quoted(prefix))"), or mount a prefix they may list"
            case (.listing, false):
                return "access denied to listing this prefix without credentials \(because): the bucket is not public; mount without --no-sign-request to sign with AWS credentials"
            case (.reading, true):
                return "access denied to reading this object \(because); the credentials need s3:GetObject on it"
            case (.reading, false):
                return "access denied to reading this object without credentials \(because): it is not public; mount without --no-sign-request to sign with AWS credentials"
            }
        case .noSuchBucket:
            return "there is no bucket \(bucket) \(because); check the name, and --endpoint for a server other than AWS"
        case .noSuchKey:
            return "the object no longer exists \(because); it was deleted or renamed after it was listed"
        case .wrongRegion(let region?) where region == request.region:
            let endpoint = reply?.endpoint.map { " (to \(DisplayText.quoted($0)))" } ?? ""
            return "the server sends this bucket's requests elsewhere\(endpoint) \(because); check --endpoint and --path-style"
        case .wrongRegion(let region?):
            return "bucket \(bucket) is in region \(region), not \(request.region) \(because); mount with --region \(region)"
        case .wrongRegion(nil):
            return "bucket \(bucket) is not in region \(request.region) \(because) and the server did not say which region it is in; give it with --region"
        case .archived:
            return "the object is archived \(because) and must be restored (S3 RestoreObject) before it can be read"
        case .transient:
            return "the server is busy or failing for now \(because); trying again later should work"
        case .other:
            let detail = reply.map { "HTTP \(status), \($0)" } ?? "HTTP \(status) without an S3 error document"
            return "the server refused the request: \(detail)"
        }
    }
}
