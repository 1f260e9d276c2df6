import Testing
@testable import RangeFSCore

@Suite struct BackgroundRateBudgetTests {
    private static let start = ContinuousClock.now

    /// A reader that takes a `piece` whenever the budget lets it, looked at every `step` for
    /// `seconds`: the bytes it got.
    private static func greedyTotal(_ budget: BackgroundRateBudget, piece: Int, step: Duration, seconds: Int) -> Int {
        var total = 0
        var now = start
        let end = start + .seconds(seconds)
        while now < end {
            // As the loop does: every capped transfer that is let go takes one piece.
            for _ in 0..<3 where !budget.isSpent(at: now) {
                budget.take(piece, at: now)
                total += piece
            }
            now += step
        }
        return total
    }

    @Test func aBurstComesAtOnceThenTheBudgetIsSpent() {
        let budget = BackgroundRateBudget(bytesPerSecond: 2 << 20, now: Self.start)
        #expect(budget.burstBytes == (2 << 20) / 20)
        #expect(!budget.isSpent(at: Self.start))
        budget.take(Int(budget.burstBytes) - 1, at: Self.start)
        #expect(!budget.isSpent(at: Self.start), "one byte left")
        budget.take(16 << 10, at: Self.start)
        #expect(budget.isSpent(at: Self.start), "the piece that went over is taken, and the budget is spent")
    }

    @Test func manyTransfersTogetherKeepToTheRate() {
        let rate = 2 << 20
        let budget = BackgroundRateBudget(bytesPerSecond: UInt64(rate), now: Self.start)
        let total = Self.greedyTotal(budget, piece: 16 << 10, step: .milliseconds(1), seconds: 10)
        // 10 s at the rate, plus the first burst and at most one piece per transfer beyond it.
        #expect(total <= 10 * rate + Int(budget.burstBytes) + 3 * (16 << 10), "\(total) bytes")
        #expect(total >= 10 * rate * 95 / 100, "\(total) bytes: the budget gave less than the rate")
    }

    @Test func aSlowRateIsNotRoundedAway() {
        // 1,000 B/s looked at every 0.1 ms earns a tenth of a byte each time.
        let budget = BackgroundRateBudget(bytesPerSecond: 1000, now: Self.start)
        let total = Self.greedyTotal(budget, piece: 1024, step: .microseconds(100), seconds: 60)
        #expect(total <= 60_000 + Int(budget.burstBytes) + 3 * 1024, "\(total) bytes")
        #expect(total >= 60_000 * 95 / 100, "\(total) bytes")
    }

    @Test func onceSpentItWaitsForHalfABurstAndSaysHowLong() {
        let rate: UInt64 = 1 << 20
        let budget = BackgroundRateBudget(bytesPerSecond: rate, now: Self.start)
        budget.take(Int(budget.burstBytes), at: Self.start)
        #expect(budget.isSpent(at: Self.start))
        let wait = budget.timeUntilAvailable(at: Self.start)
        // Half a burst (26,214 of 52,428 bytes) at 1 MiB/s: 25 ms.
        #expect(wait > .milliseconds(24) && wait < .milliseconds(26), "\(wait)")
        #expect(budget.isSpent(at: Self.start + .milliseconds(10)), "a few bytes back do not let transfers go")
        #expect(budget.isSpent(at: Self.start + wait - .milliseconds(1)))
        #expect(!budget.isSpent(at: Self.start + wait + .microseconds(10)))
        #expect(budget.timeUntilAvailable(at: Self.start + wait + .microseconds(10)) == .zero)
    }

    @Test func anIdleBudgetKeepsNoMoreThanABurst() {
        let budget = BackgroundRateBudget(bytesPerSecond: 1 << 20, now: Self.start)
        let later = Self.start + .seconds(60)
        budget.take(Int(budget.burstBytes), at: later)
        #expect(budget.isSpent(at: later), "a minute of idling saved up nothing beyond the burst")
    }
}
