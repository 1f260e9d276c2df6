import Foundation

/// Reads requests off one connection. Keeps bytes that arrive after one request's head
/// for the next (pipelining), bounds the head's size and every wait.
struct RequestReader {
    let socket: ConnectionSocket
    let stop: StopSignal
    let limits: ServerLimits
    private var buffer: [UInt8] = []

    init(socket: ConnectionSocket, stop: StopSignal, limits: ServerLimits) {
        self.socket = socket
        self.stop = stop
        self.limits = limits
    }

    enum Outcome {
        case request(HTTPRequest)
        /// The peer closed, went silent, or the server is stopping: end quietly.
        case finished
        /// Answer 400 / 431 and close.
        case malformed(String)
        case headTooLarge
    }

    mutating func next() -> Outcome {
        var searchFrom = 0
        while true {
            if let end = Self.endOfHead(in: buffer, from: searchFrom) {
                if end.headEnd > limits.maxHeadBytes { return .headTooLarge }
                let head = buffer[..<end.headEnd]
                let parsed: HTTPRequest
                do { parsed = try HTTPRequest.parse(head: head) } catch {
                    switch error { case .malformed(let why): return .malformed(why) }
                }
                buffer.removeFirst(end.bodyStart)
                return discardBody(of: parsed)
            }
            if buffer.count > limits.maxHeadBytes { return .headTooLarge }
            searchFrom = max(0, buffer.count - 2)
            switch socket.receive(into: &buffer, timeout: limits.idleTimeout, stop: stop) {
            case .received: continue
            case .closed, .timedOut, .stopped: return .finished
            }
        }
    }

    /// Requests with a body (none expected here) have it read and dropped, within limits.
    private mutating func discardBody(of request: HTTPRequest) -> Outcome {
        if request.headers.value(of: "Transfer-Encoding") != nil {
            return .malformed("chunked request bodies are not supported")
        }
        guard let lengthText = request.headers.value(of: "Content-Length") else { return .request(request) }
        guard let length = Int(lengthText), length >= 0, length <= limits.maxRequestBodyBytes else {
            return .malformed("unacceptable request Content-Length \(lengthText)")
        }
        while buffer.count < length {
            switch socket.receive(into: &buffer, timeout: limits.idleTimeout, stop: stop) {
            case .received: continue
            case .closed, .timedOut, .stopped: return .finished
            }
        }
        buffer.removeFirst(length)
        return .request(request)
    }

    /// Where the head ends and the body starts: at the blank line, CRLF CRLF (or LF LF
    /// from sloppy clients). The head keeps the CR of its last line; parsing drops it.
    private static func endOfHead(in bytes: [UInt8], from start: Int) -> (headEnd: Int, bodyStart: Int)? {
        var i = start
        while i + 1 < bytes.count {
            if bytes[i] == 0x0A {
                if bytes[i + 1] == 0x0A { return (i, i + 2) }
                if bytes[i + 1] == 0x0D, i + 2 < bytes.count, bytes[i + 2] == 0x0A { return (i, i + 3) }
            }
            i += 1
        }
        return nil
    }
}

/// Bounds on what one connection may cost.
struct ServerLimits: Sendable {
    /// How long a connection may stay silent (between requests, or inside one).
    var idleTimeout: Duration = .seconds(30)
    /// How long a peer may refuse to accept bytes before the response is abandoned.
    var sendTimeout: Duration = .seconds(30)
    var maxHeadBytes = 64 * 1024
    var maxRequestBodyBytes = 1024 * 1024
}
