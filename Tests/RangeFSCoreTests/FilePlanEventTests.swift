import Foundation
import Testing
@testable import RangeFSCore

private let block = PlanFixture.block
private let origin = PlanFixture.origin
private let mirror = PlanFixture.mirror
private let otherMirror = PlanFixture.otherMirror
private let validator = PlanFixture.validator
private let noReply = PlanFixture.noReply

/// Transfers ending, commits rolled back, rejections, evictions, the search for a mirror and
/// background work, each answered with the exact actions to take.
@Suite struct FilePlanTransferEndTests {
    @Test func successAnswersReadersAndCommitsWhenNothingElseRuns() {
        var plan = PlanFixture.plan(size: 8 * block)
        #expect(plan.read(0..<4 * block) == ["fetch #0 0..<262144", "wait #0"])
        #expect(plan.write(0, 0..<4 * block) == ["answer 0..<262144", "cached 262144"])
        #expect(plan.end(0, .success(())) == ["commit"], "no transfer runs and no handle is open")
        #expect(plan.transfers.isEmpty && plan.commitScheduled)
    }

    /// Syncing is kept off a reader's way: a partly fetched file commits once its oldest
    /// uncommitted blocks are `commitInterval` old, while its transfers run or after they end.
    @Test func aPartlyFetchedFileCommitsOnceItsOldestUncommittedBlocksAreAnIntervalOld() {
        var plan = PlanFixture.plan(size: 8 * block)
        plan.openHandles = 1
        #expect(plan.read(0..<4 * block) == ["fetch #0 0..<262144", "wait #0"])
        #expect(plan.write(0, 0..<block, at: .milliseconds(100)) == ["cached 65536"])
        #expect(plan.write(0, block..<2 * block, at: .milliseconds(1099)) == ["cached 65536"],
                "999 ms after the first block: not yet")
        #expect(plan.write(0, 2 * block..<3 * block, at: .milliseconds(1100)) == ["cached 65536", "commit"])
        _ = plan.commitStarting()
        #expect(plan.write(0, 3 * block..<4 * block, at: .milliseconds(1200)) == ["answer 0..<262144", "cached 65536"])
        #expect(plan.end(0, .success(()), at: .milliseconds(1300)) == ["commit in 0.9 seconds"],
                "the transfers stopped: the last block goes once it is an interval old, from the commit queue")
        #expect(plan.commitDeferred && !plan.commitScheduled)
        #expect(plan.read(4 * block..<6 * block, at: .milliseconds(1400)) == ["fetch #1 262144..<393216", "wait #1"])
        #expect(plan.write(1, 4 * block..<6 * block, at: .milliseconds(1500)) == ["answer 262144..<393216", "cached 131072"])
        #expect(plan.end(1, .success(()), at: .milliseconds(1600)) == [], "one deferred commit at a time")
        #expect(PlanFixture.lines(plan.handleClosed(now: PlanFixture.start + .milliseconds(1700))) == ["commit"],
                "the last handle closed: nothing more is coming, so it goes now")
        #expect(plan.commitScheduled)
    }

    @Test func aWholeFileUnmountingOrAFullCacheCommitsAtOnce() {
        var whole = PlanFixture.plan(size: 2 * block)
        whole.openHandles = 1
        _ = whole.read(0..<2 * block, readAhead: 0)
        #expect(whole.write(0, 0..<block) == ["cached 65536"])
        #expect(whole.write(0, block..<2 * block) == ["answer 0..<131072", "cached 65536", "commit"],
                "the last block: the file is whole and is promoted without waiting")

        var unmounting = PlanFixture.plan(size: 8 * block)
        unmounting.openHandles = 1
        _ = unmounting.read(0..<block)
        _ = unmounting.write(0, 0..<block)
        #expect(unmounting.end(0, .failure(.cancelled)) == ["commit"])

        var full = PlanFixture.plan(size: 8 * block)
        full.openHandles = 1
        _ = full.read(0..<block)
        _ = full.write(0, 0..<block)
        full.stopForSpace(0)
        #expect(full.end(0, .success(())) == ["commit"])
    }

    struct RetryCase: Sendable, CustomTestStringConvertible {
        var name: String
        var error: RemoteError
        var maxAttempts = 4
        var expected: [String]
        var testDescription: String { name }
    }

    static let name = origin.redactedForDisplay

    @Test(arguments: [
        RetryCase(name: "5xx is retried from where it stopped", error: .status(503),
                  expected: ["log warning", "retry #0 4096..<131072"]),
        RetryCase(name: "a reset is retried", error: .transport("connection reset"),
                  expected: ["log warning", "retry #0 4096..<131072"]),
        RetryCase(name: "a Retry-After past the limit is final", error: .status(503, retryAfter: .seconds(60)),
                  expected: ["log error", "fail \(name): \(RemoteError.status(503, retryAfter: .seconds(60)))"]),
        RetryCase(name: "404 is final", error: .status(404),
                  expected: ["log error", "fail \(name): \(RemoteError.status(404))"]),
        RetryCase(name: "attempts spent is final", error: .status(503), maxAttempts: 1,
                  expected: ["log error", "fail \(name): \(RemoteError.status(503))"]),
        RetryCase(name: "unmounting fails the readers and asks for nothing", error: .cancelled,
                  expected: ["fail \(name): unmounting"]),
    ])
    func aFailedTransferIsRetriedOrFailsItsReaders(_ example: RetryCase) {
        var policy = PlanFixture.policy
        policy.maxAttempts = example.maxAttempts
        var plan = PlanFixture.plan(size: 2 * block, policy: policy)
        #expect(plan.read(0..<2 * block, readAhead: 0) == ["fetch #0 0..<131072", "wait #0"])
        #expect(plan.write(0, 0..<4096) == [])
        #expect(plan.end(0, .failure(example.error)) == example.expected)
    }

    @Test func aRetryAfterWithinTheLimitIsHonoured() {
        let plan = PlanFixture.plan(size: block)
        #expect(plan.retryDelay(after: .status(503, retryAfter: .seconds(5)), attempts: 1) == .seconds(5))
        #expect(plan.retryDelay(after: .status(404), attempts: 1) == nil)
        let backoff = plan.retryDelay(after: .status(502), attempts: 1)
        #expect(backoff.map { $0 >= .milliseconds(125) && $0 <= .milliseconds(375) } == true)
    }

    @Test func aFinalFailureFailsTheReadersOfWhatItDidNotBring() {
        var plan = PlanFixture.plan(size: 4 * block)
        #expect(plan.read(0..<4096, readAhead: 4 * block) == ["fetch #0 0..<262144", "wait #0"])
        #expect(plan.read(3 * block..<3 * block + 10) == ["wait #1"])
        #expect(plan.write(0, 0..<8192) == ["answer 0..<4096"])
        #expect(plan.end(0, .failure(.status(404))) == [
            "log error", "fail \(Self.name): \(RemoteError.status(404))",
        ])
        #expect(plan.lastFailure == RemoteError.status(404).description && plan.waiters.isEmpty)
    }

    @Test func aFinalFailureKeepsTheServersAnswerAsItsCause() {
        var plan = PlanFixture.plan(size: 4 * block)
        _ = plan.read(0..<4096)
        let failures = plan.transferEnded(0, .failure(.status(404)), now: PlanFixture.start).compactMap { action -> FetchError? in
            if case .fail(_, let error) = action { return error }
            return nil
        }
        #expect(failures.count == 1)
        #expect(failures.first?.cause as? RemoteError == .status(404))
    }

    @Test func aStreamStartsOverOnRetryAndKeepsWhatItWrote() {
        var plan = PlanFixture.plan(size: 2 * block, streamOnly: true)
        #expect(plan.read(block..<block + 10) == ["fetch #0 0..<131072 whole", "wait #0"])
        #expect(plan.write(0, 0..<block) == ["cached 65536"])
        #expect(plan.end(0, .failure(.transport("reset"))) == ["log warning", "retry #0 0..<131072 whole"])
        #expect(plan.available.contains(0) && plan.transfers[0]?.written == 0)
    }

    @Test func aServerThatIgnoresRangesGetsOneStreamForEveryReader() {
        var plan = PlanFixture.plan(size: 3 * block)
        #expect(plan.read(2 * block..<2 * block + 10, readAhead: block) == ["fetch #0 131072..<196608", "wait #0"])
        #expect(plan.end(0, .failure(.rangesNotSupported)) == ["log warning", "fetch #1 0..<196608 whole", "ranges ignored"])
        #expect(plan.streamOnly)
        #expect(plan.read(10..<20, readAhead: block) == ["wait #1"])
        #expect(plan.write(1, 0..<3 * block) == ["answer 131072..<131082", "answer 10..<20", "cached 196608", "commit"])
    }

    @Test func aConditionNotHonouredAsksAgainWithoutItAndNeitherStreamsNorMarksTheServer() {
        var plan = PlanFixture.plan(size: 3 * block)
        #expect(plan.read(2 * block..<2 * block + 10, readAhead: block) == ["fetch #0 131072..<196608", "wait #0"])
        #expect(plan.end(0, .failure(.conditionNotHonoured)) == ["log notice", "retry #0 131072..<196608"])
        #expect(!plan.sendsCondition && !plan.streamOnly && plan.invalidated == nil)
        // Asked without the condition, the same reply is a plain range request ignored: now it is the file's.
        #expect(plan.end(0, .failure(.rangesNotSupported)) == ["log warning", "fetch #1 0..<196608 whole", "ranges ignored"])
    }

    @Test func aSecondTransferMeetingTheConditionNotHonouredIsAskedAgainQuietly() {
        var plan = PlanFixture.plan(size: 8 * block)
        _ = plan.read(0..<10)
        _ = plan.read(6 * block..<6 * block + 10)
        #expect(plan.transfers.count == 2)
        #expect(plan.end(0, .failure(.conditionNotHonoured)) == ["log notice", "retry #0 0..<4096"])
        #expect(plan.end(1, .failure(.conditionNotHonoured)) == ["retry #1 393216..<397312"])
    }

    @Test func aChangeMidReadFailsEveryReaderAndRefusesLaterReads() {
        var plan = PlanFixture.plan(size: 2 * block, blocks: [1])
        #expect(plan.read(0..<100, readAhead: block) == ["fetch #0 0..<65536", "wait #0"])
        #expect(plan.end(0, .failure(.changed("etag differs"))) == [
            "log error", "cached -65536", "invalidated",
            "fail \(Self.name): remote file changed (etag differs); open the file again",
        ])
        #expect(plan.readRefusal?.description == "\(Self.name): remote file changed (etag differs); open the file again")
        #expect(!plan.wantsBackgroundWork)
        #expect(plan.remoteChanged(because: "again").isEmpty)
    }

    @Test func aTransferStoppedForSpaceSendsItsReadersThroughAndReleasesItsPromise() {
        var plan = PlanFixture.plan(size: 4 * block)
        let piece = plan.nextBackgroundPiece(maxBytes: 2 * block)
        #expect(piece == 0..<131072)
        #expect(PlanFixture.lines(plan.startBackgroundTransfer(piece!, onFinish: { _ in })) == ["fetch #0 0..<131072 background"])
        #expect(plan.read(8192..<8202) == ["raise", "wait #0"])
        #expect(plan.takeReservation(of: 0, for: 4096) == 4096)
        #expect(plan.write(0, 0..<4096) == [])
        plan.stopForSpace(0)
        #expect(plan.end(0, .failure(.localStorage("no room"))) == [
            "unreserve 126976", "read through 8192..<8202", "notify true",
        ])
        #expect(plan.waitingForSpace && plan.transfers.isEmpty)
    }
}

@Suite struct FilePlanCommitTests {
    static let name = origin.redactedForDisplay

    /// A commit that failed drops what was not durable: readers whose bytes went with it and
    /// that no transfer will bring again are answered at once; a reader whose bytes are still
    /// coming keeps waiting.
    @Test(arguments: [
        (false, ["fail \(name): cannot keep fetched data: I/O error"]),
        (true, ["read through 0..<131072"]),
    ])
    func orphanedWaitersAfterARollback(outOfSpace: Bool, expected: [String]) {
        var plan = PlanFixture.plan(size: 2 * block)
        #expect(plan.read(0..<2 * block, readAhead: 0) == ["fetch #0 0..<131072", "wait #0"])
        #expect(plan.read(block..<block + 4096) == ["wait #1"])
        #expect(plan.write(0, 0..<block) == ["cached 65536"])
        let (available, durable, invalidated) = plan.commitStarting()
        #expect(available.contains(0) && !durable.contains(0) && !invalidated)
        let (dropped, actions) = plan.commitRolledBack(outOfSpace: outOfSpace, error: "I/O error")
        #expect(dropped == block)
        #expect(PlanFixture.lines(actions) == expected)
        #expect(plan.waiters.map(\.bytes) == [block..<block + 4096])
        #expect(plan.waitingForSpace == outOfSpace)
        // The transfer goes on and answers the reader that stayed; nothing is asked for again.
        #expect(plan.write(0, block..<2 * block) == ["answer 65536..<69632", "cached 65536"])
    }

    @Test func bytesDroppedByARollbackAreAskedForAgainByTheNextRead() {
        var plan = PlanFixture.plan(size: 2 * block)
        #expect(plan.read(0..<block, readAhead: 0) == ["fetch #0 0..<65536", "wait #0"])
        #expect(plan.read(block..<block + 100, readAhead: 0) == ["fetch #1 65536..<69632", "wait #1"])
        #expect(plan.write(0, 0..<block) == ["answer 0..<65536", "cached 65536"])
        #expect(plan.end(0, .success(())) == [])
        #expect(plan.read(100..<200) == ["answer 100..<200"])
        _ = plan.commitStarting()
        _ = plan.commitRolledBack(outOfSpace: false, error: "I/O error")
        // Reader #1's bytes are still coming: the rollback leaves it waiting for its transfer.
        #expect(plan.waiters.map(\.id) == [1])
        #expect(plan.end(1, .failure(.status(404))) == ["log error", "fail \(Self.name): \(RemoteError.status(404))"])
        #expect(plan.read(100..<200, readAhead: 0) == ["fetch #2 0..<4096", "wait #2"])
    }

    @Test func aReadFailsOnceItWaitedPastTheReadDeadlineAndNotBefore() {
        var plan = PlanFixture.plan(size: 2 * block)
        let deadline = plan.policy.readDeadline
        #expect(plan.read(0..<100) == ["fetch #0 0..<4096", "wait #0"])
        #expect(plan.read(block..<block + 100, at: .seconds(5)) == ["fetch #1 65536..<69632", "wait #1"])
        #expect(plan.expireWaiters(now: PlanFixture.start + deadline - .milliseconds(1)).isEmpty)
        let late = PlanFixture.lines(plan.expireWaiters(now: PlanFixture.start + deadline))
        #expect(late == ["log error", "fail \(Self.name): \(FetchError.Reason.timedOut(deadline))"], "\(late)")
        #expect(plan.waiters.map(\.id) == [1], "the later read still waits")
        #expect(plan.expireWaiters(now: PlanFixture.start + .seconds(5) + deadline).count == 2)
        #expect(plan.waiters.isEmpty)
        // The failed read's transfer goes on; its bytes answer nobody now.
        #expect(!plan.write(0, 0..<4096).contains { $0.hasPrefix("answer") })
    }

    @Test func aReaderLeftWithoutATransferAsksForItsPagesAgainWhenOneEnds() {
        var plan = PlanFixture.plan(size: 2 * block)
        #expect(plan.read(0..<100) == ["fetch #0 0..<4096", "wait #0"])
        // As after a rollback that dropped bytes its transfer had already passed.
        plan.waiters.append(FilePlan.Waiter(id: 9, bytes: block + 5000..<block + 5100, completion: noReply, deadline: .now + .seconds(120)))
        #expect(plan.write(0, 0..<4096) == ["answer 0..<100"])
        #expect(plan.end(0, .success(())) == ["fetch #1 69632..<73728"])
        #expect(plan.transfers[1]?.blocks.isEmpty == true)
    }

    @Test func anEvictionDropsEverythingUnlessTheFileIsInUse() {
        var plan = PlanFixture.plan(size: block + 1, blocks: [0, 1])
        plan.openHandles = 1
        #expect(plan.evictIfIdle() == nil)
        plan.openHandles = 0
        #expect(plan.evictIfIdle() == block + 1)
        #expect(plan.available.presentCount == 0 && !plan.complete)
        var empty = PlanFixture.plan(size: 0)
        #expect(empty.evictIfIdle() == 0 && empty.complete)
    }

    @Test func aRejectedVersionFailsEveryReaderAndForgetsItsBlocks() {
        var plan = PlanFixture.plan(size: 2 * block, blocks: [0])
        #expect(plan.read(block..<block + 10, readAhead: block) == ["fetch #0 65536..<131072", "wait #0"])
        #expect(PlanFixture.lines(plan.reject(because: "sha256 mismatch")) == [
            "fail \(Self.name): sha256 mismatch", "cached -65536", "rejected",
        ])
        #expect(plan.readRefusal?.description == "\(Self.name): sha256 mismatch")
        #expect(plan.reject(because: "again").isEmpty)
    }
}

@Suite struct FilePlanSourceTests {
    static let name = origin.redactedForDisplay

    private func twoWaitingTransfers() -> FilePlan {
        var plan = PlanFixture.plan(size: 4 * block, location: mirror)
        #expect(plan.read(0..<10) == ["fetch #0 0..<4096", "wait #0"])
        #expect(plan.read(3 * block..<3 * block + 10) == ["fetch #1 196608..<200704", "wait #1"])
        // A mirror that answers for good makes the file ask where it is now; one question at a time.
        #expect(plan.end(0, .failure(.servedElsewhere("other validator"))) == ["find source"])
        #expect(plan.end(1, .failure(.status(404))) == [])
        #expect(plan.awaitingSource.count == 2 && plan.transfers.count == 2)
        return plan
    }

    @Test func anotherMirrorOfTheSameSizeTakesOver() {
        var plan = twoWaitingTransfers()
        let info = RemoteFileInfo(size: 4 * block, validator: RemoteValidator(etag: "\"v2\"", lastModified: nil),
                                  modified: nil, finalURL: otherMirror)
        #expect(PlanFixture.lines(plan.sourceFound(.success(info))) == [
            "log notice", "save source \(otherMirror.absoluteString)", "retry #0 0..<4096", "retry #1 196608..<200704",
        ])
        #expect(plan.source.location == otherMirror && plan.awaitingSource.isEmpty)
    }

    @Test func anotherSizeIsARemoteChange() {
        var plan = twoWaitingTransfers()
        let info = RemoteFileInfo(size: 5 * block, validator: validator, modified: nil, finalURL: otherMirror)
        #expect(PlanFixture.lines(plan.sourceFound(.success(info))) == [
            "log error", "cached 0", "invalidated",
            "fail \(Self.name): remote file changed (size was 262144, now 327680); open the file again",
            "fail \(Self.name): remote file changed (size was 262144, now 327680); open the file again",
        ])
        #expect(plan.transfers.isEmpty)
    }

    @Test func noAnswerFailsEachTransferWithWhatItMet() {
        var plan = twoWaitingTransfers()
        #expect(PlanFixture.lines(plan.sourceFound(.failure(.transport("refused")))) == [
            "log warning",
            "log error", "fail \(Self.name): \(RemoteError.servedElsewhere("other validator"))",
            "log error", "fail \(Self.name): \(RemoteError.status(404))",
        ])
        #expect(plan.transfers.isEmpty && plan.waiters.isEmpty)
    }

    @Test func withoutAMirrorAFinalFailureDoesNotLookForOne() {
        var plan = PlanFixture.plan(size: block)
        #expect(plan.read(0..<10, readAhead: block) == ["fetch #0 0..<65536", "wait #0"])
        #expect(plan.end(0, .failure(.status(404))) == ["log error", "fail \(Self.name): \(RemoteError.status(404))"])
    }
}

@Suite struct FilePlanBackgroundTests {
    @Test func backgroundWorkTakesTheFirstGapNobodyFetches() {
        var plan = PlanFixture.plan(size: 6 * block + 1, blocks: [0])
        #expect(plan.read(block..<block + 10, readAhead: block) == ["fetch #0 65536..<196608", "wait #0"])
        let readerGone = PlanFixture.start + plan.policy.readerZoneIdle
        #expect(plan.nextBackgroundPiece(maxBytes: 2 * block, now: readerGone) == 3 * block..<5 * block)
        #expect(PlanFixture.lines(plan.startBackgroundTransfer(3 * block..<5 * block, onFinish: { _ in })) == ["fetch #1 196608..<327680 background"])
        #expect(plan.nextBackgroundPiece(maxBytes: 16 * block, now: readerGone) == 5 * block..<6 * block + 1)
        #expect(plan.transfers[1]?.reserved == 2 * block)
        #expect(plan.end(1, .success(())) == ["unreserve 131072", "notify true"])
    }

    @Test func backgroundWorkLeavesTheBlocksPastASequentialReaderToItsReadAhead() {
        var policy = PlanFixture.policy
        policy.readerZoneBytes = 4 * block
        var plan = PlanFixture.plan(size: 12 * block, blocks: [0], policy: policy)
        #expect(plan.read(block..<block + 10, readAhead: block) == ["fetch #0 65536..<196608", "wait #0"])
        // The zone runs from the block the read ended in to 4 blocks past its end: 1..<6.
        #expect(plan.readerZone(now: PlanFixture.start) == 1..<6)
        #expect(plan.backgroundWaitsForReader(now: PlanFixture.start))
        #expect(plan.nextBackgroundPiece(maxBytes: 2 * block, now: PlanFixture.start) == 6 * block..<8 * block)
        // A reader with no read-ahead (a jump) keeps no zone; the sequential one's lasts while it reads.
        #expect(plan.read(10 * block..<10 * block + 10, at: .seconds(1)) == ["fetch #1 655360..<659456", "wait #1"])
        #expect(plan.readerZone(now: PlanFixture.start + .seconds(1)) == 1..<6)
        // Once it has not read for `readerZoneIdle`, background work takes those blocks too.
        let readerGone = PlanFixture.start + policy.readerZoneIdle
        #expect(plan.readerZone(now: readerGone) == nil)
        #expect(!plan.backgroundWaitsForReader(now: readerGone))
        #expect(plan.nextBackgroundPiece(maxBytes: 2 * block, now: readerGone) == 3 * block..<5 * block)
    }

    @Test func nothingInTheBackgroundForAnEmptyOrCompleteFile() {
        #expect(!PlanFixture.plan(size: 0).wantsBackgroundWork)
        let whole = PlanFixture.plan(size: 2 * block, blocks: [0, 1])
        #expect(whole.nextBackgroundPiece(maxBytes: block) == nil)
    }
}
