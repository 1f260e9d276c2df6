import Foundation
import Testing
@testable import RangeFSCore

/// Requests smaller than a block, as the default policy makes them on a link that limits each
/// connection: a block goes out in parts at once, read-ahead stops at the cap part by part,
/// and what the cap held back goes out as the reader's requests end, not at its next read.
/// Blocks of 256 KiB and the default policy (64 KiB at least, 7 reader requests in flight).
@Suite struct FilePlanRequestPartsTests {
    static let block: UInt64 = 256 * 1024
    static let part: UInt64 = 64 * 1024
    /// 96 KiB/s: half a second of it is less than the smallest request.
    static let slowHost: Double = 98_304

    static func plan(blocks: Int = 16) -> FilePlan {
        let layout = BlockLayout(fileSize: UInt64(blocks) * block, blockSize: block)
        var plan = FilePlan(url: PlanFixture.origin, layout: layout, policy: FetchPolicy(),
                            blocks: BlockBitmap(blockCount: layout.blockCount), complete: false, streamOnly: false,
                            expectedSHA256: nil, source: FetchSource(location: nil, validator: PlanFixture.validator))
        plan.openHandles = 1
        return plan
    }

    @Test func aBlockIsSplitInEqualPartsOfWholePages() {
        let plan = Self.plan()
        let block = Self.block
        #expect(plan.requestParts(of: 0..<block, requestBytes: Self.part) == [
            0..<65536, 65536..<131072, 131072..<196608, 196608..<262144,
        ])
        // Three parts of 100,000 bytes' worth, rounded up to whole pages.
        #expect(plan.requestParts(of: 0..<block, requestBytes: 100_000) == [0..<90112, 90112..<180224, 180224..<262144])
        // A piece that starts inside a block (its start is written) splits what is left of it,
        // then each whole block after it.
        #expect(plan.requestParts(of: 196_608..<block + 131_072, requestBytes: Self.part) == [
            196608..<262144, 262144..<327680, 327680..<393216,
        ])
    }

    @Test func onAFastLinkRequestsAreRunsOfWholeBlocks() {
        let plan = Self.plan()
        let block = Self.block
        // 1 MB a request: three blocks each, ending at a block's edge after a start inside one.
        #expect(plan.requestParts(of: 100_000..<8 * block, requestBytes: 1_000_000) == [
            100_000..<3 * block, 3 * block..<6 * block, 6 * block..<8 * block,
        ])
    }

    @Test func aSlowLinksReadAndItsReadAheadGoOutInPartsUpToTheCap() {
        var plan = Self.plan()
        let lines = plan.read(0..<131_072, readAhead: Self.block, hostBytesPerSecond: Self.slowHost)
        // The reader's own two parts and five of read-ahead: seven in flight, the cap. The rest
        // of block 1 waits.
        #expect(lines == [
            "fetch #0 0..<65536", "fetch #1 65536..<131072",
            "fetch #2 131072..<196608", "fetch #3 196608..<262144", "fetch #4 262144..<327680",
            "fetch #5 327680..<393216", "fetch #6 393216..<458752", "wait #0",
        ])
        #expect(plan.transfers[1]?.purpose != .readAhead, "the reader's own bytes")
        #expect(plan.transfers[2]?.purpose == .readAhead)
        #expect(plan.missingPieces(of: 0..<2 * Self.block, allInFlight: true) == [458_752..<524_288],
                "block 1's last part is not on its way")
    }

    @Test func whatTheCapHeldBackGoesOutAsTheReadersRequestsEnd() {
        var plan = Self.plan()
        let window: UInt64 = 1024 * 1024
        _ = plan.read(0..<131_072, readAhead: window, hostBytesPerSecond: Self.slowHost)
        #expect(plan.transfers.count == 7)
        #expect(plan.write(0, 0..<Self.part) == [])
        // No read came since: the request that ended makes room for the next part of the window.
        #expect(plan.end(0, .success(())) == ["fetch #7 458752..<524288"])
        #expect(plan.transfers[7]?.purpose == .readAhead)
        #expect(plan.write(1, Self.part..<2 * Self.part) == ["answer 0..<131072"])
        #expect(plan.end(1, .success(())) == ["fetch #8 524288..<589824"])
    }

    @Test func nothingPastTheLatestReadsWindowIsAskedFor() {
        var plan = Self.plan()
        // A window of 256 KiB past the read: block 1's last part lies beyond it.
        _ = plan.read(0..<131_072, readAhead: Self.block, hostBytesPerSecond: Self.slowHost)
        _ = plan.write(0, 0..<Self.part)
        #expect(plan.end(0, .success(())) == [])
    }

    @Test func aJumpElsewhereStopsWhatTheCapHeldBack() {
        var plan = Self.plan()
        _ = plan.read(0..<131_072, readAhead: 1024 * 1024, hostBytesPerSecond: Self.slowHost)
        // A read elsewhere without read-ahead (a seek): the reader no longer reads in a row.
        #expect(plan.read(10 * Self.block..<10 * Self.block + 4096, hostBytesPerSecond: Self.slowHost) == [
            "fetch #7 2621440..<2625536", "wait #1",
        ])
        _ = plan.write(0, 0..<Self.part)
        #expect(plan.end(0, .success(())) == [])
    }

    @Test func aReaderThatClosedTheFileGetsNoMoreReadAhead() {
        var plan = Self.plan()
        _ = plan.read(0..<131_072, readAhead: Self.block, hostBytesPerSecond: Self.slowHost)
        plan.openHandles = 0
        _ = plan.write(0, 0..<Self.part)
        #expect(plan.end(0, .success(())) == [])
    }

    @Test func aReadIntoAPartlyRequestedBlockAsksOnlyForItsMissingPart() {
        var plan = Self.plan()
        _ = plan.read(0..<131_072, readAhead: Self.block, hostBytesPerSecond: Self.slowHost)
        // The reader jumps to block 1's last part: the parts on their way are joined, and only
        // the part nobody asked for is fetched.
        #expect(plan.read(458_752..<462_848, hostBytesPerSecond: Self.slowHost) == ["fetch #7 458752..<524288", "wait #1"])
    }

    /// The prefetcher's head of a file (block 0 in one request) moves at one connection's pace.
    /// A reader of its first half waits for it only for the bytes it brings within the join
    /// limit, cuts it there, and asks for the rest of the block in parts of its own, with the
    /// read-ahead it would have had without the head on its way.
    @Test func aReaderJoinsASlowHeadOnlyForWhatItBringsSoon() {
        var plan = Self.plan()
        #expect(plan.background(0..<Self.block) == ["fetch #0 0..<262144 background"])
        _ = plan.writeAsTheShellDoes(0, 0..<16384)
        _ = plan.writeAsTheShellDoes(0, 16384..<32768, at: .milliseconds(170))
        // 16 KiB in 200 ms after the first burst: 80 KiB/s, so 20 KiB come within 250 ms, and
        // the head is cut at the first page past them.
        #expect(plan.read(0..<131_072, readAhead: Self.block, at: .milliseconds(200)) == [
            "end early at 57344", "unreserve 204800", "log debug",
            "fetch #1 57344..<110592", "fetch #2 110592..<163840", "fetch #3 163840..<217088", "fetch #4 217088..<262144",
            "fetch #5 262144..<327680", "fetch #6 327680..<393216", "fetch #7 393216..<458752",
            "raise", "wait #0",
        ])
        #expect(plan.transfers[0]?.bytes == 0..<57344)
        #expect(plan.transfers[3]?.purpose == .readAhead, "past the reader's own bytes")
    }

    /// An opened file's completion asks for the whole file in one request, at one connection's
    /// pace (2 MiB/s here). A reader at its frontier cuts it where its bytes would come late,
    /// before its read-ahead is judged, and its read-ahead fans out from there: counted as on
    /// its way to its end, the completion left no byte to read ahead, and the reader followed it.
    @Test func aBackgroundTransferOfTheWholeFileIsCutWhereTheReadersReadAheadBegins() {
        var plan = Self.plan()
        let size = 16 * Self.block
        #expect(plan.background(0..<size) == ["fetch #0 0..<4194304 background"])
        _ = plan.writeAsTheShellDoes(0, 0..<16384)
        // 208 KiB in 100 ms after the first burst: 2.1 MB/s, so 520 KiB come within 250 ms.
        _ = plan.writeAsTheShellDoes(0, 16384..<229_376, at: .milliseconds(100))
        let lines = plan.read(16384..<32768, readAhead: 2 << 20, at: .milliseconds(100), hostBytesPerSecond: 2_097_152)
        #expect(lines == [
            "end early at 765952", "unreserve 3428352", "log debug",
            "fetch #1 765952..<1572864", "fetch #2 1572864..<2359296", "answer 16384..<32768",
        ])
        #expect(plan.transfers[0]?.bytes == 0..<765_952, "the completion ends where the reader's bytes would come late")
        #expect(plan.transfers[1]?.purpose == .readAhead)
    }

    /// The same completion farther ahead than half the window: read-ahead is not due yet, and
    /// nothing is cut (a cut would leave bytes nobody asks for until the reader comes closer).
    @Test func aBackgroundTransferAheadOfTheReadersWindowIsLeftAlone() {
        var plan = Self.plan()
        #expect(plan.background(0..<16 * Self.block) == ["fetch #0 0..<4194304 background"])
        _ = plan.writeAsTheShellDoes(0, 0..<16384)
        _ = plan.writeAsTheShellDoes(0, 16384..<229_376, at: .milliseconds(100))
        #expect(plan.read(16384..<32768, readAhead: 1 << 20, at: .milliseconds(100), hostBytesPerSecond: 2_097_152)
                == ["answer 16384..<32768"])
        #expect(plan.transfers[0]?.bytes == 0..<4_194_304)
    }
}
