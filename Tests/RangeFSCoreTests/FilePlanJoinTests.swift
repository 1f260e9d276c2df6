import Foundation
import Testing
@testable import RangeFSCore

private let block = PlanFixture.block

/// A reader whose blocks a running transfer brings: does it wait for that transfer, or ask for
/// them itself and cut the transfer short where its blocks begin?
struct JoinCase: Sendable, CustomTestStringConvertible {
    enum Started: Sendable { case background, forReader }

    var name: String
    /// Who started the transfer of the file's 16 blocks (a reader reading from 0 with read-ahead).
    var started: Started
    /// Bytes the transfer wrote, each run at this long after the start.
    var writes: [(bytes: Range<UInt64>, at: Duration)] = []
    /// The reader's 4 KiB at this offset, this long after the start.
    var readAt: UInt64
    var readTime: Duration = .milliseconds(300)
    /// How fast the host moved lately, as the shell measured it.
    var hostBytesPerSecond: Double?
    /// The reader's actions, after those of the transfer's start and writes.
    var expected: [String]
    var testDescription: String { name }
}

@Suite struct FilePlanJoinTests {
    static let size = 16 * block
    static let far: UInt64 = 12 * block
    static let farBlock = "fetch #1 786432..<851968"
    /// The running transfer is told where it now ends (what it asks for if it asks again).
    static let cutAtFar = "end early at 786432"

    @Test(arguments: [
        JoinCase(name: "unknown speed, background work, reader far ahead: cut, own request",
                 started: .background, readAt: far,
                 expected: [cutAtFar, "unreserve 262144", "log debug", farBlock, "wait #0"]),
        JoinCase(name: "unknown speed, background work, reader at its frontier: waits (and raises it)",
                 started: .background, readAt: 0, expected: ["raise", "wait #0"]),
        JoinCase(name: "unknown speed, background work, reader two blocks past its frontier: cut, own request",
                 started: .background, readAt: 2 * block, expected: [
                     "end early at 131072", "unreserve 917504", "log debug", "fetch #1 131072..<196608", "wait #0",
                 ]),
        JoinCase(name: "unknown speed, a reader's transfer, its kernel read-ahead beyond the join distance: waits",
                 started: .forReader, readAt: 3 * block, expected: ["wait #1"]),
        JoinCase(name: "a first burst alone tells no speed: background work is not waited for",
                 started: .background, writes: [(0..<4 * block, .zero)], readAt: far, readTime: .milliseconds(10),
                 expected: [cutAtFar, "unreserve 262144", "log debug", farBlock, "wait #0"]),
        JoinCase(name: "known slow speed (80 KB/s), background work: cut, own request",
                 started: .background, writes: [(0..<16384, .zero), (16384..<32768, .milliseconds(200))], readAt: far,
                 expected: [cutAtFar, "unreserve 262144", "log debug", farBlock, "wait #0"]),
        JoinCase(name: "known slow speed (80 KB/s), a reader's transfer: cut, own request",
                 started: .forReader, writes: [(0..<16384, .zero), (16384..<32768, .milliseconds(200))], readAt: far,
                 expected: [cutAtFar, "log debug", farBlock, "wait #1"]),
        JoinCase(name: "known fast speed (5 MB/s), background work: waits (and raises it)",
                 started: .background, writes: [(0..<block, .zero), (block..<9 * block, .milliseconds(100))], readAt: far,
                 readTime: .milliseconds(100), expected: ["raise", "wait #0"]),
        JoinCase(name: "host known fast, transfer's own speed not yet: waits",
                 started: .background, readAt: far, hostBytesPerSecond: 50_000_000, expected: ["raise", "wait #0"]),
        JoinCase(name: "host known slow (96 KB/s), a reader's transfer of unknown speed: cut, own request",
                 started: .forReader, readAt: far, hostBytesPerSecond: 96 * 1024,
                 expected: [cutAtFar, "log debug", farBlock, "wait #1"]),
        JoinCase(name: "a reader's transfer: its own speed (slow) goes before its host's (fast)",
                 started: .forReader, writes: [(0..<16384, .zero), (16384..<32768, .milliseconds(200))], readAt: far,
                 hostBytesPerSecond: 50_000_000, expected: [cutAtFar, "log debug", farBlock, "wait #1"]),
        JoinCase(name: "background work, slow while held back, on a fast host: waits, as it moves at its host's pace once raised",
                 started: .background, writes: [(0..<16384, .zero), (16384..<32768, .milliseconds(200))], readAt: far,
                 hostBytesPerSecond: 50_000_000, expected: ["raise", "wait #0"]),
        JoinCase(name: "256 KiB after the first burst tell the speed before 100 ms have passed",
                 started: .background, writes: [(0..<block, .zero), (block..<5 * block, .milliseconds(10))], readAt: far,
                 readTime: .milliseconds(20), expected: ["raise", "wait #0"]),
    ])
    func aReaderWaitsOnlyForATransferThatArrivesSoon(_ example: JoinCase) {
        var plan = PlanFixture.plan(size: Self.size, policy: PlanFixture.oneReadAheadRequest)
        switch example.started {
        case .background:
            #expect(plan.background(0..<Self.size) == ["fetch #0 0..<1048576 background"])
        case .forReader:
            #expect(plan.read(0..<4096, readAhead: Self.size) == ["fetch #0 0..<1048576", "wait #0"])
        }
        for write in example.writes {
            _ = plan.writeAsTheShellDoes(0, write.bytes, at: write.at)
        }
        let read = plan.read(example.readAt..<example.readAt + 4096, at: example.readTime,
                             hostBytesPerSecond: example.hostBytesPerSecond)
        #expect(read == example.expected)
        // A cut transfer ends where the reader's request begins: no block is asked for twice.
        if let cut = read.first(where: { $0.hasPrefix("end early at ") }), let at = UInt64(cut.dropFirst("end early at ".count)) {
            #expect(plan.transfers[0]?.bytes.upperBound == at)
            #expect(plan.transfers[0]?.blocks == plan.layout.blocks(covering: 0..<at))
            #expect(read.contains { $0.hasPrefix("fetch #1 \(at)..<") }, "the reader's request begins where the cut ends it")
        } else {
            #expect(plan.transfers[0]?.bytes == 0..<Self.size)
        }
    }

    @Test func aCutTransferStopsAtItsCutAndEndsWithoutFailing() {
        var plan = PlanFixture.plan(size: Self.size)
        _ = plan.background(0..<Self.size)
        #expect(plan.read(Self.far..<Self.far + 4096) == [Self.cutAtFar, "unreserve 262144", "log debug", Self.farBlock, "wait #0"])
        // Its response still carries the reader's bytes: they are not written by it.
        #expect(plan.bytesWanted(by: 0, at: 11 * block, count: 2 * block) == block)
        #expect(plan.bytesWanted(by: 0, at: Self.far, count: block) == 0)
        #expect(plan.writeAsTheShellDoes(0, 0..<Self.far) == ["cached 786432"])
        #expect(plan.hasReachedItsCut(0))
        // The shell stopped it, and its client calls that a storage failure: the plan knows better.
        #expect(plan.end(0, .failure(.localStorage("the cache could not store the data"))) == ["notify true"])
        #expect(plan.lastFailure == nil)
        #expect(plan.write(1, Self.far..<13 * block) == ["answer 786432..<790528", "cached 65536"])
        #expect(plan.missingPieces(of: 0..<13 * block).isEmpty)
    }

    @Test func bytesWrittenWhileTheCutWasDecidedAreKept() {
        var plan = PlanFixture.plan(size: Self.size)
        _ = plan.background(0..<Self.size)
        // The shell took 13 blocks to write before the reader cut the transfer at block 12.
        #expect(plan.bytesWanted(by: 0, at: 0, count: 13 * block) == 13 * block)
        _ = plan.read(Self.far..<Self.far + 4096)
        #expect(plan.write(0, 0..<13 * block) == ["answer 786432..<790528", "cached 851968"])
        #expect(plan.transfers[0]?.bytes == 0..<13 * block)
        #expect(plan.hasReachedItsCut(0))
    }

    /// Background work that stood still (held while readers waited elsewhere, say) moves at its
    /// link's pace once a reader raises it: the next read judges it by that pace, not by the
    /// crawl of its held time.
    @Test func raisedBackgroundWorkIsJudgedByItsPaceSinceTheRaise() {
        var plan = PlanFixture.plan(size: Self.size, policy: PlanFixture.oneReadAheadRequest)
        _ = plan.background(0..<Self.size)
        _ = plan.writeAsTheShellDoes(0, 0..<16384, at: .zero)
        _ = plan.writeAsTheShellDoes(0, 16384..<32768, at: .seconds(2))
        // Its host is fast (a reader's request moved at 50 MB/s lately): the reader waits.
        #expect(plan.read(32768..<36864, at: .seconds(2), hostBytesPerSecond: 50_000_000) == ["raise", "wait #0"])
        _ = plan.writeAsTheShellDoes(0, 32768..<9 * block, at: .milliseconds(2050))
        // 2.8 MB/s since the raise (0.26 MB/s since its first bytes): block 12 comes within 250 ms.
        #expect(plan.read(Self.far..<Self.far + 4096, at: .milliseconds(2200), hostBytesPerSecond: 50_000_000) == ["wait #1"])
        #expect(plan.transfers[0]?.bytes == 0..<Self.size)
    }

    @Test func raisedBackgroundWorkThatBringsNothingMoreIsCut() {
        var plan = PlanFixture.plan(size: Self.size, policy: PlanFixture.oneReadAheadRequest)
        _ = plan.background(0..<Self.size)
        _ = plan.writeAsTheShellDoes(0, 0..<16384, at: .zero)
        _ = plan.writeAsTheShellDoes(0, 16384..<9 * block, at: .milliseconds(100))
        #expect(plan.read(9 * block..<9 * block + 4096, at: .milliseconds(100)) == ["raise", "wait #0"])
        // Nothing for 200 ms since the raise: the reader of block 12 asks for it itself.
        #expect(plan.read(Self.far..<Self.far + 4096, at: .milliseconds(300)) == [
            Self.cutAtFar, "unreserve 262144", "log debug", Self.farBlock, "wait #1",
        ])
    }

    @Test func readersThatWaitedBeyondACutAskForTheirBytesAgain() {
        var plan = PlanFixture.plan(size: Self.size)
        _ = plan.background(0..<Self.size)
        _ = plan.writeAsTheShellDoes(0, 0..<block, at: .zero)
        _ = plan.writeAsTheShellDoes(0, block..<9 * block, at: .milliseconds(100))
        // Fast then (5 MB/s): a reader of block 13 waits for it.
        #expect(plan.read(13 * block..<13 * block + 100, at: .milliseconds(100)) == ["raise", "wait #0"])
        // Ten seconds on without a byte more: a reader of block 12 asks for its own block, and
        // the reader of block 13, whose transfer now ends before it, for its page.
        #expect(plan.read(Self.far..<Self.far + 100, at: .seconds(10)) == [
            Self.cutAtFar, "unreserve 262144", "log debug", Self.farBlock, "fetch #2 851968..<856064", "wait #1",
        ])
    }
}

extension FilePlan {
    /// `write` as the shell does it: a background transfer's promise shrinks by what arrives.
    mutating func writeAsTheShellDoes(_ id: Int, _ bytes: Range<UInt64>, at elapsed: Duration = .zero) -> [String] {
        _ = takeReservation(of: id, for: UInt64(bytes.count))
        return write(id, bytes, at: elapsed)
    }
}
