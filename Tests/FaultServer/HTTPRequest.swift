import Foundation

/// A parsed request head.
struct HTTPRequest: Sendable {
    let method: String
    /// As sent: origin form (`/a/b?x`) or absolute form (`http://host/a/b`).
    let target: String
    let version: String
    let headers: [HeaderField]
    let receivedAt: Date

    /// The percent-decoded path without query: the key files are published under.
    var path: String {
        var rest = Substring(target)
        if let scheme = rest.range(of: "://") {   // absolute form, as sent to a proxy
            rest = rest[scheme.upperBound...]
            rest = rest.firstIndex(of: "/").map { rest[$0...] } ?? "/"
        }
        if let query = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) { rest = rest[..<query] }
        return String(rest).removingPercentEncoding ?? String(rest)
    }

    /// HTTP/1.1 keeps the connection unless asked not to; HTTP/1.0 closes unless asked to keep it.
    var wantsClose: Bool {
        let connection = headers.value(of: "Connection")?.lowercased() ?? ""
        if version == "HTTP/1.0" { return !connection.contains("keep-alive") }
        return connection.contains("close")
    }

    enum ParseError: Error, Equatable {
        case malformed(String)
    }

    /// Parses the bytes before the blank line (the terminating CRLF CRLF excluded).
    static func parse(head: ArraySlice<UInt8>, receivedAt: Date = Date()) throws(ParseError) -> HTTPRequest {
        // Split bytes, not a String: Swift reads "\r\n" as one Character.
        let lines = head.split(separator: 0x0A, omittingEmptySubsequences: false).map { line in
            String(decoding: line.last == 0x0D ? line.dropLast() : line, as: UTF8.self)
        }
        guard let requestLine = lines.first else { throw .malformed("empty request") }
        let parts = requestLine.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 3, parts[2].hasPrefix("HTTP/1."),
              parts[0].allSatisfy({ $0.isLetter && $0.isUppercase }) else {
            throw .malformed("bad request line: \(requestLine.prefix(200))")
        }
        var headers: [HeaderField] = []
        for line in lines.dropFirst() where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
                throw .malformed("bad header line: \(line.prefix(200))")
            }
            headers.append(HeaderField(String(line[..<colon]),
                                       line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        return HTTPRequest(method: String(parts[0]), target: String(parts[1]), version: String(parts[2]),
                           headers: headers, receivedAt: receivedAt)
    }
}
