import Foundation
import Testing
@testable import RangeFSCore

private let block = PlanFixture.block

/// Reads on a file in every state: which requests start, who is answered, who waits.
struct FirstReadCase: Sendable, CustomTestStringConvertible {
    var name: String
    var size: UInt64
    var bytes: Range<UInt64>
    var readAhead: UInt64
    var expected: [String]
    var testDescription: String { name }
}

@Suite struct FilePlanReadTests {
    @Test(arguments: [
        FirstReadCase(name: "0-byte file", size: 0, bytes: 0..<0, readAhead: block, expected: ["answer 0..<0"]),
        FirstReadCase(name: "1-byte file, no read-ahead", size: 1, bytes: 0..<1, readAhead: 0,
                      expected: ["fetch #0 0..<1", "wait #0"]),
        FirstReadCase(name: "1-byte file, read-ahead", size: 1, bytes: 0..<1, readAhead: 4 * block,
                      expected: ["fetch #0 0..<1", "wait #0"]),
        FirstReadCase(name: "one block", size: block, bytes: 0..<4096, readAhead: block,
                      expected: ["fetch #0 0..<65536", "wait #0"]),
        FirstReadCase(name: "one block + 1", size: block + 1, bytes: 0..<4096, readAhead: 2 * block,
                      expected: ["fetch #0 0..<65537", "wait #0"]),
        FirstReadCase(name: "last partial block, page read", size: 2 * block + 100, bytes: 2 * block..<2 * block + 100,
                      readAhead: 0, expected: ["fetch #0 131072..<131172", "wait #0"]),
        FirstReadCase(name: "last partial block, sequential", size: 2 * block + 100, bytes: 2 * block..<2 * block + 100,
                      readAhead: block, expected: ["fetch #0 131072..<131172", "wait #0"]),
        FirstReadCase(name: "a seek deep into a block asks for its own bytes first, then the block's head",
                      size: 4 * block, bytes: block + 40000..<block + 44096, readAhead: block,
                      expected: ["fetch #0 65536..<102400", "fetch #1 102400..<196608", "wait #0"]),
        FirstReadCase(name: "a seek near a block's start asks for the block from its start",
                      size: 4 * block, bytes: block + 8192..<block + 12288, readAhead: block,
                      expected: ["fetch #0 65536..<196608", "wait #0"]),
        FirstReadCase(name: "a jump without read-ahead asks for its pages only",
                      size: 4 * block, bytes: block + 5000..<block + 9000, readAhead: 0,
                      expected: ["fetch #0 69632..<77824", "wait #0"]),
        FirstReadCase(name: "a long read goes out in requests of the smallest size while the host's speed is unknown",
                      size: 4 * 1024 * 1024, bytes: 0..<(1024 * 1024), readAhead: block,
                      expected: ["fetch #0 0..<262144", "fetch #1 262144..<524288", "fetch #2 524288..<786432",
                                 "fetch #3 786432..<1048576", "fetch #4 1048576..<1114112", "wait #0"]),
    ])
    func firstReadOfAnEmptyCache(_ example: FirstReadCase) {
        var plan = PlanFixture.plan(size: example.size)
        #expect(plan.read(example.bytes, readAhead: example.readAhead) == example.expected)
    }

    @Test func cachedBytesAreAnsweredWithoutARequest() {
        var plan = PlanFixture.plan(size: 2 * block + 100, blocks: [0, 2])
        #expect(plan.read(0..<100) == ["answer 0..<100"])
        #expect(plan.read(2 * block..<2 * block + 100) == ["answer 131072..<131172"])
        #expect(plan.read(block - 10..<block + 10) == ["fetch #0 65536..<131072", "wait #0"])
    }

    @Test func aReaderIsAnsweredFromBytesWrittenBeforeItsBlockIsWhole() {
        var plan = PlanFixture.plan(size: 4 * block)
        #expect(plan.read(0..<100, readAhead: block) == ["fetch #0 0..<131072", "wait #0"])
        #expect(plan.write(0, 0..<4096) == ["answer 0..<100"])
        #expect(plan.read(1000..<2000, readAhead: block) == ["answer 1000..<2000"])
        #expect(plan.write(0, 4096..<block) == ["cached 65536"])
        #expect(plan.available.contains(0) && plan.partial.isEmpty)
    }

    @Test(arguments: [
        // (elapsed since its first 4 KiB, joins): a reader's transfer of unknown speed is joined;
        // a crawl is not, and ends where the seek's own request begins.
        (Duration.milliseconds(1), true),
        (Duration.seconds(10), false),
    ])
    func aSeekIntoARunningTransferJoinsItOnlyIfItArrivesSoon(elapsed: Duration, joins: Bool) {
        var plan = PlanFixture.plan(size: 8 * block, policy: PlanFixture.oneReadAheadRequest)
        #expect(plan.read(0..<4096, readAhead: 8 * block) == ["fetch #0 0..<524288", "wait #0"])
        #expect(plan.write(0, 0..<4096) == ["answer 0..<4096"])
        let seek = plan.read(6 * block..<6 * block + 4096, at: elapsed)
        #expect(seek == (joins ? ["wait #1"] : ["end early at 393216", "log debug", "fetch #1 393216..<458752", "wait #1"]))
        #expect(plan.transfers[0]?.bytes == 0..<(joins ? 8 * block : 6 * block))
    }

    @Test func aSeekCloseToATransfersFrontJoinsItBeforeItsFirstByte() {
        var plan = PlanFixture.plan(size: 8 * block, policy: PlanFixture.oneReadAheadRequest)
        #expect(plan.read(0..<4096, readAhead: 8 * block) == ["fetch #0 0..<524288", "wait #0"])
        #expect(plan.read(2 * block..<2 * block + 4096) == ["wait #1"])
    }

    @Test func scatteredPageReadsFetchTheRestOfTheBlockOnceASixteenthIsThere() {
        var plan = PlanFixture.plan(size: 4 * block)
        #expect(plan.read(block + 8192..<block + 12288) == ["fetch #0 73728..<77824", "wait #0"])
        // Nobody joins a page transfer: another page of that block is its own request.
        #expect(plan.read(block + 20000..<block + 20100) == ["fetch #1 81920..<86016", "wait #1"])
        #expect(plan.write(0, 73728..<77824) == ["answer 73728..<77824"])
        // 4 KiB of a 64 KiB block is a sixteenth: the reader keeps coming back, the block is fetched.
        #expect(plan.read(block + 50000..<block + 50100) == [
            "fetch #2 65536..<73728", "fetch #3 77824..<81920", "fetch #4 86016..<131072", "wait #2",
        ])
    }

    @Test func readAheadMovesInLargeStepsJoinedWithTheReader() {
        var plan = PlanFixture.plan(size: 16 * block, policy: PlanFixture.oneReadAheadRequest)
        #expect(plan.read(0..<block, readAhead: 4 * block) == ["fetch #0 0..<327680", "wait #0"])
        // Less than half the window is free: no read-ahead yet, the reader joins the transfer.
        #expect(plan.read(block..<2 * block, readAhead: 4 * block) == ["wait #1"])
        // Half the window is free: one request to the window's end.
        #expect(plan.read(3 * block..<4 * block, readAhead: 4 * block) == ["fetch #1 327680..<524288", "wait #2"])
        #expect(plan.readAheadEnd(after: 16 * block, window: 4 * block) == nil)
    }

    /// The prefetcher fetches a file's head for scanners before they read it. A first read of
    /// half that block (a window of a block) joins the head and asks for nothing more: a tag
    /// reader that reads only the head costs no read-ahead. The second read in a row does.
    @Test func aFirstReadOfAHeadOnItsWaySendsNoReadAheadTheSecondDoes() {
        var policy = PlanFixture.policy
        policy.minRequestBytes = block
        var plan = PlanFixture.plan(size: 16 * block, policy: policy)
        #expect(plan.background(0..<block) == ["fetch #0 0..<65536 background"])
        #expect(plan.read(0..<block / 2, readAhead: block) == ["raise", "wait #0"])
        #expect(plan.read(block / 2..<block, readAhead: 2 * block) == ["fetch #1 65536..<131072", "fetch #2 131072..<196608", "wait #1"])
    }

    @Test func aReadAndItsReadAheadGoOutInSeveralRequestsAtOnce() {
        var policy = PlanFixture.policy
        policy.minRequestBytes = 2 * block
        var plan = PlanFixture.plan(size: 16 * block, policy: policy)
        // No speed known yet: requests of the smallest size (2 blocks here), the first with the
        // reader's own block.
        #expect(plan.read(0..<block, readAhead: 7 * block) == [
            "fetch #0 0..<131072", "fetch #1 131072..<262144", "fetch #2 262144..<393216", "fetch #3 393216..<524288",
            "wait #0",
        ])
        // A reader's own blocks are split too: on a link that limits each connection they come
        // sooner in several requests.
        var long = PlanFixture.plan(size: 16 * block, policy: policy)
        #expect(long.read(0..<5 * block, readAhead: block) == [
            "fetch #0 0..<131072", "fetch #1 131072..<262144", "fetch #2 262144..<393216", "wait #0",
        ])
    }

    @Test func readAheadWaitsWhileTheFilesReadersHaveTheirMostRequestsInFlight() {
        var policy = PlanFixture.policy
        policy.minRequestBytes = block
        policy.maxReaderRequests = 3
        var plan = PlanFixture.plan(size: 16 * block, policy: policy)
        // The reader's own block and two blocks of read-ahead; the rest of the window waits.
        #expect(plan.read(0..<block, readAhead: 7 * block) == [
            "fetch #0 0..<65536", "fetch #1 65536..<131072", "fetch #2 131072..<196608", "wait #0",
        ])
        // A reader's own blocks go out however many requests are in flight.
        #expect(plan.read(10 * block..<11 * block) == ["fetch #3 655360..<720896", "wait #1"])
        // Three in flight: the next read asks for no more of the window until one ends.
        #expect(plan.write(0, 0..<block) == ["answer 0..<65536", "cached 65536"])
        #expect(plan.end(0, .success(())) == [])
        // The reader waits on read-ahead already on its way (raised: it holds background work back now).
        #expect(plan.read(block..<block + 10, readAhead: 7 * block) == ["raise", "wait #2"])
        _ = plan.write(3, 10 * block..<11 * block)
        _ = plan.end(3, .success(()))
        #expect(plan.read(block + 10..<block + 20, readAhead: 7 * block) == ["fetch #4 196608..<262144", "wait #3"])
    }

    @Test func readAheadNobodyWaitsOnLetsBackgroundWorkGoOnUntilAReadWaitsOnIt() {
        var policy = PlanFixture.policy
        policy.minRequestBytes = block
        var plan = PlanFixture.plan(size: 16 * block, policy: policy)
        #expect(plan.read(0..<block, readAhead: 2 * block) == [
            "fetch #0 0..<65536", "fetch #1 65536..<131072", "fetch #2 131072..<196608", "wait #0",
        ])
        #expect(plan.transfers[0]?.control.purpose == .reader, "the reader's own block")
        #expect(plan.transfers[1]?.control.purpose == .readAhead)
        #expect(plan.transfers[2]?.control.purpose == .readAhead)
        // The reader reaches block 1 before it is here: it waits on that read-ahead, which from
        // now on holds background work back as the reader's own request does.
        #expect(plan.read(block..<block + 10) == ["raise", "wait #1"])
        #expect(plan.transfers[1]?.purpose != .readAhead)
        #expect(plan.transfers[2]?.purpose == .readAhead)
        plan.transfers[1]?.control.raise()   // what the shell does with "raise"
        #expect(plan.transfers[1]?.control.purpose == .reader)
        #expect(plan.transfers[2]?.control.purpose == .readAhead)
    }

    /// The default policy's sizes: 64 KiB while the speed is unknown or where half a second of
    /// it is less, half a second of it up to 2 MiB.
    @Test func aRequestIsHalfASecondOfTheHostsSpeedWithinItsBounds() {
        let plan = PlanFixture.plan(size: 16 * block, policy: FetchPolicy())
        #expect(plan.requestBytes(hostBytesPerSecond: nil) == 64 * 1024)
        #expect(plan.requestBytes(hostBytesPerSecond: 98_304) == 64 * 1024,
                "96 KB/s: half a second is less than the smallest request")
        #expect(plan.requestBytes(hostBytesPerSecond: 2_000_000) == 1_000_000)
        #expect(plan.requestBytes(hostBytesPerSecond: 900_000_000) == 2 * 1024 * 1024)
        #expect(plan.requestBytes(hostBytesPerSecond: .infinity) == 2 * 1024 * 1024)
    }
}
