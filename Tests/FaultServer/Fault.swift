import Foundation

/// One way a response goes wrong on purpose. Queued with `FaultServer.inject`, each fault
/// shapes exactly one response; the others are answered normally.
public enum Fault: Sendable, Equatable {
    /// Headers promise the whole body (`Content-Length`), then the socket closes after this many body bytes.
    case dropConnection(afterBodyBytes: Int)
    /// Headers and this many body bytes, then silence for `for`, then the socket closes.
    case stall(afterBodyBytes: Int, for: Duration)
    /// Silence for `for` before the status line; afterwards the request is answered normally.
    case stallBeforeHeaders(for: Duration)
    /// `Content-Length` promises the whole body, this many bytes fewer arrive, then the socket closes.
    case shortBody(missingBytes: Int)
    /// This many bytes more than `Content-Length` (the bytes that follow in the file, then `X`), then close.
    case extraBytes(Int)
    /// This status (500, 503, 429, 404, 410 …) with a small text body and, if given, `Retry-After`.
    case status(Int, retryAfter: String? = nil)
    /// `200` with the whole body, whatever `Range` asked for.
    case ignoreRange
    /// `206` whose `Content-Range` (and body) start this many bytes away from the requested start.
    case wrongContentRange(offsetBy: Int)
    /// `206` with the requested bytes, but `Content-Range` names this total size.
    case wrongTotal(Int)
    /// The usual status and `Content-Range`, but the body gzip-compressed with
    /// `Content-Encoding: gzip`, whatever `Accept-Encoding` asked for (a misconfigured proxy).
    case gzipContentEncoding
    /// The body gzip-compressed and chunked, announced as `Transfer-Encoding: gzip, chunked`.
    case gzipTransferCoding
    /// The usual `Content-Range`, but a body (and a `Content-Length`) this many bytes longer
    /// (the bytes that follow in the file) or, when negative, shorter.
    case bodyLengthOff(by: Int)
    /// Publishes these bytes (new ETag and Last-Modified) just before answering normally,
    /// so an `If-Range` carrying the old validator gets `200` and the new body.
    case changeFileBefore(bytes: [UInt8])
    /// `Location` exactly as given: a relative path, an absolute URL, the same path (a loop), `ftp://…`.
    case redirect(to: String, status: Int = 302)
    /// One extra header line of about this many bytes before the real ones.
    case hugeHeader(bytes: Int)
    /// A garbage status line and header block, then close.
    case malformedHeaders
    /// The connection closes before a single byte of the response (a server that dropped
    /// an idle keep-alive connection, or crashed).
    case closeBeforeResponse
}

extension Fault: CustomStringConvertible {
    public var description: String {
        switch self {
        case .dropConnection(let n): "dropConnection(afterBodyBytes: \(n))"
        case .stall(let n, let d): "stall(afterBodyBytes: \(n), for: \(d))"
        case .stallBeforeHeaders(let d): "stallBeforeHeaders(for: \(d))"
        case .shortBody(let n): "shortBody(missingBytes: \(n))"
        case .extraBytes(let n): "extraBytes(\(n))"
        case .status(let code, let retryAfter): "status(\(code)\(retryAfter.map { ", retryAfter: \($0)" } ?? ""))"
        case .ignoreRange: "ignoreRange"
        case .wrongContentRange(let n): "wrongContentRange(offsetBy: \(n))"
        case .wrongTotal(let n): "wrongTotal(\(n))"
        case .gzipContentEncoding: "gzipContentEncoding"
        case .gzipTransferCoding: "gzipTransferCoding"
        case .bodyLengthOff(let n): "bodyLengthOff(by: \(n))"
        // The bytes themselves would flood a log line.
        case .changeFileBefore(let bytes): "changeFileBefore(\(bytes.count) bytes)"
        case .redirect(let to, let status): "redirect(to: \(to), status: \(status))"
        case .hugeHeader(let n): "hugeHeader(bytes: \(n))"
        case .malformedHeaders: "malformedHeaders"
        case .closeBeforeResponse: "closeBeforeResponse"
        }
    }
}
