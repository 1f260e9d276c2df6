import Foundation
import Testing
@testable import RangeFSCore

/// Choices the shell (`CachedFile`) used to make itself and now asks the plan: whether piece
/// hashes fit, whether a read is stored or read through, what background work does next, what
/// an attempt needs to go out, and which bytes a reader's transfers fetch ahead of it.
@Suite("File plan: the shell's decisions")
struct FilePlanDecisionTests {
    typealias Fixture = PlanFixture

    static func pieces(count: Int) -> PieceHashes {
        PieceHashes(pieceLength: 2 * Fixture.block, hexDigests: Array(repeating: String(repeating: "ab", count: 32), count: count))!
    }

    @Test func pieceHashesAreUsedOnlyWhenTheyFitTheFileSize() {
        let fitting = FilePlan.usablePieces(Self.pieces(count: 4), fileSize: 8 * Fixture.block)
        #expect(fitting.pieces?.count == 4 && fitting.refusal == nil)
        let short = FilePlan.usablePieces(Self.pieces(count: 3), fileSize: 8 * Fixture.block)
        #expect(short.pieces == nil)
        #expect(short.refusal == "the manifest's 3 piece hashes of 131072 bytes do not fit its size of 524288 bytes; they are not used")
        let none = FilePlan.usablePieces(nil, fileSize: 8 * Fixture.block)
        #expect(none.pieces == nil && none.refusal == nil)
    }

    @Test(arguments: [(true, true, "store"), (false, true, "without read-ahead"), (false, false, "read through")])
    func aReadIsStoredAsFarAsTheCacheHasRoom(withReadAhead: Bool, alone: Bool, expected: String) {
        let room = FilePlan.readRoom(fitsWithReadAhead: withReadAhead, fitsAlone: alone)
        switch room {
        case .store: #expect(expected == "store")
        case .storeWithoutReadAhead: #expect(expected == "without read-ahead")
        case .readThrough: #expect(expected == "read through")
        }
    }

    static func describe(_ step: FilePlan.BackgroundStep) -> String {
        switch step {
        case .none: "none"
        case .start(let actions): Fixture.lines(actions).joined(separator: ", ")
        case .piece(let bytes): "piece \(bytes)"
        }
    }

    @Test func backgroundWorkTakesTheFirstFreeGapThenNothingOnceAllIsOnItsWay() {
        var plan = Fixture.plan(size: 4 * Fixture.block)
        let step = plan.nextBackgroundStep(maxBytes: 2 * Fixture.block, now: Fixture.start, onFinish: { _ in })
        #expect(Self.describe(step) == "piece 0..<131072")
        _ = plan.startBackgroundTransfer(0..<2 * Fixture.block, onFinish: { _ in })
        _ = plan.startBackgroundTransfer(2 * Fixture.block..<4 * Fixture.block, onFinish: { _ in })
        #expect(Self.describe(plan.nextBackgroundStep(maxBytes: 2 * Fixture.block, now: Fixture.start, onFinish: { _ in })) == "none",
                "one source: no slow tail to move")
    }

    @Test func backgroundWorkOnAServerThatIgnoresRangesIsOneStream() {
        var plan = Fixture.plan(size: 4 * Fixture.block, streamOnly: true)
        #expect(Self.describe(plan.nextBackgroundStep(maxBytes: Fixture.block, now: Fixture.start, onFinish: { _ in }))
                == "fetch #0 0..<262144 whole")
        #expect(Self.describe(plan.nextBackgroundStep(maxBytes: Fixture.block, now: Fixture.start, onFinish: { _ in })) == "none",
                "the stream runs already")
    }

    @Test func aCompleteFileHasNoBackgroundWork() {
        var plan = Fixture.plan(size: 2 * Fixture.block, blocks: [0, 1])
        plan.complete = true
        #expect(Self.describe(plan.nextBackgroundStep(maxBytes: Fixture.block, now: Fixture.start, onFinish: { _ in })) == "none")
    }

    /// Background work keeps within `--max-rate` and says nothing of its host's speed until a
    /// reader waits on it; a reader's transfer is never background work.
    @Test func anAttemptIsBackgroundWorkUntilAReaderWaitsOnIt() {
        var plan = Fixture.plan(size: 16 * Fixture.block)
        _ = plan.background(0..<Fixture.block)
        #expect(plan.startAttempt(0, now: Fixture.start).isBackgroundWork)
        _ = plan.read(0..<10)
        #expect(!plan.startAttempt(0, now: Fixture.start).isBackgroundWork, "raised")
        _ = plan.read(8 * Fixture.block..<8 * Fixture.block + 10)
        let reader = plan.startAttempt(1, now: Fixture.start)
        #expect(!reader.isBackgroundWork && !reader.learnsVersion && reader.conditional)
        guard case .request = reader.attempt else { return #expect(Bool(false), "it goes to the file's URL") }
    }

    static func readAheadFrom(_ actions: [FilePlan.Action]) -> [UInt64?] {
        actions.compactMap { action in
            guard case .fetch(_, _, _, _, let from) = action else { return nil }
            return .some(from)
        }
    }

    /// The bytes a read's transfers bring past the read are counted as read-ahead, from the
    /// read's end; read-ahead no read started is read-ahead whole; background work is neither.
    @Test func theTransfersOfAReadSayWhereItsOwnBytesEnd() {
        var plan = Fixture.plan(size: 64 * Fixture.block, policy: Fixture.oneReadAheadRequest)
        let read = plan.read(0..<4096, readAhead: 4 * Fixture.block, now: Fixture.start, completion: Fixture.noReply)
        #expect(Self.readAheadFrom(read) == [4096])
        #expect(Self.readAheadFrom(plan.startBackgroundTransfer(32 * Fixture.block..<33 * Fixture.block, onFinish: { _ in })) == [nil])
    }

    /// Read-ahead that goes out as a reader's request ends (`continueReadAhead`) was asked for
    /// by no read: all its bytes are read-ahead.
    @Test func readAheadSentAsARequestEndsIsReadAheadWhole() {
        var policy = Fixture.policy
        policy.minRequestBytes = Fixture.block
        policy.maxReaderRequests = 3
        var plan = Fixture.plan(size: 16 * Fixture.block, policy: policy)
        plan.openHandles = 1
        let read = plan.read(0..<Fixture.block, readAhead: 7 * Fixture.block, now: Fixture.start, completion: Fixture.noReply)
        #expect(Self.readAheadFrom(read) == [Fixture.block, Fixture.block, Fixture.block])
        _ = plan.write(0, 0..<Fixture.block)
        let ended = plan.transferEnded(0, .success(()), now: Fixture.start)
        #expect(Fixture.lines(ended) == ["fetch #3 196608..<262144"])
        #expect(Self.readAheadFrom(ended) == [3 * Fixture.block])
    }
}
