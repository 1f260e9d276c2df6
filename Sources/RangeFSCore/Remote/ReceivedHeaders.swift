import CCurl
import Foundation

/// The header lines of the latest response of a transfer, as libcurl hands them over one by
/// one, and what the transfer reads from them.
struct ReceivedHeaders {
    /// Names in lowercase, in arrival order.
    private(set) var lines: [(name: String, value: String)] = []

    /// Takes one raw header line; a status line (a redirect, `100 Continue`) starts a new set.
    mutating func take(_ line: UnsafeRawBufferPointer) {
        let text = String(decoding: line, as: UTF8.self).trimmingASCIIWhitespace()
        if text.hasPrefix("HTTP/") {
            lines.removeAll()
            return
        }
        guard let colon = text.firstIndex(of: ":") else { return }
        let name = text[..<colon].lowercased()
        let value = text[text.index(after: colon)...].trimmingASCIIWhitespace()
        lines.append((name, value))
    }

    /// A header's value, or nil; the first one if repeated.
    func value(of name: String) -> String? {
        let key = name.lowercased()
        return lines.first { $0.name == key }?.value
    }

    /// `Last-Modified` as a date, for the file's mtime.
    var lastModified: Date? {
        guard let text = value(of: "Last-Modified") else { return nil }
        let seconds = curl_getdate(text, nil)
        return seconds > 0 ? Date(timeIntervalSince1970: TimeInterval(seconds)) : nil
    }

    /// `Retry-After` as a delay: seconds, or an HTTP date (a day at most).
    var retryAfter: Duration? {
        guard let text = value(of: "Retry-After") else { return nil }
        if let seconds = UInt64(decimalDigits: text) { return .seconds(min(seconds, 86_400)) }
        let date = curl_getdate(text, nil)
        guard date > 0 else { return nil }
        return .seconds(max(0, min(Int64(date) - Int64(time(nil)), 86_400)))
    }
}
