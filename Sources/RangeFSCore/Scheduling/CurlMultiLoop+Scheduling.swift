import CCurl
import Foundation

/// The client loop's side of scheduling (rules 1 and 3 of the note in `TransferPurpose.swift`):
/// which handed-in transfers start, which background transfers stand still, and how one makes
/// way for a reader's request (runs to its end, or hands its connection over). Runs on the
/// loop thread only, as the rest of `CurlMultiLoop` does.
extension CurlMultiLoop {
    /// Starts what may start, holds what must wait, and tells background transfers (through
    /// the gate) whether a reader is waiting.
    func schedule() {
        startWaitingBackground(inbox.gate.holds)
        inbox.gate.setReaderRunning(active.values.contains { $0.purpose.makesBackgroundWait })
        holdBackground(inbox.gate.holds)
    }

    /// A transfer raised to a reader's while it waited starts at once; background ones
    /// start while no reader waits (heads and tails also while one does), within the
    /// background connection limit, and only where their server has more than the reserved
    /// connections free.
    private func startWaitingBackground(_ holds: BackgroundGate.Holds) {
        guard !waitingBackground.isEmpty else { return }
        var running = active.values.count { $0.purpose.isBackgroundWork }
        var stillWaiting: [TransferSpec] = []
        for spec in waitingBackground {
            if !spec.purpose.isBackgroundWork {
                startAheadOfBackground(spec)
            } else if !holds.hold(spec.purpose), running < configuration.backgroundConnectionLimit,
                      connections(to: spec.server) < configuration.backgroundConnectionLimit,
                      !(spec.isRateCapped && rateBudget?.isSpent() == true) {
                start(spec)
                running += 1
            } else {
                stillWaiting.append(spec)
            }
        }
        waitingBackground = stillWaiting
    }

    /// Requests to `server` that hold or wait for one of its connections.
    private func connections(to server: String) -> Int {
        active.values.count { $0.server == server }
    }

    /// A transfer that is not background work (a reader's request, read-ahead, a probe, a
    /// document) goes out now. libcurl opens at most `maxConnectionsPerHost`
    /// connections to a server and queues what comes beyond them, first come first served: a
    /// reader's request would wait there behind a collection's size probes while held background
    /// transfers keep their connections. As many background transfers as the request needs
    /// connections make room: one whose rest would come within `backgroundFinishesWithin` runs
    /// to its end (it is no longer held) and the request takes its connection then, since giving
    /// it up would lose what the server has already sent it (on loopback, often all of it); a
    /// slower one gives its connection up and asks for the rest of its bytes again once readers
    /// are done. One whose pace is not known yet runs until it is (`reviewFinishingFirst`).
    func startAheadOfBackground(_ spec: TransferSpec) {
        // One handing its connection over frees it within milliseconds.
        let leaving = active.values.count { $0.handOver != nil && $0.server == spec.server }
        var excess = connections(to: spec.server) - leaving + 1 - configuration.maxConnectionsPerHost
        // One already finishing first frees its connection for an earlier request.
        let background = active.filter {
            $0.value.purpose.isBackgroundWork && !$0.value.makingWayForReader && $0.value.server == spec.server
        }
        for (easy, transfer) in background where excess > 0 {
            if finishesSoon(transfer) ?? true {
                transfer.finishesFirst = true
                excess -= 1
            } else if giveUpConnection(of: easy, transfer) {
                excess -= 1
            }
        }
        // libcurl hands a freed connection to the request it queued first: probes still waiting
        // for a connection to this server (a listing's) are queued again behind this request.
        let queuedProbes = active.filter { $0.value.isProbe && $0.value.server == spec.server && $0.value.isWaitingToSend }
        for easy in queuedProbes.keys { curl_multi_remove_handle(multi.raw, easy) }
        start(spec)
        for easy in queuedProbes.keys { curl_multi_add_handle(multi.raw, easy) }
    }

    /// Whether a background transfer's rest comes within `backgroundFinishesWithin`; nil while
    /// its pace is unknown (no body byte yet) and it started less than that long ago.
    private func finishesSoon(_ transfer: CurlTransfer) -> Bool? {
        let limit = configuration.backgroundFinishesWithin
        guard let rest = transfer.expectedRestDuration else {
            return ContinuousClock.now - transfer.startedAt < limit ? nil : false
        }
        return rest <= limit
    }

    /// A background transfer let run to its end for a reader's sake that turns out slow gives
    /// its connection up after all. True while some are still undecided (the loop then looks
    /// again soon instead of sleeping up to a second).
    func reviewFinishingFirst() -> Bool {
        var undecided = false
        for (easy, transfer) in active where transfer.finishesFirst && transfer.purpose.isBackgroundWork {
            switch finishesSoon(transfer) {
            case nil: undecided = true
            case false?: _ = giveUpConnection(of: easy, transfer)
            case true?: break
            }
        }
        return undecided
    }

    /// Ends a background transfer here and queues the rest of its range; false when it has
    /// no rest to ask for (then it keeps its connection). One that was held first takes what
    /// reached this machine while it stood still (`HandOver`; `endHandOvers` ends it).
    private func giveUpConnection(of easy: UnsafeMutableRawPointer, _ transfer: CurlTransfer) -> Bool {
        guard transfer.remainder() != nil else { return false }
        guard transfer.isPaused else { return endForReader(easy, transfer) }
        transfer.handOver = HandOver()
        resume(easy, transfer)
        return true
    }

    /// Hand-overs that took what had arrived, or whose time is up, give their connections up
    /// now. True while some are still taking what arrived (the loop then looks again in a
    /// millisecond). Runs after `curl_multi_perform`, so each hand-over had a round of reading.
    func endHandOvers() -> Bool {
        var pending = false
        let now = ContinuousClock.now
        for (easy, transfer) in active {
            guard let handOver = transfer.handOver else { continue }
            if !transfer.handOverIsOver(now: now) {
                pending = true
                continue
            }
            if handOver.ranOutOfTime(now: now) { transfer.metrics.handOverRanOutOfTime() }
            if !endForReader(easy, transfer) {
                // Nothing is left to ask for: it runs to its end.
                transfer.handOver = nil
                transfer.finishesFirst = true
            }
        }
        return pending
    }

    /// Removes a background transfer and queues the rest of its range at the front of the
    /// background work; false when it has no rest to ask for.
    private func endForReader(_ easy: UnsafeMutableRawPointer, _ transfer: CurlTransfer) -> Bool {
        guard let rest = transfer.remainder() else { return false }
        ConnectionRules.closeConnectionWhenDone(easy)
        curl_multi_remove_handle(multi.raw, easy)
        active[easy] = nil
        transfer.gaveUpItsConnection()
        waitingBackground.insert(rest, at: 0)
        return true
    }

    /// While a reader waits on a transfer, background transfers stop receiving (TCP flow
    /// control then slows their senders), so a reader gets the whole link; the same
    /// holds them while background work is paused. libcurl does not count a paused transfer
    /// as stalled. Background transfers also pause themselves from their write callback when
    /// the gate closes (`CurlTransfer.receive`); this lets them go again. Heads and tails
    /// (`headsAndTails`) stand still only while background work is paused or a program walks
    /// the tree without opening files (`BackgroundQuiet.treeWalk`).
    private func holdBackground(_ holds: BackgroundGate.Holds) {
        for (easy, transfer) in active {
            liftCapOfRaised(easy, transfer)
            // A transfer raised to a reader's while held is let go at once. One still
            // reading its headers is left alone: libcurl can replay a paused response's
            // buffered headers after its body, which would defeat the checks on them.
            let hold = transfer.mustStandStill(holds) && !transfer.makingWayForReader
                && (transfer.isPaused || transfer.isReceivingBody)
            guard transfer.isPaused != hold else { continue }
            if hold {
                curl_easy_pause(easy, CURLPAUSE_RECV)
                transfer.isPaused = true
            } else {
                resume(easy, transfer)
            }
        }
    }

    /// A background range a reader now waits on is no longer kept to `--max-rate` (libcurl reads
    /// the cap at each of its checks, so it can be lifted while the transfer runs).
    private func liftCapOfRaised(_ easy: UnsafeMutableRawPointer, _ transfer: CurlTransfer) {
        guard transfer.isRateCapped, !transfer.purpose.isBackgroundWork else { return }
        rangefs_easy_setopt_off(easy, CURLOPT_MAX_RECV_SPEED_LARGE, 0)
        transfer.isRateCapped = false
    }

    /// How long until the rate budget lets capped background work go on; nil when none waits on it.
    var rateBudgetHoldLeft: Duration? {
        guard let rateBudget, rateBudget.isSpent() else { return nil }
        let waiting = active.values.contains { $0.isRateCapped && $0.isPaused } || waitingBackground.contains { $0.isRateCapped }
        return waiting ? rateBudget.timeUntilAvailable() : nil
    }

    /// Lets a held transfer receive again.
    private func resume(_ easy: UnsafeMutableRawPointer, _ transfer: CurlTransfer) {
        // libcurl hands over the piece it kept when the transfer paused itself from inside
        // this call; that piece must be taken, not refused again.
        transfer.isPaused = false
        transfer.isResuming = true
        curl_easy_pause(easy, CURLPAUSE_CONT)
        transfer.isResuming = false
    }
}
