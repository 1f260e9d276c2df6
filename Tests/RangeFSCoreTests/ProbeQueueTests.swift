import Synchronization
import Testing
@testable import RangeFSCore

/// The order and limits in which size probes start. Starts are recorded, not performed.
@Suite struct ProbeQueueTests {
    private final class Started: Sendable {
        let entries = Mutex<[(entry: Int, connection: ConnectionUse)]>([])
        var list: [Int] { entries.withLock { $0.map(\.entry) } }
        func connection(of entry: Int) -> ConnectionUse? {
            entries.withLock { $0.first { $0.entry == entry }?.connection }
        }
    }

    private func makeQueue(total: Int = 2, lowPriority: Int = 1, streams: Int = 32,
                           afterReader: Duration = .zero) -> (ProbeQueue, Started) {
        let started = Started()
        let limits = ProbeQueue.Limits(total: total, lowPriority: lowPriority, streams: streams, afterReader: afterReader)
        let queue = ProbeQueue(limits: limits) { entry, connection in
            started.entries.withLock { $0.append((entry, connection)) }
        }
        return (queue, started)
    }

    @Test func startsNoMoreThanTheLimitAndReadersFirst() {
        let (queue, started) = makeQueue(total: 2, lowPriority: 1)
        queue.enqueue(1, priority: .listing)
        queue.enqueue(2, priority: .listing)
        queue.enqueue(3, priority: .background)
        #expect(started.list == [1], "listings and the background share one slot here")
        queue.enqueue(4, priority: .reader)
        #expect(started.list == [1, 4], "a reader takes the slot low priorities may not")
        queue.enqueue(5, priority: .reader)
        #expect(started.list == [1, 4], "at most two at once")
        queue.finished(4)
        #expect(started.list == [1, 4, 5], "a waiting reader goes before waiting listings")
        queue.finished(1)
        #expect(started.list == [1, 4, 5, 2])
        queue.finished(2)
        #expect(started.list == [1, 4, 5, 2, 3], "the background comes last")
    }

    @Test func aReaderMovesAQueuedProbeUp() {
        let (queue, started) = makeQueue(total: 1, lowPriority: 1)
        queue.enqueue(1, priority: .listing)
        queue.enqueue(2, priority: .listing)
        queue.enqueue(3, priority: .listing)
        queue.enqueue(3, priority: .reader)
        queue.finished(1)
        #expect(started.list == [1, 3], "the entry a reader waits on went first")
        queue.finished(3)
        #expect(started.list == [1, 3, 2], "and was not started twice")
        queue.finished(2)
        #expect(started.list == [1, 3, 2])
    }

    @Test func aRunningOrQueuedProbeIsNotQueuedAgain() {
        let (queue, started) = makeQueue(total: 1, lowPriority: 1)
        queue.enqueue(7, priority: .reader)
        queue.enqueue(7, priority: .reader)
        queue.enqueue(8, priority: .listing)
        queue.enqueue(8, priority: .background)
        queue.finished(7)
        queue.finished(8)
        #expect(started.list == [7, 8])
    }

    /// The open and read after a `stat` should find the connection its probe used: background
    /// probes wait a moment after a probe a reader waited on (from its start, or raised while
    /// it ran), then go on.
    @Test(arguments: [false, true])
    func aProbeAReaderWaitedOnHoldsBackgroundProbesAMoment(raisedWhileRunning: Bool) {
        let (queue, started) = makeQueue(total: 2, lowPriority: 2, afterReader: .milliseconds(300))
        if raisedWhileRunning {
            queue.enqueue(1, priority: .background)
            queue.enqueue(1, priority: .reader)
        } else {
            queue.enqueue(1, priority: .reader)
        }
        queue.enqueue(2, priority: .background)
        queue.enqueue(3, priority: .background)
        #expect(started.list == [1, 2])
        queue.finished(1)
        let ended = ContinuousClock.now
        #expect(started.list == [1, 2], "a background probe took the reader's place at once")
        #expect(FilesystemHarness.eventually(timeout: 5) { started.list == [1, 2, 3] }, "the background goes on after the moment")
        #expect(ContinuousClock.now - ended >= .milliseconds(250))
    }

    /// Listings' probes are for a reader's next look-ups: they are not held.
    @Test func listingProbesGoOnWhileBackgroundProbesWait() {
        let (queue, started) = makeQueue(total: 2, lowPriority: 2, afterReader: .seconds(5))
        queue.enqueue(1, priority: .reader)
        queue.enqueue(2, priority: .background)
        queue.enqueue(3, priority: .background)
        queue.enqueue(4, priority: .listing)
        queue.finished(1)
        #expect(started.list == [1, 2, 4])
        queue.finished(4)
        #expect(started.list == [1, 2, 4], "the background probe waits")
    }

    @Test func aBackgroundProbeEndingHoldsNothing() {
        let (queue, started) = makeQueue(total: 1, lowPriority: 1, afterReader: .seconds(5))
        queue.enqueue(1, priority: .background)
        queue.enqueue(2, priority: .background)
        queue.finished(1)
        #expect(started.list == [1, 2])
    }

    // MARK: A listing's probes as streams of a shared connection

    @Test func aListingsProbesGoAsStreamsAndOthersOnConnectionsOfTheirOwn() {
        let (queue, started) = makeQueue(total: 4, lowPriority: 3)
        queue.enqueue(1, priority: .reader)
        queue.enqueue(2, priority: .listing)
        queue.enqueue(3, priority: .background)
        #expect(started.list == [1, 2, 3])
        #expect(started.connection(of: 1) == .own, "the read after a stat reuses its probe's connection")
        #expect(started.connection(of: 2) == .stream)
        #expect(started.connection(of: 3) == .own)
    }

    @Test func streamsThatWorkRunBeyondTheConnectionsLimits() {
        let (queue, started) = makeQueue(total: 2, lowPriority: 1, streams: 3)
        for entry in 1...6 { queue.enqueue(entry, priority: .listing) }
        #expect(started.list == [1], "until a stream came back, they stay within the connections' limits")
        queue.finished(1, cameAsStream: true)
        #expect(started.list == [1, 2, 3, 4], "then the stream window's worth go at once")
        queue.enqueue(9, priority: .background)
        #expect(started.list == [1, 2, 3, 4, 9], "streams take no connection: the background still finds one")
        queue.finished(2, cameAsStream: true)
        #expect(started.list == [1, 2, 3, 4, 9, 5])
    }

    @Test func aReaderWaitingOnAListedProbeKeepsItAStream() {
        let (queue, started) = makeQueue(total: 1, lowPriority: 1, streams: 2)
        queue.enqueue(1, priority: .listing)
        queue.finished(1, cameAsStream: true)
        queue.enqueue(2, priority: .listing)
        queue.enqueue(3, priority: .listing)
        queue.enqueue(4, priority: .listing)
        queue.enqueue(4, priority: .reader)
        #expect(started.list == [1, 2, 3], "a full stream window makes the reader's listed probe wait")
        queue.finished(2, cameAsStream: true)
        #expect(started.list == [1, 2, 3, 4])
        #expect(started.connection(of: 4) == .stream, "`ls -l` asks for each of a listing's files in turn")
    }

    @Test func aListingsProbesThatDoNotComeBackAsStreamsGoOnConnectionsOfTheirOwn() {
        let (queue, started) = makeQueue(total: 2, lowPriority: 2)
        for entry in 1...4 { queue.enqueue(entry, priority: .listing) }
        #expect(started.list == [1, 2])
        queue.finished(1, cameAsStream: false)
        #expect(started.list == [1, 2, 3], "still within the connections' limits")
        #expect(started.connection(of: 3) == .own, "a server without streams is asked as for any probe")
        queue.finished(2, cameAsStream: false)
        queue.finished(3, cameAsStream: false)
        #expect(started.list == [1, 2, 3, 4])
    }
}
