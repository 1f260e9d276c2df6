import Foundation

/// How a range request names the version it wants.
public enum RangeCondition: Sendable, Equatable {
    /// `If-Range`: a changed file answers `200` with the whole new body (plain HTTP servers).
    case ifRange
    /// `If-Match` with the ETag: a changed object answers `412` (S3, which honours `If-Match`
    /// with ranges and says nothing of `If-Range`).
    case ifMatch
}

/// What a server said in the body of an error reply, when it says it in a form that is read
/// (S3's `<Error><Code>`), for a message a user can act on.
public struct ServerErrorDetail: Sendable, Equatable, CustomStringConvertible {
    /// The service's error code (`AccessDenied`, `NoSuchBucket` …).
    public var code: String
    /// One sentence for the user, with the code, naming what to change where the code tells it.
    public var explanation: String
    /// Worth trying again (`SlowDown`, `InternalError`).
    public var isTransient: Bool

    public init(code: String, explanation: String, isTransient: Bool = false) {
        self.code = code
        self.explanation = explanation
        self.isTransient = isTransient
    }

    public var description: String { explanation }
}

/// What a kind of server needs beyond plain HTTP: a signature on every request, another
/// conditional header for ranges, error replies that explain themselves. Plain web servers
/// need none of it (`CurlClient.Configuration.dialect` nil); an S3 bucket needs all three.
public protocol ServerDialect: Sendable {
    /// The headers that authorize one request, made when it goes out (a signature is valid for
    /// minutes only, and each retry is signed anew). Never logged, never shown; none for a URL
    /// on another origin than the server's own (where a redirect led).
    func authorizationHeaders(method: String, url: URL, date: Date) -> [String: String]
    /// The URL one request is sent to, made when it goes out: a server that takes its
    /// credentials in the query (Subsonic) has them added here, so no URL the mount keeps, logs
    /// or shows holds them. `url` itself for every other dialect, and for a URL on another
    /// origin than the server's own.
    func sentURL(for url: URL) -> URL
    var rangeCondition: RangeCondition { get }
    /// Whether a `2xx` reply to `url` is an error all the same (a Subsonic server answers a failed
    /// call with `200` and an error document): decided from its headers before any of its body
    /// is used; its body is then read by `errorDetail`, and none of it reaches the cache.
    func isErrorReply(url: URL, status: Int, headers: [(name: String, value: String)]) -> Bool
    /// Reads the error reply to a request of `url`: its body (the first few KiB) and headers;
    /// nil when they explain nothing.
    func errorDetail(url: URL, status: Int, body: [UInt8], headers: [(name: String, value: String)]) -> ServerErrorDetail?
}

extension ServerDialect {
    /// Credentials go in headers, not in the URL.
    public func sentURL(for url: URL) -> URL { url }

    /// A `2xx` is a success.
    public func isErrorReply(url: URL, status: Int, headers: [(name: String, value: String)]) -> Bool { false }
}
