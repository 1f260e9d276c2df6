import CCurl
import Foundation
import Logging

/// Runs libcurl's multi interface; lives on, and never leaves, the client's thread.
final class CurlMultiLoop {
    // Internal, not private, for the scheduling side (`CurlMultiLoop+Scheduling`): every member
    // is used on the loop thread only.
    let multi: CurlMultiHandle
    let inbox: CurlInbox
    let configuration: CurlClient.Configuration
    private let logger: Logger
    var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    /// Background transfers not started yet: beyond the background connection limit, or
    /// handed in while a reader waits or background work is paused.
    var waitingBackground: [TransferSpec] = []
    /// Body buffers for the transfers, kept mapped from one transfer to the next.
    private let buffers: CoalescingBufferPool
    /// `--max-rate` for all background ranges together; nil when uncapped.
    let rateBudget: BackgroundRateBudget?

    init(multi: CurlMultiHandle, inbox: CurlInbox, configuration: CurlClient.Configuration, logger: Logger) {
        self.multi = multi
        self.inbox = inbox
        self.configuration = configuration
        self.logger = logger
        buffers = CoalescingBufferPool(bufferBytes: CurlTransfer.receiveBufferBytes,
                                       keptAtMost: configuration.maxConnectionsPerHost)
        rateBudget = configuration.backgroundBytesPerSecond.map { BackgroundRateBudget(bytesPerSecond: $0) }
    }

    func run() {
        // A reader's first request and the background's first transfer find theirs mapped
        // (probes, all the shared pool carries, have no body).
        if multi.pool == .connectionEach { buffers.prepare(2) }
        while true {
            let (specs, stopping) = inbox.take()
            if stopping { break }
            for spec in specs {
                if spec.purpose.isBackgroundWork { waitingBackground.append(spec) } else { startAheadOfBackground(spec) }
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
            // A quiet (`BackgroundQuiet`) lets background work go on when it ends, and so does
            // the rate budget when it refills.
            let holdLeft = [inbox.gate.quietTimeLeft, rateBudgetHoldLeft].compactMap { $0 }.min()
            let untilGoesOn = holdLeft.map { Int32(min($0.timeInterval * 1000 + 1, 1000)) } ?? 1000
            curl_multi_poll(multi.raw, nil, 0, handingOver ? 1 : undecided ? 20 : untilGoesOn, &ready)
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

    /// `hop`: a redirect of `spec`'s request being followed (`RedirectHop`).
    func start(_ spec: TransferSpec, hop: RedirectHop? = nil) {
        let transfer: CurlTransfer
        do {
            transfer = try CurlTransfer(spec: spec.trimmedToItsEnd, hop: hop, configuration: configuration, gate: inbox.gate,
                                        rateBudget: rateBudget, buffers: buffers)
        } catch {
            spec.fail(error)
            return
        }
        multi.connectionRules.apply(to: transfer.easy)
        active[transfer.easy] = transfer
        curl_multi_add_handle(multi.raw, transfer.easy)
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
