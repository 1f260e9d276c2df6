import Synchronization
import Testing
@testable import RangeFSCore

@Suite struct ContentRangeTests {
    @Test(arguments: [
        ("bytes 0-0/1", 0..<1, UInt64?(1)),
        ("bytes 262144-524287/1048576", 262_144..<524_288, 1_048_576),
        ("BYTES 5-9/*", 5..<10, nil),
        ("  bytes 0-99/100\r\n", 0..<100, 100),
    ] as [(String, Range<UInt64>, UInt64?)])
    func parsesValidHeaders(header: String, range: Range<UInt64>, total: UInt64?) {
        #expect(ContentRange(headerValue: header) == ContentRange(range: range, total: total))
    }

    @Test(arguments: [
        "", "bytes", "bytes 0-0", "bytes 5-4/10", "bytes 0-10/10", "bytes -1-5/10", "bytes 0-5/-1",
        "items 0-5/10", "bytes 0- 5/10", "bytes 0x1-5/10", "bytes */10", "bytes 0-5/10/20",
        "bytes 0-99999999999999999999999/100000000000000000000000",
    ])
    func rejectsMalformedHeaders(header: String) {
        #expect(ContentRange(headerValue: header) == nil)
    }

    @Test func readsTheTotalOfAnUnsatisfiedRange() {
        #expect(ContentRange.unsatisfiedTotal(headerValue: "bytes */0") == 0)
        #expect(ContentRange.unsatisfiedTotal(headerValue: "bytes */1234") == 1234)
        #expect(ContentRange.unsatisfiedTotal(headerValue: "bytes 0-1/2") == nil)
    }
}

@Suite struct RemoteValidatorTests {
    @Test func strongETagIsSentAsIfRange() {
        #expect(RemoteValidator(etag: "\"abc\"", lastModified: "Sun, 22 Nov 2026 01:00:00 GMT").ifRangeValue == "\"abc\"")
    }

    @Test func aWeakETagSendsNothingAndADateAloneOnlyWhereItIsStrong() {
        #expect(RemoteValidator(etag: "W/\"abc\"", lastModified: "Sun, 22 Nov 2026 01:00:00 GMT", lastModifiedIsStrong: true).ifRangeValue == nil)
        #expect(RemoteValidator(etag: "W/\"abc\"", lastModified: nil).ifRangeValue == nil)
        #expect(RemoteValidator(etag: nil, lastModified: "Sun, 22 Nov 2026 01:00:00 GMT", lastModifiedIsStrong: true).ifRangeValue
            == "Sun, 22 Nov 2026 01:00:00 GMT")
        #expect(RemoteValidator(etag: nil, lastModified: "Sun, 22 Nov 2026 01:00:00 GMT").ifRangeValue == nil)
    }

    @Test func transientErrorsAreRetriedOthersAreNot() {
        #expect(RemoteError.status(503).isTransient)
        #expect(RemoteError.status(429).isTransient)
        #expect(RemoteError.transport("reset").isTransient)
        #expect(!RemoteError.status(404).isTransient)
        #expect(!RemoteError.changed("ETag").isTransient)
        #expect(!RemoteError.rangesNotSupported.isTransient)
    }
}

@Suite struct ByteSizeTests {
    @Test(arguments: [
        ("262144", UInt64?(262_144)), ("256K", 262_144), ("256k", 262_144), ("256KiB", 262_144),
        ("1M", 1_048_576), ("2G", 2_147_483_648), ("4096B", 4096), (" 8K ", 8192),
        ("", nil), ("K", nil), ("-1", nil), ("1.5M", nil), ("12Q", nil), ("99999999999999999999G", nil),
    ] as [(String, UInt64?)])
    func parses(text: String, expected: UInt64?) {
        #expect(ByteSize.parse(text) == expected)
    }
}

@Suite struct ReadAheadWindowTests {
    private let kib: UInt64 = 1024

    @Test func growsToTwiceWhatTheReaderReadInARowUpToTheMaximum() {
        var window = ReadAheadWindow(initial: 128 << 10, maximum: 4 << 20)
        var sizes: [UInt64] = []
        for index in 0..<20 {
            let start = UInt64(index) * (128 << 10)
            sizes.append(window.advise(read: start..<(start + (128 << 10))))
        }
        #expect(Array(sizes.prefix(4)) == [256 * kib, 512 * kib, 768 * kib, 1024 * kib])
        #expect(sizes[14] == 3840 * kib)
        #expect(sizes[15] == 4096 * kib)
        #expect(sizes.last == 4096 * kib)
    }

    @Test func aReaderOfAFilesFirstPagesGetsLittleMore() {
        // A tag reader: the kernel asks for 16 KiB at 0, then 48 KiB after it, and the reader leaves.
        var window = ReadAheadWindow(initial: 128 << 10, maximum: 16 << 20)
        #expect(window.advise(read: 0..<(16 << 10)) == 128 * kib)
        #expect(window.advise(read: (16 << 10)..<(64 << 10)) == 128 * kib)
        #expect(window.advise(read: (64 << 10)..<(192 << 10)) == 384 * kib)
    }

    @Test func slightlyOutOfOrderReadsKeepTheRun() {
        var window = ReadAheadWindow(initial: 128 << 10, maximum: 4 << 20)
        _ = window.advise(read: 0..<(128 << 10))
        _ = window.advise(read: (256 << 10)..<(384 << 10))
        // The kernel's read of the gap arrives late, from another FUSE thread.
        #expect(window.advise(read: (128 << 10)..<(256 << 10)) == 768 * kib)
    }

    @Test func aSeekStartsANewRunAtTheNewPlace() {
        var window = ReadAheadWindow(initial: 128 << 10, maximum: 4 << 20)
        _ = window.advise(read: 0..<(1 << 20))
        #expect(window.advise(read: (1 << 20)..<(2 << 20)) == 4 << 20)
        let far: UInt64 = 100 << 20
        #expect(window.advise(read: far..<(far + 4096)) == 0)
        #expect(window.advise(read: (far + 4096)..<(far + 8192)) == 128 * kib)
        #expect(window.advise(read: (far + 8192)..<(far + (512 << 10))) == 1024 * kib)
    }

    @Test func aFirstReadInTheMiddleGetsNoReadAhead() {
        var window = ReadAheadWindow()
        #expect(window.advise(read: (400 << 20)..<((400 << 20) + 4096)) == 0)
    }
}

@Suite struct ByteRangeSubtractionTests {
    @Test func nothingTakenLeavesTheWholeRange() {
        #expect((10..<20 as Range<UInt64>).subtracting([]) == [10..<20])
        #expect((10..<20 as Range<UInt64>).subtracting([0..<10, 20..<30]) == [10..<20])
    }

    @Test func takenPartsSplitTheRangeInOrder() {
        let pieces = (0..<100 as Range<UInt64>).subtracting([60..<70, 10..<20, 15..<25, 90..<200])
        #expect(pieces == [0..<10, 25..<60, 70..<90])
    }

    @Test func mergingJoinsOverlappingAndTouchingRanges() {
        let ranges: [Range<UInt64>] = [20..<30, 0..<5, 5..<8, 25..<40, 50..<60]
        #expect(ranges.merged() == [0..<8, 20..<40, 50..<60])
        #expect(([] as [Range<UInt64>]).merged().isEmpty)
    }

    @Test func aCoveringRangeLeavesNothing() {
        #expect((10..<20 as Range<UInt64>).subtracting([5..<12, 12..<20]).isEmpty)
        #expect((10..<20 as Range<UInt64>).subtracting([0..<100]).isEmpty)
    }
}

@Suite struct DurationTextTests {
    @Test(arguments: [
        ("300", Duration.seconds(300)), ("90s", .seconds(90)), ("5m", .seconds(300)), (" 2h ", .seconds(7200)),
        ("1d", .seconds(86400)), ("0", .zero),
    ])
    func durationsAsPeopleWriteThem(text: String, expected: Duration) {
        #expect(DurationText.parse(text) == expected)
    }

    @Test(arguments: ["", "m", "5 m", "-5m", "1.5h", "5w", "99999999999999999999"])
    func anythingElseIsNoDuration(text: String) {
        #expect(DurationText.parse(text) == nil)
    }
}

@Suite struct TransferControlTests {
    /// A transfer reads its purpose for every piece it receives (hundreds of thousands over a
    /// long stream): its raise handler must come through as it was given, not wrapped once more
    /// at each read (a chain that overflows the stack when it is called or freed).
    @Test func aControlReadForEveryPieceOfALongStreamStillCallsItsHandlerAndIsFreed() {
        final class Calls: Sendable { let count = Mutex(0) }
        let calls = Calls()
        do {
            let control = TransferControl(.background)
            control.whenRaised { calls.count.withLock { $0 += 1 } }
            for _ in 0..<300_000 where control.purpose == .reader || control.end != nil {
                Issue.record("nothing raised or cut it yet")
            }
            control.endEarly(at: 4096)
            control.raise()
            control.raise()
            #expect(control.purpose == .reader && control.end == 4096)
        }
        #expect(calls.count.withLock { $0 } == 1)
    }
}

@Suite struct HandOverTests {
    /// A held transfer giving its connection up takes what already arrived: at least
    /// `least`, until no byte came for `settle`, and never longer than `longest`.
    @Test func aHandOverEndsOnceItsBytesStopComingOrItsTimeIsUp() {
        let began = ContinuousClock.now
        let handOver = HandOver(began: began)
        #expect(!handOver.isOver(lastBodyAt: nil, now: began + .milliseconds(1)), "too soon")
        #expect(handOver.isOver(lastBodyAt: nil, now: began + HandOver.least), "nothing came")
        let lastByte = began + .milliseconds(10)
        #expect(!handOver.isOver(lastBodyAt: lastByte, now: lastByte + .milliseconds(1)), "bytes still coming")
        #expect(handOver.isOver(lastBodyAt: lastByte, now: lastByte + HandOver.settle), "they stopped")
        let late = began + HandOver.longest
        #expect(handOver.isOver(lastBodyAt: late, now: late), "its time is up")
    }

    /// Bytes the socket still holds keep it going, however long ago the loop last read (a loaded
    /// machine's loop may not run for longer than `settle`); `longest` still bounds the wait.
    @Test func bytesTheSocketHoldsKeepAHandOverGoingUntilItsTimeIsUp() {
        let began = ContinuousClock.now
        let handOver = HandOver(began: began)
        let lastByte = began + .milliseconds(1)
        let quiet = lastByte + HandOver.settle * 4
        #expect(handOver.isOver(lastBodyAt: lastByte, unreadBytes: 0, now: quiet), "nothing left: it ends")
        #expect(!handOver.isOver(lastBodyAt: lastByte, unreadBytes: 65_536, now: quiet), "64 KiB still in the socket")
        #expect(handOver.isOver(lastBodyAt: lastByte, unreadBytes: 65_536, now: began + HandOver.longest), "its time is up")
        // Only the last one is counted as a hand-over that ran out of time (bytes asked for again).
        #expect(!handOver.ranOutOfTime(now: quiet) && handOver.ranOutOfTime(now: began + HandOver.longest))
    }
}

@Suite struct ReceiveBufferTests {
    @Test func anUncappedRangeReadsInLargePieces() {
        #expect(CurlTransfer.receiveBufferBytes(cappedAt: nil) == CurlTransfer.receiveBufferBytes)
    }

    /// The rate budget is asked at every piece, so a piece must stay a small part of a second's
    /// worth; but never below a TLS record (16 KiB), or bytes wait inside TLS unseen.
    @Test(arguments: [UInt64(349_525), 699_050, 8 << 20, 100 << 20, 10 << 30])
    func aCappedRangeReadsAboutAMillisecondsWorthAtATime(rate: UInt64) {
        let bytes = CurlTransfer.receiveBufferBytes(cappedAt: rate)
        #expect(bytes >= 16 << 10 && bytes <= CurlTransfer.receiveBufferBytes)
        #expect(UInt64(bytes) <= max(rate / 1000, 16 << 10), "\(bytes) bytes a read at \(rate) B/s")
    }
}
