import Foundation

/// The little of HTTP/1.x the metrics listener speaks: read a request head, answer it.
enum MetricsHTTP {
    struct Reply: Equatable {
        var status: String
        var contentType = "text/plain; charset=utf-8"
        var body = ""

        var bytes: [UInt8] {
            let payload = Array(body.utf8)
            let head = "HTTP/1.1 \(status)\r\nContent-Type: \(contentType)\r\nContent-Length: \(payload.count)\r\n"
                + "Connection: close\r\n\r\n"
            return Array(head.utf8) + payload
        }
    }

    enum ReadHead: Equatable {
        /// The request line and headers, up to the blank line.
        case head(String)
        /// More than `MetricsListener.maxRequestBytes` without the blank line.
        case tooLarge
        /// The client hung up, timed out or failed before the blank line.
        case incomplete
    }

    /// Reads a request head; a body, if any, is ignored (`GET` has none).
    static func readHead(from client: UnixSocket, until deadline: ContinuousClock.Instant) -> ReadHead {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 2048)
        // Bounded: each pass ends or adds at least one byte, and at most maxRequestBytes + 2048 are kept.
        while bytes.count <= MetricsListener.maxRequestBytes {
            let remaining = deadline - .now
            guard remaining > .zero else { return .incomplete }
            client.limitWaits(to: remaining)
            let count = chunk.withUnsafeMutableBytes { recv(client.descriptor, $0.baseAddress, $0.count, 0) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return .incomplete }
            bytes += chunk[..<count]
            if let end = headEnd(bytes) { return .head(String(decoding: bytes[..<end], as: UTF8.self)) }
        }
        return .tooLarge
    }

    private static func headEnd(_ bytes: [UInt8]) -> Int? {
        let marker: [UInt8] = [13, 10, 13, 10]
        guard bytes.count >= marker.count else { return nil }
        return (0...(bytes.count - marker.count)).first { bytes[$0..<($0 + marker.count)].elementsEqual(marker) }
    }

    /// The answer to one request head. `GET /metrics` (a query string is ignored) gets the
    /// exposition; `HEAD` the same without a body would need more care than scrapers need.
    static func reply(to head: String, body: () -> String) -> Reply {
        let requestLine = head.split(separator: "\r\n", maxSplits: 1).first ?? ""
        let parts = requestLine.split(separator: " ")
        guard parts.count == 3, parts[2].hasPrefix("HTTP/1.") else { return Reply(status: "400 Bad Request", body: "bad request\n") }
        guard parts[0] == "GET" else { return Reply(status: "405 Method Not Allowed", body: "only GET /metrics\n") }
        let path = parts[1].split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        guard path == "/metrics" else { return Reply(status: "404 Not Found", body: "only GET /metrics\n") }
        return Reply(status: "200 OK", contentType: "text/plain; version=0.0.4; charset=utf-8", body: body())
    }
}
