import Foundation

/// A calendar day as written (proleptic Gregorian), such as the `2024-10-01` of a pubDate,
/// kept apart from the instant so that a name shows the publisher's date, not UTC's.
struct CivilDate: Sendable, Equatable {
    var year: Int
    var month: Int
    var day: Int

    /// Nil unless the day exists (no 31 April, 29 February only in leap years).
    init?(year: Int, month: Int, day: Int) {
        guard (0...9999).contains(year), (1...12).contains(month),
              (1...Self.daysInMonth(month, year: year)).contains(day) else { return nil }
        self.year = year
        self.month = month
        self.day = day
    }

    /// `2024-10-01`
    var isoText: String {
        func padded(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(padded(year, 4))-\(padded(month, 2))-\(padded(day, 2))"
    }

    /// Days from 1970-01-01, negative before it (Howard Hinnant's days_from_civil).
    var daysSinceUnixEpoch: Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The instant of `hour:minute:second` on this day at `offsetSeconds` east of UTC.
    func date(hour: Int, minute: Int, second: Double, offsetSeconds: Int) -> Date {
        let seconds = Double(daysSinceUnixEpoch * 86_400 + hour * 3_600 + minute * 60 - offsetSeconds) + second
        return Date(timeIntervalSince1970: seconds)
    }

    static func daysInMonth(_ month: Int, year: Int) -> Int {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}

/// A parsed date-time: the instant, and the calendar day as it was written.
struct WrittenTimestamp: Sendable, Equatable {
    var date: Date
    var day: CivilDate
}

/// Reads fixed-width digit fields for the timestamp parsers.
struct DigitScanner {
    let bytes: [UInt8]
    var index = 0

    init(_ text: some StringProtocol) {
        bytes = Array(text.utf8)
    }

    var isAtEnd: Bool { index == bytes.count }

    func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

    /// Exactly `count` digits, or nil (without moving).
    mutating func digits(_ count: Int) -> Int? {
        guard bytes.count - index >= count else { return nil }
        var value = 0
        for byte in bytes[index..<index + count] {
            guard (0x30...0x39).contains(byte) else { return nil }
            value = value * 10 + Int(byte - 0x30)
        }
        index += count
        return value
    }

    /// Consumes `byte` if it is next.
    mutating func skip(_ byte: UInt8) -> Bool {
        guard peek() == byte else { return false }
        index += 1
        return true
    }
}
