/// Durations as people write them on a command line: `300` (seconds), `90s`, `5m`, `2h`, `1d`.
public enum DurationText {
    public static func parse(_ text: String) -> Duration? {
        let trimmed = text.trimmingASCIIWhitespace()
        let digits = trimmed.prefix { $0.isASCII && $0.isNumber }
        guard let unsigned = UInt64(decimalDigits: digits), let number = Int64(exactly: unsigned) else { return nil }
        let seconds: Int64
        switch trimmed.dropFirst(digits.count).lowercased() {
        case "", "s": seconds = 1
        case "m": seconds = 60
        case "h": seconds = 3600
        case "d": seconds = 86400
        default: return nil
        }
        let (value, overflow) = number.multipliedReportingOverflow(by: seconds)
        return overflow ? nil : .seconds(value)
    }
}
