import Foundation

/// A plain GET of a whole document whose length may be unknown: a manifest, a feed or a
/// directory listing, often sent chunked (no `Content-Length`). Its body streams into a
/// sink, and the transfer stops as soon as the body passes `maxBytes`.
public struct DocumentRequest: Sendable {
    /// What is asked of the URL: its document, or a WebDAV collection's members.
    public enum Method: Sendable, Equatable {
        case get
        /// `PROPFIND` with `Depth: 1` and `body` (the `propfind` XML naming the properties
        /// wanted), answered `207 Multi-Status` (RFC 4918 §9.1). Never conditional: a
        /// multistatus carries no validator of its own.
        case propfind(body: String)

        var name: String {
            switch self {
            case .get: "GET"
            case .propfind: "PROPFIND"
            }
        }

        /// The status of a reply that carries the document.
        var successStatus: Int {
            switch self {
            case .get: 200
            case .propfind: 207
            }
        }
    }

    public var url: URL
    public var method: Method = .get
    public var headers: [String: String]
    /// A longer body ends the transfer with `.refused` the moment it passes the cap (or at
    /// once, when `Content-Length` already says so): nothing past the cap is read.
    public var maxBytes: UInt64
    /// The validator of the copy already held: sent as `If-None-Match` and
    /// `If-Modified-Since`, so an unchanged document is answered `304` without a body.
    public var heldVersion: RemoteValidator?
    /// For the whole transfer, from connecting to the last byte.
    public var timeout: Duration
    /// `.stream` for a listing's page: beside its size probes, on their shared connection
    /// (`ConnectionRules`), which the heads walk's and readers' ranges never take.
    public var connection: ConnectionUse

    public init(url: URL, method: Method = .get, headers: [String: String] = [:], maxBytes: UInt64,
                heldVersion: RemoteValidator? = nil, timeout: Duration = .seconds(60), connection: ConnectionUse = .own) {
        precondition(method == .get || heldVersion == nil, "only a GET is conditional")
        self.url = url
        self.method = method
        self.headers = headers
        self.maxBytes = maxBytes
        self.heldVersion = heldVersion
        self.timeout = timeout
        self.connection = connection
    }

    /// The conditional headers for `heldVersion` (RFC 9110 §13.1): a weak ETag is fine here,
    /// unlike in `If-Range`.
    var conditionalHeaders: [String: String] {
        var headers: [String: String] = [:]
        if let etag = heldVersion?.etag { headers["If-None-Match"] = etag }
        if let date = heldVersion?.lastModified { headers["If-Modified-Since"] = date }
        return headers
    }

    /// Why a body of `bytes` (or more) is refused.
    func tooLong(_ bytes: UInt64, announced: Bool) -> RemoteError {
        let cap = maxBytes % (1 << 20) == 0 ? "\(maxBytes >> 20) MiB" : "\(maxBytes) bytes"
        return .refused(announced ? "the reply is \(bytes) bytes, more than the \(cap) allowed"
                                  : "the reply is longer than the \(cap) allowed; the transfer was stopped")
    }
}

/// How the server answered a `DocumentRequest`.
public struct DocumentReply: Sendable, Equatable {
    /// `304`: the held copy is current, and no body came.
    public var notModified: Bool
    /// The document's validator: the reply's, or on a `304` without one, the held one.
    public var validator: RemoteValidator
    /// `Content-Type` as sent (with its parameters), if any.
    public var contentType: String?
    /// The URL the answer came from, after redirects: relative links resolve against it.
    public var finalURL: URL
    /// `Last-Modified` as a date.
    public var modified: Date?
    /// From the request sent to the reply's first byte: the server's round trip and its own
    /// work, without the wait for a free connection or the body's transfer.
    public var serverTime: Duration

    public init(notModified: Bool, validator: RemoteValidator, contentType: String?, finalURL: URL, modified: Date?,
                serverTime: Duration) {
        self.notModified = notModified
        self.validator = validator
        self.contentType = contentType
        self.finalURL = finalURL
        self.modified = modified
        self.serverTime = serverTime
    }
}

/// Receives a document's body as it arrives, in order, on the transfer thread. Returns
/// false to stop the transfer.
public typealias DocumentBodySink = @Sendable (_ bytes: UnsafeRawBufferPointer) -> Bool
