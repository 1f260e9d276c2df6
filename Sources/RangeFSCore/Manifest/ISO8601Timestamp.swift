import Foundation

/// Parses the ISO 8601 forms manifests use: `2024-05-01`, `2024-05-01T12:00:00Z`,
/// `2024-05-01 12:00:00.250+02:00`. Without a zone the time is taken as UTC, so the
/// result never depends on the machine's time zone.
enum ISO8601Timestamp {
    static func parse(_ text: some StringProtocol) -> WrittenTimestamp? {
        var scanner = DigitScanner(text)
        guard let year = scanner.digits(4), scanner.skip(UInt8(ascii: "-")),
              let month = scanner.digits(2), scanner.skip(UInt8(ascii: "-")),
              let dayOfMonth = scanner.digits(2),
              let day = CivilDate(year: year, month: month, day: dayOfMonth)
        else { return nil }
        if scanner.isAtEnd {
            return WrittenTimestamp(date: day.date(hour: 0, minute: 0, second: 0, offsetSeconds: 0), day: day)
        }
        guard scanner.skip(UInt8(ascii: "T")) || scanner.skip(UInt8(ascii: "t")) || scanner.skip(UInt8(ascii: " ")),
              let hour = scanner.digits(2), hour < 24, scanner.skip(UInt8(ascii: ":")),
              let minute = scanner.digits(2), minute < 60
        else { return nil }
        var second = 0.0
        if scanner.skip(UInt8(ascii: ":")) {
            guard let whole = scanner.digits(2), whole <= 60 else { return nil }  // 60: a leap second
            second = Double(whole)
            if scanner.skip(UInt8(ascii: ".")) || scanner.skip(UInt8(ascii: ",")) {
                var scale = 0.1
                var any = false
                while let digit = scanner.digits(1) {
                    second += Double(digit) * scale
                    scale /= 10
                    any = true
                }
                guard any else { return nil }
            }
        }
        guard let offset = zoneOffset(&scanner), scanner.isAtEnd else { return nil }
        return WrittenTimestamp(date: day.date(hour: hour, minute: minute, second: second, offsetSeconds: offset), day: day)
    }

    /// Seconds east of UTC for `Z`, `+02:00`, `+0200`, `+02`, or nothing (UTC).
    private static func zoneOffset(_ scanner: inout DigitScanner) -> Int? {
        if scanner.isAtEnd || scanner.skip(UInt8(ascii: "Z")) || scanner.skip(UInt8(ascii: "z")) { return 0 }
        let sign: Int
        if scanner.skip(UInt8(ascii: "+")) {
            sign = 1
        } else if scanner.skip(UInt8(ascii: "-")) {
            sign = -1
        } else {
            return nil
        }
        guard let hours = scanner.digits(2), hours <= 23 else { return nil }
        var minutes = 0
        if !scanner.isAtEnd {
            _ = scanner.skip(UInt8(ascii: ":"))
            guard let value = scanner.digits(2), value < 60 else { return nil }
            minutes = value
        }
        return sign * (hours * 3_600 + minutes * 60)
    }
}
