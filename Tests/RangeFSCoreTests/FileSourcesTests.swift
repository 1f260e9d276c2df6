import Foundation
import Testing
@testable import RangeFSCore

/// The choice among a file's sources and their backoff, with no server and no clock: the
/// sources alone (`FileSources`), then the plan sending a transfer's attempts to them.
@Suite("File sources")
struct FileSourcesTests {
    typealias Fixture = PlanFixture
    static let mirrors = [Fixture.mirror, Fixture.otherMirror]
    static let policy = PlanFixture.policy

    /// Three sources of a file of `size` bytes, each answered by its probe with its own validator.
    static func probedSources(size: UInt64 = 4 * Fixture.block) -> FileSources {
        var sources = FileSources(origin: Fixture.origin, mirrors: mirrors,
                                  stored: FetchSource(location: nil, validator: Fixture.validator))
        #expect(sources.takeUnprobed() == [1, 2])
        for index in [1, 2] {
            let info = RemoteFileInfo(size: size, validator: RemoteValidator(etag: "\"m\(index)\"", lastModified: nil), modified: nil)
            #expect(sources.probed(index, .success(info), fileSize: size, origin: Fixture.origin,
                                   now: Fixture.start, policy: policy) == .usable)
        }
        return sources
    }

    @Test func theRecordBelongsToTheMirrorWhoseURLItNames() {
        let stored = FetchSource(location: Fixture.otherMirror, validator: Fixture.validator)
        var sources = FileSources(origin: Fixture.origin, mirrors: Self.mirrors, stored: stored)
        #expect(sources.recorded == 2)
        #expect(sources.takeUnprobed() == [0, 1])
        let redirected = FetchSource(location: URL(string: "http://127.0.0.1/elsewhere/file.bin")!, validator: Fixture.validator)
        #expect(FileSources(origin: Fixture.origin, mirrors: Self.mirrors, stored: redirected).recorded == 0,
                "a redirect's target is the manifest URL's")
    }

    @Test func aProbedMirrorKeepsItsOwnValidatorAndGoesToItsOwnPlace() {
        let sources = Self.probedSources()
        let mirror = sources.all[1].fetch
        #expect(mirror?.validator.etag == "\"m1\"")
        #expect(mirror?.requestURL(origin: Fixture.origin) == Fixture.mirror)
        #expect(sources.all[0].fetch?.validator == Fixture.validator)
    }

    @Test func theBestSourceHasTheFewestFailuresThenWouldServeSoonestThenComesFirst() {
        var sources = Self.probedSources()
        let now = Fixture.start
        #expect(sources.best(now: now) == 0, "the manifest's order breaks ties")
        sources.measured(0, bytesPerSecond: 1_000_000, at: now)
        #expect(sources.best(now: now) == 0, "an unmeasured source counts as fast as the fastest measured")
        sources.measured(1, bytesPerSecond: 500_000, at: now)
        sources.measured(2, bytesPerSecond: 2_000_000, at: now)
        #expect(sources.best(now: now) == 2, "then the fastest measured")
        sources.backOff(2, after: .status(503), now: now, policy: Self.policy)
        #expect(sources.best(now: now) == 0, "a source backing off is passed over")
        let later = now + .seconds(20)
        #expect(sources.best(now: later) == 0, "out of its backoff, its failure still ranks it last")
        sources.succeeded(2)
        #expect(sources.best(now: later) == 2)
        #expect(sources.best(now: later, avoiding: 2) == 0, "a retry goes elsewhere when it can")
    }

    @Test func requestsSpreadOverTheSourcesByTheirLoadAndSpeed() {
        var sources = Self.probedSources()
        let now = Fixture.start
        #expect(sources.best(now: now, running: [1, 0, 0]) == 1, "a source serving nothing yet comes before a busy one")
        #expect(sources.best(now: now, running: [1, 1, 0]) == 2)
        #expect(sources.best(now: now, running: [1, 1, 1]) == 0)
        sources.measured(0, bytesPerSecond: 10_000_000, at: now)
        sources.measured(1, bytesPerSecond: 10_000_000, at: now)
        sources.measured(2, bytesPerSecond: 1_000_000, at: now)
        #expect(sources.best(now: now, running: [1, 1, 0]) == 0,
                "a source ten times slower than the others gets nothing while they serve one request each")
        #expect(sources.best(now: now, running: [10, 10, 0]) == 2, "but once they are busier than that is worth")
        let muchLater = now + Self.policy.sourceSpeedMemory + .seconds(1)
        #expect(sources.best(now: muchLater, running: [1, 1, 0]) == 2,
                "speeds measured long ago are forgotten: the slow source is tried again, it may have recovered")
    }

    @Test func theBackoffGrowsWithEachFailureInARowAndASuccessEndsIt() {
        var sources = Self.probedSources()
        let now = Fixture.start
        // Doubling with a jitter of ×0.5…×1.5: the third delay is always longer than the first.
        let delays = (1...3).map { _ in sources.backOff(1, after: .transport("reset"), now: now, policy: Self.policy) }
        #expect(delays[2] > delays[0], "\(delays)")
        #expect(delays[2] >= Self.policy.retryBaseDelay * 2, "\(delays)")
        #expect(!sources.isUsable(1, now: now + delays[2] - .milliseconds(1)))
        #expect(sources.isUsable(1, now: now + delays[2]))
        #expect(sources.nextRecovery() == now + delays[2])
        let asked = sources.backOff(2, after: .status(503, retryAfter: .seconds(20)), now: now, policy: Self.policy)
        #expect(asked >= .seconds(20), "a Retry-After longer than the backoff is honoured")
        sources.succeeded(1)
        #expect(sources.all[1].failures == 0 && sources.isUsable(1, now: now))
    }

    @Test func aMirrorOfAnotherSizeIsDroppedAndEveryDroppedSourceIsNamed() {
        var sources = FileSources(origin: Fixture.origin, mirrors: Self.mirrors,
                                  stored: FetchSource(location: nil, validator: Fixture.validator))
        _ = sources.takeUnprobed()
        let other = RemoteFileInfo(size: 1000, validator: Fixture.validator, modified: nil)
        let outcome = sources.probed(1, .success(other), fileSize: 2000, origin: Fixture.origin, now: Fixture.start, policy: Self.policy)
        #expect(outcome == .dropped("its size is 1000 bytes where the file has 2000"))
        #expect(sources.probed(2, .failure(.status(404)), fileSize: 2000, origin: Fixture.origin,
                               now: Fixture.start, policy: Self.policy) == .dropped("HTTP status 404"))
        #expect(!sources.allDropped)
        sources.drop(0, because: "HTTP status 410")
        #expect(sources.allDropped)
        #expect(sources.summary == "http://127.0.0.1/data/file.bin (dropped: HTTP status 410); "
                + "http://127.0.0.1/mirror-a/file.bin (dropped: its size is 1000 bytes where the file has 2000); "
                + "http://127.0.0.1/mirror-b/file.bin (dropped: HTTP status 404)")
    }

    @Test func aRefreshedMirrorListKeepsWhatItKnowsAndDropsWhatItNoLongerLists() {
        var sources = Self.probedSources()
        sources.measured(2, bytesPerSecond: 1_000_000, at: Fixture.start)
        let third = URL(string: "http://127.0.0.1/mirror-c/file.bin")!
        #expect(sources.relist(mirrors: [Fixture.otherMirror, third]) == [0, 3, 1])
        #expect(sources.all.map(\.url) == [Fixture.origin, Fixture.otherMirror, third, Fixture.mirror])
        #expect(sources.all[1].bytesPerSecond == 1_000_000 && sources.all[1].fetch?.validator.etag == "\"m2\"",
                "a mirror still listed keeps what was learned of it")
        #expect(sources.takeUnprobed() == [2], "a new one is asked about before its first range")
        let states = sources.statuses(now: Fixture.start)
        #expect(states[3].state == .dropped && states[3].reason == "no longer in the manifest", "\(states)")
        #expect(sources.recorded == 0)
    }

    @Test func aRunningTransferFollowsItsSourceWhenTheListChangesAndAStaleProbeIsIgnored() {
        var plan = Self.planWithMirrors()
        #expect(Self.requested(&plan, 0) == Fixture.origin)
        #expect(plan.read(Fixture.block..<(2 * Fixture.block)) == ["fetch #1 65536..<131072", "wait #1"])
        #expect(Self.requested(&plan, 1) == Fixture.mirror, "the origin serves #0: #1 goes to the next")
        #expect(Fixture.lines(plan.relist(mirrors: [Fixture.otherMirror])).isEmpty, "both mirrors were asked about already")
        #expect(plan.transfers[1]?.source == 2, "#1 still names the mirror it asks, now last and dropped")
        #expect(plan.sources.isDropped(2))
        let info = RemoteFileInfo(size: 1, validator: Fixture.validator, modified: nil)
        #expect(Fixture.lines(plan.sourceProbed(1, .success(info), now: Fixture.start, probed: Fixture.mirror)).isEmpty)
        #expect(!plan.sources.isDropped(1), "an answer about the mirror once at index 1 does not touch the one there now")
        _ = plan.end(1, .failure(.status(503)))
        #expect(Self.requested(&plan, 1) == Fixture.otherMirror, "its retry goes to a mirror still listed")
    }

    @Test func aProbeThatKeepsFailingIsAskedAgainLaterThenDropped() {
        var sources = FileSources(origin: Fixture.origin, mirrors: [Fixture.mirror],
                                  stored: FetchSource(location: nil, validator: Fixture.validator))
        _ = sources.takeUnprobed()
        var outcomes: [FileSources.ProbeOutcome] = []
        for _ in 1...Self.policy.maxAttempts {
            outcomes.append(sources.probed(1, .failure(.transport("refused")), fileSize: 10, origin: Fixture.origin,
                                           now: Fixture.start, policy: Self.policy))
        }
        #expect(outcomes.dropLast().allSatisfy { if case .probeAgain = $0 { true } else { false } }, "\(outcomes)")
        #expect(outcomes.last == .dropped("refused"))
        #expect(sources.takeUnprobed().isEmpty)
    }

    // MARK: The plan and its sources

    /// A plan of a file of four blocks with two mirrors, both probed.
    static func planWithMirrors() -> FilePlan {
        var plan = FilePlan(url: Fixture.origin, layout: BlockLayout(fileSize: 4 * Fixture.block, blockSize: Fixture.block),
                            policy: PlanFixture.policy, blocks: BlockBitmap(blockCount: 4), complete: false, streamOnly: false,
                            expectedSHA256: nil, source: FetchSource(location: nil, validator: Fixture.validator),
                            mirrors: mirrors)
        #expect(plan.read(0..<Fixture.block) == ["probe source 1", "probe source 2", "fetch #0 0..<65536", "wait #0"])
        for index in [1, 2] {
            let info = RemoteFileInfo(size: 4 * Fixture.block, validator: RemoteValidator(etag: "\"m\(index)\"", lastModified: nil), modified: nil)
            #expect(Fixture.lines(plan.sourceProbed(index, .success(info), now: Fixture.start)).isEmpty)
        }
        return plan
    }

    @Test func aShortReplysSpeedIsAFloorBesideASourceMeasuredRunning() {
        var sources = Self.probedSources()
        let now = Fixture.start
        sources.measuredShortReply(1, bytesPerSecond: 900_000, at: now, memory: .seconds(30))
        sources.measuredShortReply(2, bytesPerSecond: 2_000_000, at: now, memory: .seconds(30))
        #expect(sources.expectedSpeeds(now: now, memory: .seconds(30)) == [2_000_000, 900_000, 2_000_000],
                "short replies alone rank the sources")
        sources.measured(0, bytesPerSecond: 20_000_000, at: now)
        #expect(sources.expectedSpeeds(now: now, memory: .seconds(30)) == [20_000_000, 20_000_000, 20_000_000],
                "beside a source measured running, a short reply's speed is only a floor")
        #expect(sources.best(now: now, running: [3, 0, 0]) == 1, "so the one a short reply found slow gets work again")
        sources.measuredShortReply(2, bytesPerSecond: 30_000_000, at: now, memory: .seconds(30))
        #expect(sources.expectedSpeeds(now: now, memory: .seconds(30))[2] == 30_000_000, "a floor above it counts")
        sources.measured(1, bytesPerSecond: 15_000_000, at: now)
        sources.measuredShortReply(1, bytesPerSecond: 500_000, at: now + .seconds(1), memory: .seconds(30))
        #expect(sources.all[1].bytesPerSecond == 15_000_000, "a short reply does not replace a speed measured running")
        let later = now + .seconds(40)
        sources.measuredShortReply(1, bytesPerSecond: 500_000, at: later, memory: .seconds(30))
        #expect(sources.expectedSpeeds(now: later, memory: .seconds(30)) == [500_000, 500_000, 500_000],
                "once that speed is forgotten, a short reply's counts again")
    }

    static func requested(_ plan: inout FilePlan, _ id: Int, at elapsed: Duration = .zero) -> URL? {
        guard case .request(let source) = plan.beginAttempt(id, now: Fixture.start + elapsed) else { return nil }
        return source.requestURL(origin: Fixture.origin)
    }

    /// A plan of a 1 MiB file (16 blocks) with two mirrors, both probed and measured at `speeds`.
    static func largePlanWithMirrors(_ speeds: [Double]) -> FilePlan {
        var plan = FilePlan(url: Fixture.origin, layout: BlockLayout(fileSize: 16 * Fixture.block, blockSize: Fixture.block),
                            policy: PlanFixture.policy, blocks: BlockBitmap(blockCount: 16), complete: false, streamOnly: false,
                            expectedSHA256: nil, source: FetchSource(location: nil, validator: Fixture.validator),
                            mirrors: mirrors)
        _ = plan.probeNewSources()
        for index in [1, 2] {
            let info = RemoteFileInfo(size: 16 * Fixture.block, validator: Fixture.validator, modified: nil)
            _ = plan.sourceProbed(index, .success(info), now: Fixture.start)
        }
        for (index, speed) in zip([1, 2], speeds) { plan.sources.measured(index, bytesPerSecond: speed, at: Fixture.start) }
        return plan
    }

    /// Background transfer #0 of the whole file, asked of the first source, brings 4 KiB and then
    /// 100 KB in the next second: 100 KB/s.
    static func slowBackgroundTransfer(_ plan: inout FilePlan) {
        #expect(plan.background(0..<(16 * Fixture.block)) == ["fetch #0 0..<1048576 background"])
        #expect(Self.requested(&plan, 0) == Fixture.origin)
        _ = plan.write(0, 0..<4096)
        _ = plan.write(0, 4096..<104_096, at: .seconds(1))
        _ = plan.takeReservation(of: 0, for: 104_096)
        #expect(plan.nextBackgroundPiece(maxBytes: 1 << 20) == nil, "every missing byte is on its way")
    }

    @Test func aMirrorIsMeasuredByATransferOnlyOnceItRanASamplesTime() throws {
        var plan = Self.largePlanWithMirrors([5_000_000, 10_000_000])
        #expect(plan.background(0..<(16 * Fixture.block)) == ["fetch #0 0..<1048576 background"])
        #expect(Self.requested(&plan, 0) == Fixture.origin)
        _ = plan.write(0, 0..<4096)
        _ = plan.write(0, 4096..<304_096, at: .milliseconds(2))
        #expect(plan.sources.all[0].bytesPerSecond == nil, "300 KB that came at once (buffered while held) are not its pace")
        _ = plan.write(0, 304_096..<504_096, at: .milliseconds(102))
        let speed = try #require(plan.sources.all[0].bytesPerSecond)
        #expect(abs(speed / (500_000 / 0.102) - 1) < 0.001, "500 KB over the sample's 102 ms")
    }

    @Test func aSlowSourcesTailGoesToAFasterOneOnceEveryMissingByteIsOnItsWay() {
        var plan = Self.largePlanWithMirrors([5_000_000, 10_000_000])
        Self.slowBackgroundTransfer(&plan)
        let actions = plan.takeOverSlowTail(now: Fixture.start + .seconds(1), onFinish: { _ in })
        // 944,480 bytes left at 100 KB/s (9.4 s): the slow one keeps 1/101 of them, to the next block.
        #expect(actions.map(Fixture.lines) == ["log info", "end early at 131072", "fetch #1 131072..<1048576 background"])
        #expect(plan.transfers[0]?.bytes == 0..<131_072 && plan.transfers[0]?.cut == true)
        #expect(plan.transfers[1]?.reserved == 1_048_576 - 131_072, "the budget's promise moved with the bytes")
        #expect(plan.transfers[0].map { $0.reserved + plan.transfers[1]!.reserved } == 1_048_576 - 104_096,
                "and nothing was promised twice")
        #expect(Self.requested(&plan, 1) == Fixture.otherMirror, "the tail goes to the fastest source")
        #expect(plan.takeOverSlowTail(now: Fixture.start + .seconds(1), onFinish: { _ in }) == nil,
                "the slow one's rest is short now: nothing more moves")
    }

    @Test func noTailMovesWhenNoOtherSourceIsTwiceAsFastOrTheTransferEndsSoon() {
        var plan = Self.largePlanWithMirrors([150_000, 150_000])
        Self.slowBackgroundTransfer(&plan)
        #expect(plan.takeOverSlowTail(now: Fixture.start + .seconds(1), onFinish: { _ in }) == nil)
        var quick = Self.largePlanWithMirrors([5_000_000, 10_000_000])
        #expect(quick.background(0..<(2 * Fixture.block)) == ["fetch #0 0..<131072 background"])
        _ = Self.requested(&quick, 0)
        _ = quick.write(0, 0..<4096)
        _ = quick.write(0, 4096..<104_096, at: .seconds(1))
        #expect(quick.takeOverSlowTail(now: Fixture.start + .seconds(1), onFinish: { _ in }) == nil,
                "0.3 s left: not worth a second request")
        var single = PlanFixture.plan(size: 16 * Fixture.block)
        _ = single.background(0..<(16 * Fixture.block))
        _ = single.write(0, 0..<4096)
        _ = single.write(0, 4096..<104_096, at: .seconds(1))
        #expect(single.takeOverSlowTail(now: Fixture.start + .seconds(1), onFinish: { _ in }) == nil,
                "a file with one URL has nowhere else to go")
    }

    @Test func aTransientFailureSendsTheRestToAnotherSourceAtOnce() {
        var plan = Self.planWithMirrors()
        #expect(Self.requested(&plan, 0) == Fixture.origin)
        #expect(plan.write(0, 0..<1000) == [])
        #expect(plan.end(0, .failure(.status(503))) == ["log warning", "retry #0 1000..<65536"])
        #expect(Self.requested(&plan, 0) == Fixture.mirror, "the retry goes to the next source")
        #expect(plan.end(0, .failure(.transport("reset"))) == ["log warning", "retry #0 1000..<65536"])
        #expect(Self.requested(&plan, 0) == Fixture.otherMirror)
        #expect(plan.write(0, 1000..<65536) == ["answer 0..<65536", "cached 65536"])
        #expect(plan.end(0, .success(())) == ["commit"])
        #expect(plan.sources.all.map(\.failures) == [1, 1, 0])
    }

    @Test func transfersWaitForAProbeWhenNoSourceIsUsable() {
        var plan = FilePlan(url: Fixture.origin, layout: BlockLayout(fileSize: 4 * Fixture.block, blockSize: Fixture.block),
                            policy: PlanFixture.policy, blocks: BlockBitmap(blockCount: 4), complete: false, streamOnly: false,
                            expectedSHA256: nil, source: FetchSource(location: Fixture.mirror, validator: Fixture.validator),
                            mirrors: [Fixture.mirror])
        // The record is the mirror's: the manifest URL is asked about first.
        #expect(plan.read(0..<Fixture.block) == ["probe source 0", "fetch #0 0..<65536", "wait #0"])
        #expect(Self.requested(&plan, 0) == Fixture.mirror)
        #expect(plan.end(0, .failure(.status(404))) == ["log warning"], "parked: the manifest URL is not probed yet")
        #expect(plan.transfers[0]?.parked == true)
        let info = RemoteFileInfo(size: 4 * Fixture.block, validator: Fixture.validator, modified: nil)
        #expect(Fixture.lines(plan.sourceProbed(0, .success(info), now: Fixture.start)) == ["retry #0 0..<65536"])
        #expect(Self.requested(&plan, 0) == Fixture.origin)
    }

    @Test func aSourceWhoseCopyChangedIsDroppedAndItsUnsettledBytesForgotten() {
        var plan = Self.planWithMirrors()
        #expect(Self.requested(&plan, 0) == Fixture.origin)
        #expect(plan.write(0, 0..<Fixture.block) == ["answer 0..<65536", "cached 65536"])
        #expect(plan.end(0, .success(())) == ["commit"])
        #expect(plan.read(Fixture.block..<(2 * Fixture.block)) == ["fetch #1 65536..<131072", "wait #1"])
        #expect(Self.requested(&plan, 1) == Fixture.origin)
        #expect(plan.end(1, .failure(.changed("ETag is no longer \"v1\""))) == ["log warning", "cached -65536", "retry #1 65536..<131072"],
                "block 0 came from the changed copy and was not durable yet")
        #expect(!plan.available.contains(0))
        #expect(plan.sources.statuses(now: Fixture.start).map(\.state) == [.dropped, .ok, .ok])
        #expect(Self.requested(&plan, 1) == Fixture.mirror)
    }

    /// Block 0 fetched from the first source and durable; a reader of block 1 waits on transfer #1.
    static func planWithADurableBlockAndAReaderOfTheNext() -> FilePlan {
        var plan = Self.planWithMirrors()
        _ = Self.requested(&plan, 0)
        _ = plan.write(0, 0..<Fixture.block)
        _ = plan.end(0, .success(()))
        let (snapshot, _, _) = plan.commitStarting()
        plan.committed(snapshot, complete: false)
        #expect(plan.read(Fixture.block..<(2 * Fixture.block)) == ["fetch #1 65536..<131072", "wait #1"])
        return plan
    }

    @Test func bytesMadeDurableAreKeptWhenTheirSourceIsDroppedLater() {
        var plan = Self.planWithADurableBlockAndAReaderOfTheNext()
        _ = Self.requested(&plan, 1)
        #expect(plan.end(1, .failure(.changed("size was 262144, now 5"))) == ["log warning", "retry #1 65536..<131072"])
        #expect(plan.available.contains(0))
    }

    @Test func blocksOfACopyFoundToDifferWhileTheirCommitRunsAreNotKept() {
        var plan = Self.planWithMirrors()
        _ = Self.requested(&plan, 0)
        _ = plan.write(0, 0..<Fixture.block)
        _ = plan.end(0, .success(()))
        #expect(plan.read(Fixture.block..<(2 * Fixture.block)) == ["fetch #1 65536..<131072", "wait #1"])
        _ = Self.requested(&plan, 1)
        let (snapshot, _, _) = plan.commitStarting()
        #expect(snapshot.contains(0))
        // The commit syncs and stores block 0 while the same source's next reply shows another copy.
        _ = plan.end(1, .failure(.changed("ETag is no longer \"v1\"")))
        let corrected = plan.committed(snapshot, complete: false)
        #expect(corrected.map { !$0.contains(0) } == true, "the database is told again, without block 0")
        #expect(!plan.durable.contains(0) && !plan.available.contains(0))
        var unrelated = Self.planWithMirrors()
        _ = Self.requested(&unrelated, 0)
        _ = unrelated.write(0, 0..<Fixture.block)
        let (kept, _, _) = unrelated.commitStarting()
        #expect(unrelated.committed(kept, complete: false) == nil, "nothing forgotten, nothing to correct")
    }

    @Test func whenEverySourceIsDroppedTheReadersFailNamingThemAndCachedBytesStayReadable() {
        var plan = Self.planWithADurableBlockAndAReaderOfTheNext()
        for expected in [Fixture.origin, Fixture.mirror] {
            #expect(Self.requested(&plan, 1) == expected)
            #expect(plan.end(1, .failure(.status(404))) == ["log warning", "retry #1 65536..<131072"])
        }
        #expect(Self.requested(&plan, 1) == Fixture.otherMirror)
        let last = plan.end(1, .failure(.status(410)))
        #expect(last == ["log warning", "log error", "fail \(Fixture.name): no source serves it: \(plan.sources.summary)"], "\(last)")
        #expect(plan.sources.summary.contains("mirror-b/file.bin (dropped: HTTP status 410)"))
        #expect(plan.read(0..<4096) == ["answer 0..<4096"])
        #expect(plan.read(3 * Fixture.block..<(4 * Fixture.block)) == ["fail \(Fixture.name): no source serves it: \(plan.sources.summary)"])
        #expect(!plan.wantsBackgroundWork)
    }

    @Test func aFileWithOneURLKeepsItsUsualRetries() {
        var plan = Fixture.plan(size: 4 * Fixture.block)
        #expect(plan.read(0..<Fixture.block) == ["fetch #0 0..<65536", "wait #0"])
        #expect(Self.requested(&plan, 0) == Fixture.origin)
        #expect(plan.end(0, .failure(.status(503))) == ["log warning", "retry #0 0..<65536"])
        #expect(plan.sources.all[0].failures == 0, "one source is not ranked or backed off")
        #expect(plan.end(0, .failure(.status(404))) == ["log error", "fail \(Fixture.name): HTTP status 404"])
    }
}
