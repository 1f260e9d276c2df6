import Foundation
import Testing
@testable import RangeFSCore

/// The speed a reader's request tells its host when it ends: what its reply brought after its
/// first burst, from the reply's first byte to its end (the first burst came at once: over TLS a
/// whole record arrives before its first byte shows).
@Suite struct FilePlanTransferSpeedTests {
    static let start = ContinuousClock.now
    static let firstByte = start + .milliseconds(300)

    /// A transfer asked for `asked`, started at `start`; its first 64 KiB came at `firstByte`.
    static func transfer(asked: Range<UInt64>, writtenAtStart: UInt64 = 0, written: UInt64) -> FilePlan.Transfer {
        var transfer = FilePlan.Transfer(bytes: asked, blocks: 0..<4)
        transfer.attemptStarted = (start, writtenAtStart)
        transfer.rateSample = (firstByte, writtenAtStart + 65_536)
        transfer.written = written
        return transfer
    }

    @Test func aWholeReplyCountsFromItsFirstByteWithoutItsFirstBurst() throws {
        // 960 KiB in the 250 ms after the first 64 KiB, which came 300 ms after the request:
        // 3.75 MiB/s, neither 1 MiB / 550 ms nor 1 MiB / 250 ms.
        let reply = Self.transfer(asked: 0..<1 << 20, written: 1 << 20)
        let speed = try #require(reply.replyBytesPerSecond(at: Self.firstByte + .milliseconds(250)))
        #expect(abs(speed - 3_932_160) < 1)
    }

    @Test func aReplyCutShortCountsOnlyWhatItBrought() throws {
        // Asked for 1 MiB, cut after 256 KiB: 192 KiB after the first burst in 250 ms, not the
        // 3.75 MiB/s its range would say.
        let reply = Self.transfer(asked: 0..<1 << 20, written: 256 << 10)
        let speed = try #require(reply.replyBytesPerSecond(at: Self.firstByte + .milliseconds(250)))
        #expect(abs(speed - 786_432) < 1)
    }

    @Test func aRetryCountsOnlyItsOwnAttemptsBytes() throws {
        // 512 KiB came in an earlier attempt; this one brought 256 KiB, 192 KiB of them in the
        // 250 ms after its first burst.
        let reply = Self.transfer(asked: 512 << 10..<1 << 20, writtenAtStart: 512 << 10, written: 768 << 10)
        let speed = try #require(reply.replyBytesPerSecond(at: Self.firstByte + .milliseconds(250)))
        #expect(abs(speed - 786_432) < 1)
    }

    @Test func aFewBytesAfterTheFirstBurstLeaveItCounted() throws {
        // 8 KiB after a 64 KiB burst say too little: the whole reply counts, over its time.
        let reply = Self.transfer(asked: 0..<73_728, written: 73_728)
        let speed = try #require(reply.replyBytesPerSecond(at: Self.firstByte + .milliseconds(10)))
        #expect(abs(speed - 7_372_800) < 1)
    }

    @Test func bytesThatCameAtOnceAreFastNotInfinitelySo() throws {
        let reply = Self.transfer(asked: 0..<65_536, written: 65_536)
        let speed = try #require(reply.replyBytesPerSecond(at: Self.firstByte))
        #expect(speed == 65_536 / FilePlan.Transfer.shortestMeasure)
    }

    @Test func aReplyOfAFewBytesTellsNothing() {
        // A 1-byte file's whole reply, at once: not 1,000 B/s (a byte per shortest measure).
        var reply = FilePlan.Transfer(bytes: 0..<1, blocks: 0..<1)
        reply.attemptStarted = (Self.start, 0)
        reply.rateSample = (Self.firstByte, 1)
        reply.written = 1
        #expect(reply.replyBytesPerSecond(at: Self.firstByte) == nil)
        reply = FilePlan.Transfer(bytes: 0..<16_384, blocks: 0..<1)
        reply.attemptStarted = (Self.start, 0)
        reply.rateSample = (Self.firstByte, 16_384)
        reply.written = 16_384
        #expect(reply.replyBytesPerSecond(at: Self.firstByte + .milliseconds(2)) == 8_192_000, "16 KiB in 2 ms still counts")
    }

    @Test func aReplyWithoutAByteTellsNothing() {
        var reply = FilePlan.Transfer(bytes: 0..<65_536, blocks: 0..<1)
        reply.attemptStarted = (Self.start, 0)
        #expect(reply.replyBytesPerSecond(at: Self.firstByte) == nil)
    }
}

/// A host's speed: the fastest recent measure, but a sustained one (over `HostRates.sustainedSpan`)
/// outranks every shorter one, whose bytes' uneven arrival (TLS records that came together) can
/// make a short reply look far faster than its link.
@Suite struct HostRatesTests {
    static let host = "https://127.0.0.1:443"
    static let now = ContinuousClock.now

    @Test func shortMeasuresDecideUntilASustainedOneComes() {
        let rates = HostRates()
        #expect(rates.bytesPerSecond(host: Self.host, at: Self.now) == nil)
        rates.record(2_000_000, over: .milliseconds(20), host: Self.host, at: Self.now)
        rates.record(3_200_000, over: .milliseconds(15), host: Self.host, at: Self.now)
        #expect(rates.bytesPerSecond(host: Self.host, at: Self.now) == 3_200_000, "the fastest short measure")
        rates.record(2_100_000, over: .milliseconds(150), host: Self.host, at: Self.now)
        #expect(rates.bytesPerSecond(host: Self.host, at: Self.now) == 2_100_000, "a sustained one outranks it")
        rates.record(1_800_000, over: .milliseconds(400), host: Self.host, at: Self.now)
        rates.record(4_000_000, over: .milliseconds(5), host: Self.host, at: Self.now)
        #expect(rates.bytesPerSecond(host: Self.host, at: Self.now) == 2_100_000, "the fastest sustained one is kept")
        #expect(rates.bytesPerSecond(host: "http://127.0.0.1:80", at: Self.now) == nil, "per host")
    }

    @Test func aStaleSustainedMeasureGivesWayToAFreshShortOne() {
        let rates = HostRates()
        let then = Self.now - HostRates.lifetime - .seconds(1)
        rates.record(9_000_000, over: .seconds(1), host: Self.host, at: then)
        rates.record(2_000_000, over: .milliseconds(10), host: Self.host, at: Self.now)
        #expect(rates.bytesPerSecond(host: Self.host, at: Self.now) == 2_000_000)
        rates.record(1_000_000, over: .milliseconds(200), host: Self.host, at: Self.now)
        #expect(rates.bytesPerSecond(host: Self.host, at: Self.now) == 1_000_000)
        #expect(rates.bytesPerSecond(host: Self.host, at: Self.now + HostRates.lifetime + .seconds(1)) == nil)
    }

    @Test func aTransferIsMeasuredFromItsFirstBurst() {
        let reply = FilePlanTransferSpeedTests.transfer(asked: 0..<1 << 20, written: 1 << 20)
        #expect(reply.measuredSpan(at: FilePlanTransferSpeedTests.firstByte + .milliseconds(250)) == .milliseconds(250))
        #expect(FilePlan.Transfer(bytes: 0..<65_536, blocks: 0..<1).measuredSpan(at: Self.now) == .zero, "no byte yet")
    }
}
