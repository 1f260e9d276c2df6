import Foundation

/// One header line, name as the peer spelled it.
public struct HeaderField: Sendable, Equatable, CustomStringConvertible {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }

    public var description: String { "\(name): \(value)" }
}

extension [HeaderField] {
    /// The first value of `name`, compared case-insensitively (HTTP field names are).
    public func value(of name: String) -> String? {
        first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}

/// What the server received and what it answered, for assertions such as "no request
/// asked for cached bytes" or "exactly one retry".
public struct RecordedRequest: Sendable, CustomStringConvertible {
    /// Increases with every request, across connections.
    public let id: Int
    /// The accepted connection (1, 2, …) the request came on: equal numbers mean a reused connection.
    public let connection: Int
    public let method: String
    /// The request target as sent, query and percent-escapes included.
    public let target: String
    /// The decoded path without the query: the key `publish` used.
    public let path: String
    public let headers: [HeaderField]
    public let range: String?
    public let ifRange: String?
    public let receivedAt: Date
    /// The status line's code; 0 when no valid status line was sent.
    public internal(set) var status: Int
    /// Body bytes actually written to the socket (grows while a slow body is sent).
    public internal(set) var bodyBytesSent: Int
    public let fault: Fault?
    /// False while the response is still being sent (or stalled).
    public internal(set) var finished: Bool

    public func header(_ name: String) -> String? { headers.value(of: name) }

    public var description: String {
        var text = "#\(id) conn \(connection) \(method) \(target)"
        if let range { text += " Range: \(range)" }
        if let ifRange { text += " If-Range: \(ifRange)" }
        text += " -> \(status), \(bodyBytesSent) body bytes"
        if let fault { text += " [\(fault)]" }
        if !finished { text += " (unfinished)" }
        return text
    }
}
