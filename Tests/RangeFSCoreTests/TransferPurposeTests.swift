import Foundation
import Testing
@testable import RangeFSCore

/// The scheduling vocabulary (`TransferPurpose`): each rule the client and the plan ask, for
/// every purpose, as the flags it replaced answered them.
@Suite struct TransferPurposeTests {
    @Test func eachPurposeAnswersTheRulesAsTheOldFlagsDid() {
        // (makes background wait, waits while readers wait, background work, may be raised, for a reader)
        let expected: [TransferPurpose: (Bool, Bool, Bool, Bool, Bool)] = [
            .reader: (true, false, false, false, true),
            .readAhead: (false, false, false, true, true),
            .probe: (true, false, false, false, false),
            .document: (true, false, false, false, false),
            .headsAndTails: (false, false, true, true, false),
            .background: (false, true, true, true, false),
        ]
        for purpose in TransferPurpose.allCases {
            guard let rules = expected[purpose] else { Issue.record("\(purpose)"); continue }
            #expect(purpose.makesBackgroundWait == rules.0, "\(purpose)")
            #expect(purpose.waitsWhileReadersWait == rules.1, "\(purpose)")
            #expect(purpose.isBackgroundWork == rules.2, "\(purpose)")
            #expect(purpose.mayBeRaised == rules.3, "\(purpose)")
            #expect(purpose.isForReader == rules.4, "\(purpose)")
        }
    }

    /// Readers' transfers are never held; whole-file work is held by readers and every quiet;
    /// heads and tails only by a pause, a walk or the mount's first moments.
    @Test(arguments: [(false, false), (false, true), (true, true)])
    func theGateHoldsOnlyBackgroundWork(headsAndTails: Bool, background: Bool) {
        let holds = BackgroundGate.Holds(headsAndTails: headsAndTails, background: background)
        for purpose in TransferPurpose.allCases {
            let held = holds.hold(purpose)
            switch purpose {
            case .reader, .readAhead, .probe, .document: #expect(!held, "\(purpose)")
            case .headsAndTails: #expect(held == headsAndTails)
            case .background: #expect(held == background)
            }
        }
    }

    @Test func aQuietAfterACompleteOpenLeavesHeadsAndTailsGoing() {
        let gate = BackgroundGate()
        #expect(gate.quietTimeLeft == nil)
        gate.quiet(.completeFileOpened).extend(by: .seconds(30))
        #expect(gate.holds.background && !gate.holds.headsAndTails)
        for reason in [BackgroundQuiet.treeWalk, .mountGrace, .fastCachedReads] {
            let other = BackgroundGate()
            other.quiet(reason).extend(by: .seconds(30))
            #expect(other.holds.background && other.holds.headsAndTails, "\(reason)")
        }
    }

    @Test func aReaderHandedInHoldsWholeFileWorkUntilTheLoopTakesIt() {
        let gate = BackgroundGate()
        gate.readerArrived()
        #expect(gate.holds.background && !gate.holds.headsAndTails)
        gate.readersTaken()
        #expect(!gate.holds.background)
        gate.setReaderRunning(true)
        #expect(gate.holds.background)
        gate.setReaderRunning(false)
        gate.setPaused(true)
        #expect(gate.holds.background && gate.holds.headsAndTails)
    }

    /// A walk quiets background work only while no file was opened and no listing came from a
    /// distant server for `scanOpensWithin`.
    @Test func aWalkQuietsOnlyWithoutOpensOrDistantListings() {
        let policy = FetchPolicy()
        let long = policy.scanOpensWithin + .milliseconds(1)
        #expect(BackgroundQuiet.walkQuiets(sinceLastOpen: long, sinceLastDistantListing: long, policy: policy))
        #expect(!BackgroundQuiet.walkQuiets(sinceLastOpen: .milliseconds(5), sinceLastDistantListing: long, policy: policy))
        #expect(!BackgroundQuiet.walkQuiets(sinceLastOpen: long, sinceLastDistantListing: .milliseconds(5), policy: policy))
        #expect(BackgroundQuiet.isDistant(listingTime: policy.distantListingTime, policy: policy))
        #expect(!BackgroundQuiet.isDistant(listingTime: .milliseconds(2), policy: policy), "a near server answers in a millisecond or two")
    }

    /// A server's distance is its quickest recent answer: a near server's listings that waited
    /// for the CPU (or behind other streams) do not make it distant, while a server whose
    /// answers all take a round trip is distant again once its quick answers are forgotten.
    @Test func aServersDistanceIsItsQuickestRecentListing() {
        let policy = FetchPolicy()
        var times = RecentListingTimes()
        #expect(times.shortest == .zero, "no listing yet")
        times.record(.milliseconds(2))
        for _ in 1..<RecentListingTimes.kept { times.record(.milliseconds(60)) }
        #expect(times.shortest == .milliseconds(2))
        #expect(!BackgroundQuiet.isDistant(listingTime: times.shortest, policy: policy), "slow answers beside a quick one")
        times.record(.milliseconds(45))
        #expect(times.shortest == .milliseconds(45), "the quick answer was the oldest kept")
        #expect(BackgroundQuiet.isDistant(listingTime: times.shortest, policy: policy))
    }

    /// The plan keeps its own view of a transfer's purpose, raised in the step that returns
    /// `.raise`; the shared control changes only when the shell performs it.
    @Test func thePlanRaisesItsOwnViewAndLeavesTheControlToTheShell() {
        let block = PlanFixture.block
        var plan = PlanFixture.plan(size: 16 * block)
        _ = plan.background(0..<block)
        #expect(plan.transfers[0]?.startedAs == .background && plan.transfers[0]?.purpose == .background)
        #expect(plan.read(0..<4096) == ["raise", "wait #0"])
        #expect(plan.transfers[0]?.purpose == .reader && plan.transfers[0]?.startedAs == .background)
        #expect(plan.transfers[0]?.control.purpose == .background, "the shell raises it after the lock")
    }
}
