import CCurl
import Foundation
import Logging

/// Runs libcurl's multi interface; lives on, and never leaves, the client's thread.
final class CurlMultiLoop {
    private let multi: CurlMultiHandle
    private let inbox: CurlInbox
    private let configuration: CurlClient.Configuration
    private let logger: Logger
    private var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    /// Background transfers not started yet: beyond the background connection limit, or
    /// handed in while a reader waits or background work is paused.
    private var waitingBackground: [TransferSpec] = []
    /// Body buffers for the transfers, kept mapped from one transfer to the next.
    private let buffers: CoalescingBufferPool

    init(multi: CurlMultiHandle, inbox: CurlInbox, configuration: CurlClient.Configuration, logger: Logger) {
        self.multi = multi
        self.inbox = inbox
        self.configuration = configuration
        self.logger = logger
        buffers = CoalescingBufferPool(bufferBytes: CurlTransfer.receiveBufferBytes,
                                       keptAtMost: configuration.maxConnectionsPerHost)
    }

    func run() {
        // A reader's first request and the background's first transfer find theirs mapped
        // (probes, all the shared pool carries, have no body).
        if multi.pool == .connectionEach { buffers.prepare(2) }
        while true {
            let (specs, stopping) = inbox.take()
            if stopping { break }
            for spec in specs {
                if spec.isBackground { waitingBackground.append(spec) } else { startForeground(spec) }
            }
            schedule()
            var running: Int32 = 0
            curl_multi_perform(multi.raw, &running)
            storeCoalescedData()
            collectFinished()
            let handingOver = endHandOvers()
            let undecided = reviewFinishingFirst()
            schedule()
            var ready: Int32 = 0
            // A quiet (`BackgroundGate.quiet`) lets background work go on when it ends.
            let quietLeft = inbox.gate.quietTimeLeft.map { Int32(min($0.timeInterval * 1000 + 1, 1000)) } ?? 1000
            curl_multi_poll(multi.raw, nil, 0, handingOver ? 1 : undecided ? 20 : quietLeft, &ready)
        }
        for (easy, transfer) in active {
            curl_multi_remove_handle(multi.raw, easy)
            _ = transfer.finish(curlResult: CURLE_ABORTED_BY_CALLBACK, cancelled: true)
        }
        active.removeAll()
        for spec in waitingBackground + inbox.take().specs { spec.fail(.cancelled) }
        waitingBackground.removeAll()
        curl_multi_cleanup(multi.raw)
        multi.connectionRules.cleanup()
        inbox.markFinished()
    }

    /// Starts what may start, holds what must wait, and tells background transfers (through
    /// the gate) whether a reader is waiting.
    private func schedule() {
        startWaitingBackground(inbox.gate.holds)
        inbox.gate.setForegroundRunning(active.values.contains { $0.holdsBackground })
        holdBackground(inbox.gate.holds)
    }

    /// A transfer raised to the foreground while it waited starts at once; background ones
    /// start while no reader waits (heads and tails also while one does), within the
    /// background connection limit, and only where their server has more than the reserved
    /// connections free.
    private func startWaitingBackground(_ holds: BackgroundGate.Holds) {
        guard !waitingBackground.isEmpty else { return }
        var running = active.values.count { $0.isBackground }
        var stillWaiting: [TransferSpec] = []
        for spec in waitingBackground {
            if !spec.isBackground {
                startForeground(spec)
            } else if !holds.hold(spec), running < configuration.backgroundConnectionLimit,
                      connections(to: spec.server) < configuration.backgroundConnectionLimit {
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

    /// A reader's request (or probe) goes out now. libcurl opens at most `maxConnectionsPerHost`
    /// connections to a server and queues what comes beyond them, first come first served: a
    /// reader's request would wait there behind a collection's size probes while held background
    /// transfers keep their connections. As many background transfers as the request needs
    /// connections make room: one whose rest would come within `backgroundFinishesWithin` runs
    /// to its end (it is no longer held) and the request takes its connection then, since giving
    /// it up would lose what the server has already sent it (on loopback, often all of it); a
    /// slower one gives its connection up and asks for the rest of its bytes again once readers
    /// are done. One whose pace is not known yet runs until it is (`reviewFinishingFirst`).
    private func startForeground(_ spec: TransferSpec) {
        // One handing its connection over frees it within milliseconds.
        let leaving = active.values.count { $0.handOver != nil && $0.server == spec.server }
        var excess = connections(to: spec.server) - leaving + 1 - configuration.maxConnectionsPerHost
        // One already finishing first frees its connection for an earlier request.
        let background = active.filter {
            $0.value.isBackground && !$0.value.isNeverHeld && $0.value.server == spec.server
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
    private func reviewFinishingFirst() -> Bool {
        var undecided = false
        for (easy, transfer) in active where transfer.finishesFirst && transfer.isBackground {
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
    private func endHandOvers() -> Bool {
        var pending = false
        let now = ContinuousClock.now
        for (easy, transfer) in active {
            guard transfer.handOver != nil else { continue }
            if !transfer.handOverIsOver(now: now) {
                pending = true
            } else if !endForReader(easy, transfer) {
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

    /// `hop`: a redirect of `spec`'s request being followed (`RedirectHop`).
    private func start(_ spec: TransferSpec, hop: RedirectHop? = nil) {
        let transfer: CurlTransfer
        do {
            transfer = try CurlTransfer(spec: spec.trimmedToItsEnd, hop: hop, configuration: configuration, gate: inbox.gate,
                                        buffers: buffers)
        } catch {
            spec.fail(error)
            return
        }
        multi.connectionRules.apply(to: transfer.easy)
        active[transfer.easy] = transfer
        curl_multi_add_handle(multi.raw, transfer.easy)
    }

    /// While a reader waits on a transfer, background transfers stop receiving (TCP flow
    /// control then slows their senders), so a foreground read gets the whole link; the same
    /// holds them while background work is paused. libcurl does not count a paused transfer
    /// as stalled. Background transfers also pause themselves from their write callback when
    /// the gate closes (`CurlTransfer.receive`); this lets them go again. Heads and tails
    /// (`backgroundAhead`) stand still only while background work is paused or a program walks
    /// the tree without opening files (`BackgroundGate.headsQuiet`).
    private func holdBackground(_ holds: BackgroundGate.Holds) {
        for (easy, transfer) in active {
            // A transfer raised to the foreground while held is let go at once. One still
            // reading its headers is left alone: libcurl can replay a paused response's
            // buffered headers after its body, which would defeat the checks on them.
            let hold = transfer.isHeld(by: holds) && !transfer.isNeverHeld
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

    /// Lets a held transfer receive again.
    private func resume(_ easy: UnsafeMutableRawPointer, _ transfer: CurlTransfer) {
        // libcurl hands over the piece it kept when the transfer paused itself from inside
        // this call; that piece must be taken, not refused again.
        transfer.isPaused = false
        transfer.isResuming = true
        curl_easy_pause(easy, CURLPAUSE_CONT)
        transfer.isResuming = false
    }

    /// Hands what each transfer has gathered to its sink (one large write instead of libcurl's
    /// 16 KiB pieces); a transfer whose data cannot be stored ends here.
    private func storeCoalescedData() {
        var failed: [UnsafeMutableRawPointer] = []
        for (easy, transfer) in active where !transfer.storePending() {
            failed.append(easy)
        }
        for easy in failed {
            ConnectionRules.closeConnectionWhenDone(easy)
            curl_multi_remove_handle(multi.raw, easy)
            guard let transfer = active.removeValue(forKey: easy) else { continue }
            _ = transfer.finish(curlResult: CURLE_WRITE_ERROR, cancelled: false)
        }
    }

    private func collectFinished() {
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(multi.raw, &remaining) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            let result = rangefs_msg_result(message)
            curl_multi_remove_handle(multi.raw, easy)
            guard let transfer = active.removeValue(forKey: easy) else { continue }
            if let next = transfer.finish(curlResult: result, cancelled: false) {
                // A redirect goes on to its target; a probe whose HEAD told too little goes on
                // with a one-byte GET.
                start(next.spec, hop: next.hop)
            }
        }
    }
}
