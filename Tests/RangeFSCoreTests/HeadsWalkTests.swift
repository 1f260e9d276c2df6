import Testing
@testable import RangeFSCore

/// The prefetcher's walk over the heads and tails: manifest order, entries waiting for their
/// size passed and visited again, and a new manifest's walk leaving out what was done.
@Suite struct HeadsWalkTests {
    @Test func entriesAreVisitedInOrderAndTheWalkStaysOnOneUntilItIsDone() {
        var walk = HeadsWalk(entries: [4, 7, 9])
        #expect(walk.current() == 4)
        // A head started: the walk stays there for the tail.
        #expect(walk.current() == 4)
        walk.finish(4)
        #expect(walk.current() == 7)
        walk.finish(7)
        walk.finish(9)
        #expect(walk.current() == nil && walk.isFinished)
    }

    @Test func anEntryWaitingForItsSizeComesBackAfterTheOthers() {
        var walk = HeadsWalk(entries: [1, 2, 3])
        walk.pass(1)
        #expect(walk.remaining == 3)
        walk.finish(2)
        walk.finish(3)
        #expect(!walk.isFinished)
        #expect(walk.current() == 1)
        walk.pass(1)
        #expect(walk.current() == 1, "still waiting: it comes back again")
        walk.finish(1)
        #expect(walk.current() == nil && walk.isFinished && walk.remaining == 0)
    }

    @Test func aStepForAnEntryThatIsNoLongerCurrentChangesNothing() {
        var walk = HeadsWalk(entries: [1, 2])
        walk.finish(2)
        walk.pass(2)
        #expect(walk.current() == 1 && walk.remaining == 2)
    }

    @Test func aNewManifestWalksOnlyItsEntriesNotDoneBefore() {
        var walk = HeadsWalk(entries: [1, 2, 3])
        walk.finish(1)
        walk.pass(2)
        walk.restart(with: [1, 2, 3, 4])
        #expect(walk.upcoming(10) == [2, 3, 4])
        #expect(walk.current() == 2)
    }

    @Test func theLookAheadStopsAtTheEnd() {
        let walk = HeadsWalk(entries: Array(0..<100))
        #expect(walk.upcoming(64).count == 64)
        #expect(HeadsWalk(entries: [5]).upcoming(64) == [5])
        #expect(HeadsWalk(entries: []).isFinished)
    }
}
