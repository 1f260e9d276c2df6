import CCurl
import Foundation
import Logging
import Synchronization

/// The libcurl client: one multi handle on its own thread, so every transfer of a mount
/// shares one connection pool and no caller's thread waits on the network.
public final class CurlClient: RemoteClient {
    public struct Configuration: Sendable {
        public var maxConnectionsPerHost = 8
        public var maxConnections = 64
        public var connectTimeoutSeconds = 10
        /// A transfer that moves no byte for this long is abandoned as stalled.
        public var stallTimeoutSeconds = 20
        public var userAgent = "rangefs/\(RangeFSVersion.current)"
        public var maxRedirects = 8
        /// Extra CA certificates (PEM) trusted besides the system's.
        public var caFile: String?
        /// A proxy for every request; nil leaves libcurl to the usual `*_proxy` variables.
        public var proxy: String?

        public init() {}
    }

    private let inbox: CurlInbox

    public init(configuration: Configuration = Configuration(), logger: Logger) {
        CurlGlobal.initialize()
        let multi = CurlMultiHandle(configuration: configuration)
        let inbox = CurlInbox(multi: multi)
        self.inbox = inbox
        let thread = Thread {
            CurlMultiLoop(multi: multi, inbox: inbox, configuration: configuration, logger: logger).run()
        }
        thread.name = "rangefs-http"
        thread.start()
    }

    public func probe(url: URL, headers: [String: String],
                      completion: @escaping @Sendable (Result<RemoteFileInfo, RemoteError>) -> Void) {
        inbox.submit(.probe(url: url, headers: headers, method: .head, completion: completion))
    }

    public func fetch(_ request: RangeRequest, sink: @escaping RangeBodySink,
                      completion: @escaping @Sendable (Result<Void, RemoteError>) -> Void) {
        request.urgency.whenRaised { [inbox] in inbox.wake() }
        inbox.submit(.range(request, sink: sink, completion: completion))
    }

    public func setBackgroundPaused(_ paused: Bool) {
        inbox.setBackgroundPaused(paused)
    }

    /// Returns once the loop thread has ended and every transfer has completed.
    public func shutdown() {
        inbox.stop()
        inbox.waitUntilFinished()
    }
}

/// `curl_global_init` must run once, before any other thread uses libcurl.
enum CurlGlobal {
    private static let initialized: Bool = {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK
    }()

    static func initialize() {
        precondition(initialized, "curl_global_init failed")
    }
}

/// A transfer as the caller describes it; the loop thread turns it into an easy handle.
enum TransferSpec: Sendable {
    /// HEAD first; `Range: bytes=0-0` when HEAD is refused or carries no length.
    enum ProbeMethod: Sendable { case head, firstByte }

    case probe(url: URL, headers: [String: String], method: ProbeMethod,
               completion: @Sendable (Result<RemoteFileInfo, RemoteError>) -> Void)
    case range(RangeRequest, sink: RangeBodySink, completion: @Sendable (Result<Void, RemoteError>) -> Void)
}

/// The multi handle. Safe to share: libcurl allows `curl_multi_wakeup` from any thread,
/// and every other call on it happens on the loop thread.
struct CurlMultiHandle: @unchecked Sendable {
    let raw: UnsafeMutableRawPointer

    init(configuration: CurlClient.Configuration) {
        guard let multi = curl_multi_init() else { fatalError("curl_multi_init failed") }
        rangefs_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, configuration.maxConnectionsPerHost)
        rangefs_multi_setopt_long(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, configuration.maxConnections)
        raw = multi
    }

    func wakeup() {
        curl_multi_wakeup(raw)
    }
}

/// Hands transfers from any thread to the loop thread.
final class CurlInbox: Sendable {
    private struct State {
        var specs: [TransferSpec] = []
        var stopping = false
        var backgroundPaused = false
    }
    private let state = Mutex(State())
    private let multi: CurlMultiHandle
    private let finished = DispatchSemaphore(value: 0)

    init(multi: CurlMultiHandle) {
        self.multi = multi
    }

    func submit(_ spec: TransferSpec) {
        let accepted = state.withLock { state -> Bool in
            guard !state.stopping else { return false }
            state.specs.append(spec)
            return true
        }
        if accepted {
            multi.wakeup()
        } else {
            spec.fail(.cancelled)
        }
    }

    func stop() {
        state.withLock { $0.stopping = true }
        multi.wakeup()
    }

    /// Called by the loop thread as its last act.
    func markFinished() {
        finished.signal()
    }

    func waitUntilFinished() {
        // Bounded: a stuck callback must not keep an unmount from finishing.
        if finished.wait(timeout: .now() + .seconds(30)) == .success {
            finished.signal()
        }
    }

    func setBackgroundPaused(_ paused: Bool) {
        state.withLock { $0.backgroundPaused = paused }
        multi.wakeup()
    }

    /// Makes the loop look at its transfers again (a priority changed).
    func wake() {
        multi.wakeup()
    }

    func take() -> (specs: [TransferSpec], stopping: Bool, backgroundPaused: Bool) {
        state.withLock { state in
            defer { state.specs.removeAll() }
            return (state.specs, state.stopping, state.backgroundPaused)
        }
    }
}

extension TransferSpec {
    func fail(_ error: RemoteError) {
        switch self {
        case .probe(_, _, _, let completion): completion(.failure(error))
        case .range(_, _, let completion): completion(.failure(error))
        }
    }
}

/// Runs libcurl's multi interface; lives on, and never leaves, the client's thread.
final class CurlMultiLoop {
    private let multi: CurlMultiHandle
    private let inbox: CurlInbox
    private let configuration: CurlClient.Configuration
    private let logger: Logger
    private var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]

    init(multi: CurlMultiHandle, inbox: CurlInbox, configuration: CurlClient.Configuration, logger: Logger) {
        self.multi = multi
        self.inbox = inbox
        self.configuration = configuration
        self.logger = logger
    }

    func run() {
        while true {
            let (specs, stopping, backgroundPaused) = inbox.take()
            if stopping { break }
            for spec in specs { start(spec) }
            var running: Int32 = 0
            curl_multi_perform(multi.raw, &running)
            collectFinished()
            holdBackground(paused: backgroundPaused)
            var ready: Int32 = 0
            curl_multi_poll(multi.raw, nil, 0, 1000, &ready)
        }
        for (easy, transfer) in active {
            curl_multi_remove_handle(multi.raw, easy)
            _ = transfer.finish(curlResult: CURLE_ABORTED_BY_CALLBACK, cancelled: true)
        }
        active.removeAll()
        for spec in inbox.take().specs { spec.fail(.cancelled) }
        curl_multi_cleanup(multi.raw)
        inbox.markFinished()
    }

    private func start(_ spec: TransferSpec) {
        let transfer: CurlTransfer
        do {
            transfer = try CurlTransfer(spec: spec, configuration: configuration)
        } catch {
            spec.fail(error)
            return
        }
        active[transfer.easy] = transfer
        curl_multi_add_handle(multi.raw, transfer.easy)
    }

    /// While a reader waits on a transfer, background transfers stop receiving (TCP flow
    /// control then slows their senders), so a foreground read gets the whole link; the same
    /// holds them while background work is paused. libcurl does not count a paused transfer
    /// as stalled.
    private func holdBackground(paused: Bool) {
        let holdBackground = paused || active.values.contains { !$0.isBackground }
        for (easy, transfer) in active {
            // A transfer raised to the foreground while held is let go at once. One still
            // reading its headers is left alone: libcurl can replay a paused response's
            // buffered headers after its body, which would defeat the checks on them.
            let hold = holdBackground && transfer.isBackground && (transfer.isPaused || transfer.isReceivingBody)
            guard transfer.isPaused != hold else { continue }
            curl_easy_pause(easy, hold ? CURLPAUSE_RECV : CURLPAUSE_CONT)
            transfer.isPaused = hold
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
                // A probe whose HEAD told too little goes on with a one-byte GET.
                start(next)
            }
        }
    }
}
