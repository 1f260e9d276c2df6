import Foundation

/// What identifies one version of a remote file: sent back as `If-Range`, compared on every reply.
public struct RemoteValidator: Sendable, Equatable, Codable {
    public var etag: String?
    public var lastModified: String?

    /// `Last-Modified` was at least a second older than the `Date` of the reply that named it:
    /// a strong validator (RFC 9110 §8.8.2.2), which `If-Range` may carry. A file written within
    /// that second may be written again with the same date (Apache then refuses the date in
    /// `If-Range`). Kept with the file's record; a kept listing's validator leaves it out.
    public var lastModifiedIsStrong: Bool

    enum CodingKeys: String, CodingKey { case etag, lastModified }

    public init(etag: String?, lastModified: String?, lastModifiedIsStrong: Bool = false) {
        self.etag = etag
        self.lastModified = lastModified
        self.lastModifiedIsStrong = lastModifiedIsStrong
    }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(etag: try container.decodeIfPresent(String.self, forKey: .etag),
                  lastModified: try container.decodeIfPresent(String.self, forKey: .lastModified))
    }

    /// The server named no version at all (or it is not known yet).
    public var isEmpty: Bool { etag == nil && lastModified == nil }

    /// What `If-Range` may carry (RFC 9110 §13.1.5): a strong ETag; without an ETag, a strong
    /// date; else nothing, and the reply's validators are checked instead. A weak ETag never
    /// (it would not match), nor the date beside it: the server that weakened the ETag may
    /// not honour the date either (Apache compares it with the file's sub-second mtime and
    /// answers with the whole file).
    public var ifRangeValue: String? {
        if let etag { return Self.isWeak(etag) ? nil : etag }
        return lastModifiedIsStrong ? lastModified : nil
    }

    static func isWeak(_ etag: String) -> Bool {
        etag.hasPrefix("W/")
    }

    /// Whether two ETags name the same version under weak comparison (RFC 9110 §8.8.3.2): their
    /// opaque tags are equal, weak or not. Apache names a file written within the last second
    /// `W/"x"` and the same file a second later `"x"`.
    static func sameVersion(_ one: String, _ other: String) -> Bool {
        opaqueTag(one) == opaqueTag(other)
    }

    private static func opaqueTag(_ etag: String) -> Substring {
        isWeak(etag) ? etag.dropFirst(2) : Substring(etag)
    }
}

/// What a size probe learned about a remote file.
public struct RemoteFileInfo: Sendable, Equatable {
    public var size: UInt64
    public var validator: RemoteValidator
    /// `Last-Modified` as a date, for the file's mtime.
    public var modified: Date?
    /// Where redirects led: the URL the answer came from, or nil when no redirect was followed.
    /// The validator is that URL's (mirrors behind one URL each have their own).
    public var finalURL: URL?
    /// The answer came as one stream of a connection shared with other requests (HTTP/2): the
    /// server takes many such probes at once for the price of one connection.
    public var cameAsStream: Bool

    public init(size: UInt64, validator: RemoteValidator, modified: Date?, finalURL: URL? = nil,
                cameAsStream: Bool = false) {
        self.size = size
        self.validator = validator
        self.modified = modified
        self.finalURL = finalURL
        self.cameAsStream = cameAsStream
    }
}

/// A request for the bytes `range` of a file whose total size is already known.
public struct RangeRequest: Sendable {
    public var url: URL
    public var headers: [String: String]
    public var range: Range<UInt64>
    public var expectedSize: UInt64
    public var validator: RemoteValidator
    /// What the transfer is for and where it was cut, shared with the plan (`TransferControl`).
    public var control: TransferControl
    /// A cap on this transfer's speed (bytes per second), for background bandwidth limits.
    public var maxBytesPerSecond: UInt64?
    /// A plain GET without `Range` (for servers that ignore ranges); `range` is then the whole file.
    public var wholeBody: Bool
    /// A read the cache has no room for: its bytes go to the reader without being stored.
    public var readThrough = false
    /// The request names its version (`If-Range` or `If-Match`, where the validator allows);
    /// false once the file's server answered such a request with the whole body of that same
    /// version (`RemoteError.conditionNotHonoured`): the reply's validators are checked instead.
    public var conditional = true
    /// Set when the request went out before its file's version was known (a file made from a
    /// listing's stated size, not probed): told the version its reply names, on the transfer's
    /// thread before any body byte is used; an error refuses the reply.
    public var versionCheck: (@Sendable (RemoteFileInfo) -> RemoteError?)?

    public init(url: URL, headers: [String: String], range: Range<UInt64>, expectedSize: UInt64,
                validator: RemoteValidator, control: TransferControl = TransferControl(.reader), maxBytesPerSecond: UInt64? = nil,
                wholeBody: Bool = false) {
        precondition(!wholeBody || range == 0..<expectedSize, "a whole-body request covers the whole file")
        precondition(!range.isEmpty, "a range request asks for at least one byte")
        self.url = url
        self.headers = headers
        self.range = range
        self.expectedSize = expectedSize
        self.validator = validator
        self.control = control
        self.maxBytesPerSecond = maxBytesPerSecond
        self.wholeBody = wholeBody
    }

    /// The header that names the version wanted, if the request sends one.
    func conditionHeader(_ condition: RangeCondition) -> (name: String, value: String)? {
        guard conditional, !wholeBody else { return nil }
        switch condition {
        case .ifRange: return validator.ifRangeValue.map { ("If-Range", $0) }
        case .ifMatch: return validator.etag.map { ("If-Match", $0) }
        }
    }

    /// The bytes still wanted: `range` up to where the plan cut the transfer short
    /// (`TransferControl.end`); empty when the cut is at or before its start.
    var wantedRange: Range<UInt64> {
        guard let end = control.end else { return range }
        return range.lowerBound..<max(range.lowerBound, min(range.upperBound, end))
    }
}

public enum RemoteError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The server answered with this status (404, 500 …), maybe asking to wait before retrying,
    /// maybe saying why in a form that is read (`ServerDialect.errorDetail`).
    case status(Int, retryAfter: Duration? = nil, detail: ServerErrorDetail? = nil)
    /// The transfer itself failed: connection refused, timeout, stalled, reset.
    case transport(String)
    /// The request cannot succeed however often it is tried: a redirect to a scheme other
    /// than http/https, a redirect loop, a certificate that does not verify.
    case refused(String)
    /// A `200` reply to a range request without `If-Range`: the server ignores ranges.
    case rangesNotSupported
    /// A `200` with the whole body, of the version held, to a range request that named that
    /// version (`If-Range`, `If-Match`): the server did not take the validator (a weak date, a
    /// condition it does not support). Says nothing of ranges: the request is asked again
    /// without the condition.
    case conditionNotHonoured
    /// The remote file is no longer the version the cache holds.
    case changed(String)
    /// A redirect led somewhere other than where the cached version's validator comes from, and
    /// the validator there differs: maybe another mirror of the same bytes, maybe a new version.
    /// The file asks the manifest URL again where it leads before deciding.
    case servedElsewhere(String)
    /// A reply that breaks the protocol: wrong `Content-Range`, short or long body, no size.
    case protocolViolation(String)
    /// The bytes arrived but the cache could not store them (a full disk).
    case localStorage(String)
    /// The transfer was stopped on purpose (unmount).
    case cancelled

    public var description: String {
        switch self {
        case .status(let code, let retryAfter, let detail):
            return "HTTP status \(code)" + (detail.map { " (\($0))" } ?? "") + (retryAfter.map { " (Retry-After \($0))" } ?? "")
        case .transport(let message), .refused(let message): return message
        case .rangesNotSupported: return "server ignored the Range header (answered 200)"
        case .conditionNotHonoured: return "server answered a conditional range request with the whole body of the same version"
        case .changed(let why): return "remote file changed: \(why)"
        case .servedElsewhere(let why): return "a redirect led to another copy (\(why))"
        case .protocolViolation(let why): return why
        case .localStorage(let why): return why
        case .cancelled: return "cancelled"
        }
    }

    /// Worth trying again: the next attempt may well succeed.
    public var isTransient: Bool {
        switch self {
        case .status(let code, _, let detail): return code == 408 || code == 429 || code >= 500 || detail?.isTransient == true
        case .transport, .protocolViolation: return true
        case .refused, .rangesNotSupported, .conditionNotHonoured, .changed, .servedElsewhere, .localStorage, .cancelled: return false
        }
    }

    /// How long the server asked us to wait, if it did.
    public var retryAfter: Duration? {
        if case .status(_, let retryAfter, _) = self { return retryAfter }
        return nil
    }
}

/// Receives the body of a range transfer as it arrives, in order, on the transfer thread.
/// Returns false to abort the transfer (for example when the cache file cannot be written).
public typealias RangeBodySink = @Sendable (_ bytes: UnsafeRawBufferPointer, _ offset: UInt64) -> Bool

/// HTTP access to remote files. The real one is libcurl (`CurlClient`); tests swap in
/// misbehaving servers on loopback, never a fake of this protocol.
public protocol RemoteClient: Sendable {
    /// Finds a file's size and validator (HEAD, falling back to `Range: bytes=0-0`).
    func probe(url: URL, headers: [String: String], connection: ConnectionUse,
               completion: @escaping @Sendable (Result<RemoteFileInfo, RemoteError>) -> Void)
    /// Streams `request.range` into `sink`; completes once every byte was delivered or on the first error.
    func fetch(_ request: RangeRequest, sink: @escaping RangeBodySink,
               completion: @escaping @Sendable (Result<Void, RemoteError>) -> Void)
    /// Streams a whole document (any length up to `request.maxBytes`, chunked or not) into
    /// `sink`; completes with how the server answered, or on the first error.
    func fetchDocument(_ request: DocumentRequest, sink: @escaping DocumentBodySink,
                       completion: @escaping @Sendable (Result<DocumentReply, RemoteError>) -> Void)
    /// Holds every background transfer where it is (running ones too) until resumed.
    func setBackgroundPaused(_ paused: Bool)
    /// Holds background work for at least `duration` though no reader waits, for `reason`
    /// (`BackgroundQuiet` says which background work it holds).
    func quietBackground(_ reason: BackgroundQuiet, for duration: Duration)
    /// Stops every transfer (each completes with `.cancelled`) and the client's thread.
    func shutdown()
}
