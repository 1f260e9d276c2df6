import Foundation

/// One request as nginx logged it.
struct AccessLogEntry: Sendable, CustomStringConvertible {
    let method: String
    /// The request URI as sent (percent-encoded, with any query).
    let uri: String
    /// The `Range` header, nil when absent.
    let range: String?
    /// The `If-Range` header, nil when absent.
    let ifRange: String?
    let status: Int
    let bodyBytesSent: Int
    /// Seconds since the epoch when the request finished (nginx's `$msec`).
    let finishedAt: Double
    let connection: Int
    /// Seconds nginx spent on the request.
    let requestTime: Double

    /// The path part of the URI, percent-decoded.
    var path: String {
        let raw = uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? uri
        return raw.removingPercentEncoding ?? raw
    }

    /// The byte ranges the `Range` header asked for (`bytes=a-b`, `bytes=a-`, `bytes=-n`);
    /// `fileSize` resolves open and suffix ranges. Empty when there is no usable header.
    func requestedRanges(fileSize: Int) -> [Range<Int>] {
        guard let range else { return [] }
        return ByteRanges.parse(range, fileSize: fileSize)
    }

    /// The bytes of the file this response actually carried: for a 206 with one range,
    /// the start of that range plus what nginx sent; for a 200 GET, the first
    /// `bodyBytesSent` bytes; nothing for other statuses and for HEAD.
    func servedRange(fileSize: Int) -> Range<Int>? {
        guard method == "GET", bodyBytesSent > 0 else { return nil }
        if status == 200 { return 0..<min(bodyBytesSent, fileSize) }
        guard status == 206 else { return nil }
        let asked = requestedRanges(fileSize: fileSize)
        guard asked.count == 1, let first = asked.first else { return nil }
        let end = min(first.upperBound, first.lowerBound + bodyBytesSent)
        return first.lowerBound..<end
    }

    var description: String {
        "\(method) \(uri) range=\(range ?? "-") if-range=\(ifRange ?? "-") -> \(status) \(bodyBytesSent)B conn=\(connection) \(requestTime)s"
    }
}

enum ByteRanges {
    static func parse(_ header: String, fileSize: Int) -> [Range<Int>] {
        let header = header.trimmingCharacters(in: .whitespaces)
        guard header.lowercased().hasPrefix("bytes=") else { return [] }
        var result: [Range<Int>] = []
        for spec in header.dropFirst(6).split(separator: ",") {
            let parts = spec.trimmingCharacters(in: .whitespaces)
                .split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else { continue }
            if parts[0].isEmpty {                     // suffix: last n bytes
                guard let n = Int(parts[1]), n > 0 else { continue }
                result.append(max(0, fileSize - n)..<fileSize)
            } else if let start = Int(parts[0]) {
                let last = parts[1].isEmpty ? fileSize - 1 : (Int(parts[1]) ?? fileSize - 1)
                let end = min(last + 1, fileSize)
                if start < end { result.append(start..<end) }
            }
        }
        return result
    }

    /// Pairs of ranges in `ranges` that share at least one byte.
    static func overlaps(_ ranges: [Range<Int>]) -> [(Range<Int>, Range<Int>)] {
        let sorted = ranges.sorted { $0.lowerBound < $1.lowerBound }
        var result: [(Range<Int>, Range<Int>)] = []
        var furthest: Range<Int>?
        for range in sorted {
            if let previous = furthest, previous.overlaps(range) { result.append((previous, range)) }
            if furthest == nil || range.upperBound > furthest!.upperBound { furthest = range }
        }
        return result
    }

    /// Total bytes covered by the union of `ranges`.
    static func unionSize(_ ranges: [Range<Int>]) -> Int {
        var total = 0
        var current: Range<Int>?
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let c = current, range.lowerBound <= c.upperBound {
                current = c.lowerBound..<max(c.upperBound, range.upperBound)
            } else {
                if let c = current { total += c.count }
                current = range
            }
        }
        if let c = current { total += c.count }
        return total
    }
}

/// The access log of an `NginxServer`: tab-separated, one request a line, written by nginx
/// when the request finishes.
struct AccessLog: Sendable {
    static let fields = ["$request_method", "$request_uri", "$http_range", "$http_if_range",
                         "$status", "$body_bytes_sent", "$msec", "$connection", "$request_time"]
    static var format: String { fields.joined(separator: "\t") }

    let path: String

    /// A position in the log; entries after it are "what happened since".
    struct Mark: Sendable { let offset: Int }

    /// Marks the current end of the log (after letting in-flight lines land).
    func mark() -> Mark {
        waitUntilQuiet()
        return Mark(offset: size())
    }

    /// All entries, or those written after `mark`.
    func entries(since mark: Mark? = nil) -> [AccessLogEntry] {
        guard let handle = FileHandle(forReadingAtPath: path) else { return [] }
        defer { try? handle.close() }
        if let mark { try? handle.seek(toOffset: UInt64(mark.offset)) }
        let data = (try? handle.readToEnd()) ?? Data()
        return String(decoding: data, as: UTF8.self)
            .split(separator: "\n")
            .compactMap { Self.parse(String($0)) }
    }

    /// Entries for one doc-root file (matched by decoded path, e.g. "/big.bin").
    func entries(for path: String, since mark: Mark? = nil) -> [AccessLogEntry] {
        entries(since: mark).filter { $0.path == path }
    }

    /// Waits until the log has not grown for `quiet` seconds (at most `timeout` seconds):
    /// nginx writes a line only when a request ends, a moment after the client saw its data.
    func waitUntilQuiet(quiet: Double = 0.3, timeout: Double = 5) {
        var last = size()
        var stableSince = Date()
        Poll.until(seconds: timeout, every: 0.05) {
            let now = size()
            if now != last {
                last = now
                stableSince = Date()
                return false
            }
            return Date().timeIntervalSince(stableSince) >= quiet
        }
    }

    private func size() -> Int {
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        return (attributes?[.size] as? NSNumber)?.intValue ?? 0
    }

    static func parse(_ line: String) -> AccessLogEntry? {
        let f = line.split(separator: "\t", omittingEmptySubsequences: false).map { unescape(String($0)) }
        guard f.count >= fields.count, let status = Int(f[4]) else { return nil }
        func optional(_ s: String) -> String? { s == "-" || s.isEmpty ? nil : s }
        return AccessLogEntry(method: f[0], uri: f[1], range: optional(f[2]), ifRange: optional(f[3]),
                              status: status, bodyBytesSent: Int(f[5]) ?? 0,
                              finishedAt: Double(f[6]) ?? 0, connection: Int(f[7]) ?? 0,
                              requestTime: Double(f[8]) ?? 0)
    }

    /// nginx's default log escaping writes `"`, `\` and control bytes as `\xHH`.
    static func unescape(_ s: String) -> String {
        guard s.contains("\\x") else { return s }
        let raw = Array(s.utf8)
        var bytes: [UInt8] = []
        var i = 0
        while i < raw.count {
            if raw[i] == 0x5C, i + 3 < raw.count, raw[i + 1] == 0x78,
               let v = UInt8(String(decoding: raw[(i + 2)...(i + 3)], as: UTF8.self), radix: 16) {
                bytes.append(v)
                i += 4
            } else {
                bytes.append(raw[i])
                i += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
