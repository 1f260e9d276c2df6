/// Byte counts as people read them: `512 B`, `12.5 MiB`, `1.2 MiB/s`.
public enum HumanBytes {
    private static let units = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]

    /// Whole bytes below 1 KiB, else one decimal in the largest binary unit that keeps the
    /// number below 1024 after rounding (so 1048575 bytes is `1.0 MiB`, not `1024.0 KiB`).
    public static func format(_ bytes: UInt64) -> String {
        guard bytes >= 1024 else { return "\(bytes) B" }
        var unitSize = 1024.0
        for (index, unit) in units.enumerated() {
            let tenths = (Double(bytes) / unitSize * 10).rounded()
            if tenths < 10240 || index == units.count - 1 {
                let whole = Int(tenths)
                return "\(whole / 10).\(whole % 10) \(unit)"
            }
            unitSize *= 1024
        }
        return "\(bytes) B"  // not reached: the last unit always answers
    }

    /// A transfer rate; empty when nothing is moving, so idle rows stay quiet.
    public static func rate(_ bytesPerSecond: UInt64) -> String {
        bytesPerSecond == 0 ? "" : format(bytesPerSecond) + "/s"
    }
}
