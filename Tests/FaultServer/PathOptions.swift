/// How the server treats one path, independent of queued faults.
public struct PathOptions: Sendable, Equatable {
    /// When false, `Range` is ignored (always `200`) and `Accept-Ranges` is not sent.
    public var rangesSupported: Bool
    /// When false, `HEAD` gets `405 Method Not Allowed`.
    public var headAllowed: Bool
    public var sendETag: Bool
    public var sendLastModified: Bool
    /// The status for this path while nothing is published there: 404, or 410 for "gone".
    public var goneStatus: Int
    /// Paces every body sent for this path to about this rate.
    public var bytesPerSecond: Int?
    /// A delay before each response for this path (a long round trip).
    public var latency: Duration?
    /// When not empty, every request for this path is answered `302` to these URLs in turn
    /// (mirrors behind one URL, each with its own validators).
    public var redirectsInTurn: [String]
    /// Bodies are sent with `Transfer-Encoding: chunked` and no `Content-Length`, as nginx
    /// sends its directory listings and servers send generated feeds.
    public var chunked: Bool
    /// The `Content-Type` of this path's files (default `application/octet-stream`).
    public var contentType: String?
    /// The size every reply for this path claims, as written (any digits, past 2^64 too): a
    /// `HEAD`'s `Content-Length` and a `206`'s `Content-Range` total. Bodies stay the real bytes.
    public var statedSize: String?

    public init(rangesSupported: Bool = true, headAllowed: Bool = true, sendETag: Bool = true,
                sendLastModified: Bool = true, goneStatus: Int = 404,
                bytesPerSecond: Int? = nil, latency: Duration? = nil, redirectsInTurn: [String] = [],
                chunked: Bool = false, contentType: String? = nil, statedSize: String? = nil) {
        precondition(bytesPerSecond.map { $0 > 0 } ?? true, "bytesPerSecond must be positive")
        self.rangesSupported = rangesSupported
        self.headAllowed = headAllowed
        self.sendETag = sendETag
        self.sendLastModified = sendLastModified
        self.goneStatus = goneStatus
        self.bytesPerSecond = bytesPerSecond
        self.latency = latency
        self.redirectsInTurn = redirectsInTurn
        self.chunked = chunked
        self.contentType = contentType
        self.statedSize = statedSize
    }
}
