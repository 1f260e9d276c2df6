import Testing
@testable import RangeFSCore

@Suite struct CachedReadPaceTests {
    /// 1 MiB/s over 100 ms windows: 104,857 bytes a window.
    private static func pace() -> CachedReadPace {
        CachedReadPace(window: .milliseconds(100), quietBytesPerSecond: 1 << 20)
    }

    private static let millisecond: UInt64 = 1_000_000

    @Test func aWindowThatReachesTheRateSaysSoOnce() {
        let pace = Self.pace()
        let start = 5_000 * Self.millisecond
        var crossings: [Int] = []
        for read in 0..<40 where pace.noteRead(4096, at: start + UInt64(read) * Self.millisecond) {
            crossings.append(read)
        }
        // 26 reads of 4 KiB are 106,496 bytes: the 26th read (number 25) reaches the window's 104,857.
        #expect(crossings == [25])
    }

    @Test func readsSpreadOverManyWindowsNeverReachIt() {
        let pace = Self.pace()
        // 64 KiB every 100 ms is 640 KiB/s, below 1 MiB/s.
        for read in 0..<50 {
            #expect(!pace.noteRead(65_536, at: 1_000 * Self.millisecond + UInt64(read) * 100 * Self.millisecond))
        }
    }

    @Test func eachNewWindowCountsAfresh() {
        let pace = Self.pace()
        let start = 1_000 * Self.millisecond
        #expect(pace.noteRead(200_000, at: start))
        #expect(!pace.noteRead(200_000, at: start + 50 * Self.millisecond), "the same window said so already")
        #expect(pace.noteRead(200_000, at: start + 100 * Self.millisecond), "a new window")
        #expect(!pace.noteRead(50_000, at: start + 250 * Self.millisecond), "another, below the rate so far")
        #expect(pace.noteRead(60_000, at: start + 260 * Self.millisecond))
    }

    @Test func aReadStampedBeforeTheWindowBeganCountsInIt() {
        // Another worker may open a window with a later clock reading than this one's.
        let pace = Self.pace()
        let start = 1_000 * Self.millisecond
        #expect(!pace.noteRead(100_000, at: start))
        #expect(pace.noteRead(10_000, at: start - Self.millisecond))
    }
}
