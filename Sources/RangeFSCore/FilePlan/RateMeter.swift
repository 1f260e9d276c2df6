/// Bytes per second over the last few whole seconds, for progress displays.
struct RateMeter: Sendable {
    private static let window = 3
    private var buckets: [(second: Int64, bytes: UInt64)] = []

    mutating func record(_ bytes: Int, at now: ContinuousClock.Instant) {
        let second = Self.second(of: now)
        if let last = buckets.last, last.second == second {
            buckets[buckets.count - 1].bytes += UInt64(bytes)
        } else {
            buckets.append((second, UInt64(bytes)))
            if buckets.count > Self.window + 1 { buckets.removeFirst() }
        }
    }

    /// The average over the last complete seconds (the current, partial one is left out).
    func bytesPerSecond(at now: ContinuousClock.Instant) -> UInt64 {
        let current = Self.second(of: now)
        let recent = buckets.filter { $0.second < current && $0.second >= current - Int64(Self.window) }
        return recent.reduce(0) { $0 + $1.bytes } / UInt64(Self.window)
    }

    private static func second(of instant: ContinuousClock.Instant) -> Int64 {
        (instant - reference).components.seconds
    }

    private static let reference = ContinuousClock.now
}
