import Foundation

/// One version of a file: its bytes and the validators that name this version.
struct PublishedFile: Sendable {
    let bytes: [UInt8]
    /// The `ETag` header value, quotes (and `W/`) included.
    let etag: String
    /// The `Last-Modified` header value (IMF-fixdate).
    let lastModified: String

    var isWeak: Bool { etag.hasPrefix("W/") }

    /// `tag` may come with or without its quotes; `weak` adds the `W/` prefix.
    static func etagValue(_ tag: String, weak: Bool) -> String {
        let quoted = tag.hasPrefix("\"") || tag.hasPrefix("W/") ? tag : "\"\(tag)\""
        return weak && !quoted.hasPrefix("W/") ? "W/" + quoted : quoted
    }
}

/// Hands out default validators that differ on every publish. `Last-Modified` has
/// one-second resolution, so two publishes within the same second would otherwise carry
/// the same date and an `If-Range` date would wrongly match the newer version: each
/// default date is at least one second after the previous one.
struct ValidatorClock: Sendable {
    private var generation = 0
    private var lastSecond: Int64 = 0
    /// Distinguishes servers, so two servers never invent the same tag for different bytes.
    private let instance = String(UInt32.random(in: .min ... .max), radix: 16)

    mutating func nextTag(size: Int) -> String {
        generation += 1
        return "\(instance)-\(generation)-\(String(size, radix: 16))"
    }

    mutating func nextDate(now: Date = Date()) -> Date {
        let second = max(Int64(now.timeIntervalSince1970.rounded(.down)), lastSecond + 1)
        lastSecond = second
        return Date(timeIntervalSince1970: TimeInterval(second))
    }
}
