/// Sizes as people write them: `262144`, `256K`, `256KiB`, `1M`, `2G`.
public enum ByteSize {
    public static func parse(_ text: String) -> UInt64? {
        let trimmed = text.trimmingASCIIWhitespace()
        let digits = trimmed.prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, let number = UInt64(decimalDigits: digits) else { return nil }
        let multiplier: UInt64
        switch trimmed.dropFirst(digits.count).uppercased() {
        case "", "B": multiplier = 1
        case "K", "KB", "KIB": multiplier = 1 << 10
        case "M", "MB", "MIB": multiplier = 1 << 20
        case "G", "GB", "GIB": multiplier = 1 << 30
        default: return nil
        }
        let (value, overflow) = number.multipliedReportingOverflow(by: multiplier)
        return overflow ? nil : value
    }
}
