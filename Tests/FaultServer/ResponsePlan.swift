import Foundation

/// Everything about one response before a byte of it is sent: what the head says, what
/// the body really is, and how the connection ends. Faults edit a plan; the connection
/// handler only carries it out.
struct ResponsePlan: Sendable {
    var status: Int
    /// All headers but `Content-Length`, `Connection`, `Date` and `Server`, which the head adds.
    var headers: [HeaderField] = []
    /// The body the head announces: `Content-Length` is its size, unless `chunked`.
    var body: ArraySlice<UInt8> = []
    /// The body goes out in chunked framing, announced by `Transfer-Encoding: chunked`
    /// instead of a length; a body cut short (`bodyLimit`) then lacks the closing chunk.
    var chunked = false
    /// False for `HEAD`: the head still announces the body's size.
    var includesBody = true
    /// Announced as `Content-Length` instead of the body's size (a `HEAD` claiming any size).
    var announcedLength: String?
    /// Send only this many body bytes (a short body), fewer than announced.
    var bodyLimit: Int?
    /// Bytes sent after the announced body (a long body).
    var extraBody: [UInt8] = []
    /// For a `206`: the file bytes the body holds.
    var servedRange: Range<Int>?
    /// Sent instead of a status line and headers.
    var rawHead: [UInt8]?
    /// Close without sending anything.
    var sendsNothing = false
    var ending: Ending = .keepAlive

    enum Ending: Sendable, Equatable {
        case keepAlive
        case close
        /// Silence for this long, then close.
        case stallThenClose(Duration)
    }

    /// A response whose body is a line of text (errors, redirects).
    static func text(_ status: Int, _ message: String, includesBody: Bool) -> ResponsePlan {
        // 1xx, 204 and 304 never have a body.
        let bodyless = status < 200 || status == 204 || status == 304
        return ResponsePlan(status: status, headers: [HeaderField("Content-Type", "text/plain")],
                            body: bodyless ? [] : ArraySlice(message.utf8), includesBody: includesBody && !bodyless)
    }

    mutating func setHeader(_ name: String, _ value: String) {
        headers.removeAll { $0.name.caseInsensitiveCompare(name) == .orderedSame }
        headers.append(HeaderField(name, value))
    }

    /// The body bytes that really go out, in order.
    var bytesToSend: ArraySlice<UInt8> {
        guard includesBody else { return [] }
        let announced = body.prefix(bodyLimit.map { max(0, $0) } ?? body.count)
        if chunked {
            return ArraySlice(GzipStream.chunked(Array(announced), closing: bodyLimit == nil) + extraBody)
        }
        return extraBody.isEmpty ? announced : ArraySlice(Array(announced) + extraBody)
    }

    /// The status line and header block, blank line included.
    func head(closing: Bool) -> [UInt8] {
        if let rawHead { return rawHead }
        var text = "HTTP/1.1 \(status) \(Self.reason(for: status))\r\n"
        text += "Date: \(HTTPDate.format(Date()))\r\nServer: FaultServer\r\n"
        for field in headers { text += "\(field.name): \(field.value)\r\n" }
        text += chunked ? "Transfer-Encoding: chunked\r\n" : "Content-Length: \(announcedLength ?? String(body.count))\r\n"
        if closing { text += "Connection: close\r\n" }
        text += "\r\n"
        return Array(text.utf8)
    }

    static func reason(for status: Int) -> String {
        switch status {
        case 200: "OK"
        case 204: "No Content"
        case 206: "Partial Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 303: "See Other"
        case 304: "Not Modified"
        case 307: "Temporary Redirect"
        case 308: "Permanent Redirect"
        case 400: "Bad Request"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 410: "Gone"
        case 416: "Range Not Satisfiable"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        default: "Status \(status)"
        }
    }

    static func contentRange(_ range: Range<Int>, total: Int) -> String {
        "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(total)"
    }
}
