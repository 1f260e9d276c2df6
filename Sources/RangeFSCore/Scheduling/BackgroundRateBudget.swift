/// `--max-rate` for the background as a whole: a token bucket every capped transfer's bytes are
/// taken from. libcurl's own cap (`CURLOPT_MAX_RECV_SPEED_LARGE`) is per transfer and checked
/// only between runs of reads, so a short transfer (a head or a tail) comes whole before its first
/// check, and a collection's heads together went well over the cap (docs/benchmarks.md). Here a
/// capped transfer pauses itself in its write callback while the budget is spent, and a capped
/// transfer waiting to start stays waiting; the loop lets them go when it refills. libcurl's cap
/// stays on each transfer too (the rate ÷ `--max-downloads`): it shares the rate between them.
///
/// Loop thread only (the write callbacks run inside `curl_multi_perform` on that thread): no lock.
final class BackgroundRateBudget {
    let bytesPerSecond: UInt64
    /// What may come at once after a pause: 50 ms worth, at least one of libcurl's pieces.
    let burstBytes: Int64
    /// Bytes that may still come now; negative once a piece took more than was left.
    private var available: Int64
    private var refilledAt: ContinuousClock.Instant
    /// Once spent, capped transfers stand still until half a burst is back, so the loop wakes
    /// for them every 25 ms or so, not for each byte earned.
    private var spent = false

    init(bytesPerSecond: UInt64, now: ContinuousClock.Instant = .now) {
        self.bytesPerSecond = max(1, bytesPerSecond)
        burstBytes = max(Int64(self.bytesPerSecond / 20), 16 << 10)
        available = burstBytes
        refilledAt = now
    }

    /// Whether capped transfers must stand still until the budget refills.
    func isSpent(at now: ContinuousClock.Instant = .now) -> Bool {
        refill(at: now)
        if available <= 0 { spent = true } else if available >= resumesAt { spent = false }
        return spent
    }

    /// Takes `bytes` a capped transfer received (the piece is taken whole, so the budget may go
    /// below zero; the transfers then stand still until it is paid back).
    func take(_ bytes: Int, at now: ContinuousClock.Instant = .now) {
        refill(at: now)
        available -= Int64(bytes)
    }

    /// How long until capped transfers may go on (zero when they may now).
    func timeUntilAvailable(at now: ContinuousClock.Instant = .now) -> Duration {
        guard isSpent(at: now) else { return .zero }
        let owed = Double(resumesAt - available)
        return .nanoseconds(Int64((owed / Double(bytesPerSecond) * 1e9).rounded(.up)))
    }

    private var resumesAt: Int64 { max(1, burstBytes / 2) }

    private func refill(at now: ContinuousClock.Instant) {
        guard now > refilledAt else { return }
        let seconds = (now - refilledAt).timeInterval
        let earned = Int64(seconds * Double(bytesPerSecond))
        guard earned > 0 else { return }
        if available + earned >= burstBytes {
            available = burstBytes
            refilledAt = now
        } else {
            // Only the time of the whole bytes earned is used up, so a slow rate is not rounded away.
            available += earned
            refilledAt += .nanoseconds(Int64(Double(earned) / Double(bytesPerSecond) * 1e9))
        }
    }
}
