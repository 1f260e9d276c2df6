import Foundation
import Testing
@testable import RangeFSCore

/// The planner with piece hashes, with no server: which bytes a read asks for, that no reader
/// is answered from a piece before it matched, and what a bad piece does.
@Suite("File plan: piece hashes")
struct FilePlanPieceTests {
    typealias Fixture = PlanFixture
    /// Pieces of two 64 KiB blocks; the hashes themselves are never compared here (the shell hashes).
    static let pieces = PieceHashes(pieceLength: 2 * Fixture.block, hexDigests: Array(repeating: String(repeating: "ab", count: 32), count: 4))!

    static func plan(mirrors: [URL] = []) -> FilePlan {
        FilePlan(url: Fixture.origin, layout: BlockLayout(fileSize: 8 * Fixture.block, blockSize: Fixture.block),
                 policy: PlanFixture.policy, blocks: BlockBitmap(blockCount: 8), complete: false, streamOnly: false,
                 expectedSHA256: nil, source: FetchSource(location: nil, validator: Fixture.validator),
                 mirrors: mirrors, pieces: pieces)
    }

    static func begin(_ plan: inout FilePlan, _ id: Int) -> URL? {
        guard case .request(let source) = plan.beginAttempt(id, now: Fixture.start) else { return nil }
        return source.requestURL(origin: Fixture.origin)
    }

    @Test func aSmallReadAsksForItsWholePieceAndWaitsForItsCheck() {
        var plan = Self.plan()
        #expect(plan.read(140_000..<140_010) == ["fetch #0 131072..<262144", "wait #0"])
        _ = Self.begin(&plan, 0)
        #expect(plan.write(0, 131_072..<196_608) == [], "its bytes are written, but the piece is not whole")
        #expect(plan.write(0, 196_608..<262_144) == ["verify piece 1 131072..<262144 #0"], "not answered before the check")
        #expect(!plan.isAvailable(140_000..<140_010) && plan.available.presentCount == 0)
        #expect(plan.read(140_000..<140_010) == ["wait #1"], "a second reader waits too, and asks for nothing")
        #expect(Fixture.lines(plan.pieceChecked(1, token: 0, .matched, now: Fixture.start))
                == ["answer 140000..<140010", "answer 140000..<140010", "cached 131072"])
        #expect(plan.available.contains(2) && plan.available.contains(3))
        #expect(plan.end(0, .success(())) == ["commit"])
    }

    /// The reader waits for its whole piece: a held-back background transfer bringing the other
    /// half of it must be raised, or the reader waits for work that waits for the reader.
    @Test func aReaderRaisesTheBackgroundTransferBringingTheRestOfItsPiece() {
        var plan = Self.plan()
        #expect(Fixture.lines(plan.startBackgroundTransfer(Fixture.block..<(2 * Fixture.block), onFinish: { _ in }))
                == ["fetch #0 65536..<131072 background"])
        #expect(plan.read(0..<10) == ["fetch #1 0..<65536", "raise", "wait #0"])
    }

    @Test func withOneSourceABadPieceFailsItsReadersAndIsForgotten() {
        var plan = Self.plan()
        #expect(plan.read(0..<4096) == ["fetch #0 0..<131072", "wait #0"])
        _ = Self.begin(&plan, 0)
        #expect(plan.write(0, 0..<131_072) == ["verify piece 0 0..<131072 #0"])
        let lines = Fixture.lines(plan.pieceChecked(0, token: 0, .mismatched("00"), now: Fixture.start))
        #expect(lines == ["log warning", "log error", "fail \(Fixture.name): no source serves it: \(plan.sources.summary)"], "\(lines)")
        #expect(plan.sources.summary.contains("dropped: piece 0 (bytes 0-131071) does not match its sha-256 (got 00)"))
        #expect(plan.partial.isEmpty && plan.available.presentCount == 0, "its bytes are forgotten")
        #expect(plan.end(0, .success(())) == [], "the transfer of the bad bytes was ended already")
    }

    @Test func withMirrorsABadPieceDropsItsSourceAndIsAskedOfAnother() {
        var plan = Self.plan(mirrors: [Fixture.mirror])
        #expect(plan.read(0..<4096) == ["probe source 1", "fetch #0 0..<131072", "wait #0"])
        let info = RemoteFileInfo(size: 8 * Fixture.block, validator: Fixture.validator, modified: nil)
        _ = plan.sourceProbed(1, .success(info), now: Fixture.start)
        #expect(Self.begin(&plan, 0) == Fixture.origin)
        _ = plan.write(0, 0..<131_072)
        #expect(plan.end(0, .success(())) == [], "nothing to commit before the check")
        #expect(Fixture.lines(plan.pieceChecked(0, token: 0, .mismatched("00"), now: Fixture.start))
                == ["log warning", "fetch #1 0..<131072"])
        #expect(Self.begin(&plan, 1) == Fixture.mirror)
        #expect(plan.write(1, 0..<131_072) == ["verify piece 0 0..<131072 #1"])
        #expect(Fixture.lines(plan.pieceChecked(0, token: 1, .matched, now: Fixture.start)) == ["answer 0..<4096", "cached 131072"])
    }

    /// Two transfers bringing halves of one piece ask the same source, though the other is
    /// idle: had each asked another, a bad piece would blame neither. The next piece goes to the
    /// idle source as usual, and a retry of a failed attempt still goes elsewhere.
    @Test func theTransfersOfOnePieceAskOneSourceSoABadPieceNamesIt() {
        var plan = Self.plan(mirrors: [Fixture.mirror])
        let info = RemoteFileInfo(size: 8 * Fixture.block, validator: Fixture.validator, modified: nil)
        for block in 0..<3 {
            let bytes = UInt64(block) * Fixture.block..<UInt64(block + 1) * Fixture.block
            _ = plan.startBackgroundTransfer(bytes, onFinish: { _ in })
        }
        _ = plan.sourceProbed(1, .success(info), now: Fixture.start)
        #expect(Self.begin(&plan, 0) == Fixture.origin)
        #expect(Self.begin(&plan, 1) == Fixture.origin, "the second half of piece 0 follows its first")
        #expect(Self.begin(&plan, 2) == Fixture.mirror, "piece 1 goes to the idle source")
        _ = plan.write(0, 0..<Fixture.block)
        #expect(plan.write(1, Fixture.block..<(2 * Fixture.block)) == ["verify piece 0 0..<131072 #0"])
        _ = plan.pieceChecked(0, token: 0, .mismatched("00"), now: Fixture.start)
        #expect(plan.sources.summary.contains("dropped: piece 0 (bytes 0-131071) does not match its sha-256 (got 00)"),
                "\(plan.sources.summary)")
        #expect(!plan.sources.isUsable(0, now: Fixture.start) && plan.sources.isUsable(1, now: Fixture.start))
    }

    /// A piece's source is followed while it is at least half as fast as the fastest usable
    /// one; a slower one is passed over, and the piece then comes from several.
    @Test(arguments: [(1_800_000.0, true), (4_000_000.0, false)])
    func aPiecesSourceIsFollowedOnlyWhileItIsHalfAsFast(mirrorSpeed: Double, followed: Bool) {
        var plan = Self.plan(mirrors: [Fixture.mirror])
        let info = RemoteFileInfo(size: 8 * Fixture.block, validator: Fixture.validator, modified: nil)
        _ = plan.startBackgroundTransfer(0..<Fixture.block, onFinish: { _ in })
        _ = plan.startBackgroundTransfer(Fixture.block..<(2 * Fixture.block), onFinish: { _ in })
        _ = plan.sourceProbed(1, .success(info), now: Fixture.start)
        plan.sources.measured(0, bytesPerSecond: 1_000_000, at: Fixture.start)
        plan.sources.measured(1, bytesPerSecond: 500_000, at: Fixture.start)
        #expect(Self.begin(&plan, 0) == Fixture.origin, "the faster source takes the piece's first half")
        plan.sources.measured(1, bytesPerSecond: mirrorSpeed, at: Fixture.start)
        #expect(Self.begin(&plan, 1) == (followed ? Fixture.origin : Fixture.mirror))
    }

    @Test func aRetryOfAPieceLeavesTheSourceItFailedAt() {
        var plan = Self.plan(mirrors: [Fixture.mirror])
        let info = RemoteFileInfo(size: 8 * Fixture.block, validator: Fixture.validator, modified: nil)
        _ = plan.startBackgroundTransfer(0..<Fixture.block, onFinish: { _ in })
        _ = plan.startBackgroundTransfer(Fixture.block..<(2 * Fixture.block), onFinish: { _ in })
        _ = plan.sourceProbed(1, .success(info), now: Fixture.start)
        #expect(Self.begin(&plan, 0) == Fixture.origin)
        #expect(Self.begin(&plan, 1) == Fixture.origin)
        #expect(Self.begin(&plan, 1) == Fixture.mirror, "its second attempt avoids the first one's source")
    }

    @Test func anAnswerAboutBytesForgottenMeanwhileIsIgnored() {
        var plan = Self.plan()
        _ = plan.read(0..<4096)
        _ = Self.begin(&plan, 0)
        #expect(plan.write(0, 0..<131_072) == ["verify piece 0 0..<131072 #0"])
        _ = plan.commitRolledBack(outOfSpace: false, error: "I/O error")
        #expect(Fixture.lines(plan.pieceChecked(0, token: 0, .matched, now: Fixture.start)).isEmpty)
        #expect(plan.available.presentCount == 0)
    }

    @Test func blocksCommittedEarlierNeedNoNewCheck() {
        var bitmap = BlockBitmap(blockCount: 8)
        bitmap.insert(0..<2)
        var plan = FilePlan(url: Fixture.origin, layout: BlockLayout(fileSize: 8 * Fixture.block, blockSize: Fixture.block),
                            policy: PlanFixture.policy, blocks: bitmap, complete: false, streamOnly: false, expectedSHA256: nil,
                            source: FetchSource(location: nil, validator: Fixture.validator), pieces: Self.pieces)
        #expect(plan.read(0..<4096) == ["answer 0..<4096"])
        #expect(plan.isPieceVerified(0) && !plan.isPieceVerified(1))
    }
}
