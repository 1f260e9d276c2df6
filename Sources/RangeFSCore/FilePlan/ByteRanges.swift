/// Byte-range arithmetic for deciding what is still to fetch.
extension Range where Bound == UInt64 {
    /// The parts of this range that none of `others` covers, in order.
    func subtracting(_ others: [Range<UInt64>]) -> [Range<UInt64>] {
        var pieces: [Range<UInt64>] = []
        var cursor = lowerBound
        for other in others.filter({ $0.overlaps(self) }).sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if other.lowerBound > cursor { pieces.append(cursor..<other.lowerBound) }
            cursor = Swift.max(cursor, other.upperBound)
            if cursor >= upperBound { return pieces }
        }
        if cursor < upperBound { pieces.append(cursor..<upperBound) }
        return pieces
    }
}

extension Array where Element == Range<UInt64> {
    /// The same bytes as sorted ranges, overlapping or touching ones joined.
    func merged() -> [Range<UInt64>] {
        var merged: [Range<UInt64>] = []
        for range in sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = merged.last, range.lowerBound <= last.upperBound {
                merged[merged.count - 1] = last.lowerBound..<Swift.max(last.upperBound, range.upperBound)
            } else {
                merged.append(range)
            }
        }
        return merged
    }
}
