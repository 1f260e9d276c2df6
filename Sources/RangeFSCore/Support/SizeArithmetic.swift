/// Arithmetic on sizes that cannot overflow, whatever a server states.
extension UInt64 {
    /// How many units of `unit` bytes hold `self` bytes (the last one partly filled), without
    /// the `+ unit - 1` that overflows near the top of the range.
    func unitsRoundedUp(of unit: UInt64) -> UInt64 {
        self / unit + (self % unit == 0 ? 0 : 1)
    }
}

extension Sequence {
    /// The sum of `value` over the elements, held at `UInt64.max` rather than overflowing:
    /// sizes summed for totals (statfs, status) are servers' claims.
    func saturatingSum(_ value: (Element) -> UInt64) -> UInt64 {
        reduce(UInt64(0)) { total, element in
            let (sum, overflow) = total.addingReportingOverflow(value(element))
            return overflow ? .max : sum
        }
    }
}
