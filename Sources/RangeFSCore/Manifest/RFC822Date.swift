import Foundation

/// Parses the RFC 822/2822 dates of RSS `<pubDate>`, such as `Tue, 01 Oct 2024 08:00:00 -0700`,
/// with the leniency real feeds need: optional weekday, full month names, two-digit
/// years, missing seconds, and zones written as names or left out.
enum RFC822Date {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// Hours east of UTC for the zone names RFC 822 defines.
    private static let namedZones: [String: Int] = [
        "UT": 0, "UTC": 0, "GMT": 0, "Z": 0,
        "EST": -5, "EDT": -4, "CST": -6, "CDT": -5, "MST": -7, "MDT": -6, "PST": -8, "PDT": -7,
    ]

    static func parse(_ text: String) -> WrittenTimestamp? {
        // Split the bytes: Character's white-space test is slow, and dates are ASCII.
        var tokens = text.utf8.split(whereSeparator: { $0 == UInt8(ascii: ",") || ASCII.isWhitespace($0) })
            .map { Substring($0) }[...]
        if let first = tokens.first, first.first?.isLetter == true { tokens = tokens.dropFirst() }  // weekday
        guard tokens.count >= 3,
              let dayOfMonth = Int(tokens[tokens.startIndex]),
              let month = monthNumber(tokens[tokens.startIndex + 1]),
              let year = fullYear(tokens[tokens.startIndex + 2]),
              let day = CivilDate(year: year, month: month, day: dayOfMonth)
        else { return nil }
        tokens = tokens.dropFirst(3)
        var hour = 0, minute = 0, second = 0
        if let time = tokens.first, time.utf8.contains(UInt8(ascii: ":")) {  // not Foundation's `contains`: `NSString`
            let fields = time.split(separator: ":", omittingEmptySubsequences: false).map { Int($0) }
            guard (2...3).contains(fields.count), let h = fields[0], let m = fields[1],
                  (0..<24).contains(h), (0..<60).contains(m) else { return nil }
            hour = h
            minute = m
            if fields.count == 3 {
                guard let s = fields[2], (0...60).contains(s) else { return nil }
                second = s
            }
            tokens = tokens.dropFirst()
        }
        // An unknown or missing zone is read as UTC: the day written in the feed is what names the file.
        let offset = tokens.first.flatMap(zoneOffset) ?? 0
        return WrittenTimestamp(date: day.date(hour: hour, minute: minute, second: Double(second), offsetSeconds: offset), day: day)
    }

    private static func monthNumber(_ token: Substring) -> Int? {
        guard token.count >= 3, token.allSatisfy(\.isLetter) else { return nil }
        return months.firstIndex(of: token.prefix(3).lowercased()).map { $0 + 1 }
    }

    /// RFC 2822's reading of short years: 00–49 are 2000–2049, 50–99 and three digits add 1900.
    private static func fullYear(_ token: Substring) -> Int? {
        guard token.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) }), let value = Int(token) else { return nil }
        switch token.count {
        case 2: return value < 50 ? 2000 + value : 1900 + value
        case 3: return 1900 + value
        case 4: return value
        default: return nil
        }
    }

    /// Seconds east of UTC for `+0200`, `-07:00` or a zone name.
    private static func zoneOffset(_ token: Substring) -> Int? {
        if let hours = namedZones[token.uppercased()] { return hours * 3_600 }
        guard let sign = token.first, sign == "+" || sign == "-" else { return nil }
        let digits = token.dropFirst().filter { $0 != ":" }
        guard digits.count == 4, digits.allSatisfy(\.isASCII), let value = Int(digits) else { return nil }
        let hours = value / 100, minutes = value % 100
        guard hours < 24, minutes < 60 else { return nil }
        return (sign == "-" ? -1 : 1) * (hours * 3_600 + minutes * 60)
    }
}
