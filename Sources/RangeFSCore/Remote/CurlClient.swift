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
        /// Connections background transfers never take, so a reader's request finds one at
        /// once (a held background transfer keeps its connection).
        public var foregroundReservedConnections = 2
        /// Background transfers running at once; more wait in the client until one ends.
        var backgroundConnectionLimit: Int {
            max(1, maxConnectionsPerHost - foregroundReservedConnections)
        }
        public var connectTimeoutSeconds = 10
        /// A transfer that moves no byte for this long is abandoned as stalled.
        public var stallTimeoutSeconds = 20
        public var userAgent = "rangefs/\(RangeFSVersion.current)"
        public var maxRedirects = 8
        /// Extra CA certificates (PEM) trusted besides the system's.
        public var caFile: String?
        /// A proxy for every request; nil leaves libcurl to the usual `*_proxy` variables.
        public var proxy: String?
        /// Where requests are counted: by kind and status, and those in flight.
        public var metrics = MountMetrics()

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
        request.urgency.whenRaised { [inbox] in inbox.foregroundRaised() }
        inbox.submit(.range(request, sink: sink, completion: completion))
    }

    public func fetchDocument(_ request: DocumentRequest, sink: @escaping DocumentBodySink,
                              completion: @escaping @Sendable (Result<DocumentReply, RemoteError>) -> Void) {
        inbox.submit(.document(request, sink: sink, completion: completion))
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
    case document(DocumentRequest, sink: DocumentBodySink, completion: @Sendable (Result<DocumentReply, RemoteError>) -> Void)
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
    /// Read by background transfers on the loop thread, also in the middle of a `curl_multi_perform`.
    let gate = BackgroundGate()

    init(multi: CurlMultiHandle) {
        self.multi = multi
    }

    func submit(_ spec: TransferSpec) {
        let accepted = state.withLock { state -> Bool in
            guard !state.stopping else { return false }
            state.specs.append(spec)
            if !spec.isBackground { gate.foregroundArrived() }
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
        state.withLock { state in
            state.backgroundPaused = paused
            gate.setPaused(paused)
        }
        multi.wakeup()
    }

    /// A reader started waiting on a background transfer: the others stop now, and the loop
    /// looks at its transfers again.
    func foregroundRaised() {
        state.withLock { _ in gate.foregroundArrived() }
        multi.wakeup()
    }

    func take() -> (specs: [TransferSpec], stopping: Bool, backgroundPaused: Bool) {
        state.withLock { state in
            defer { state.specs.removeAll() }
            // From here on the loop itself knows of these transfers (`BackgroundGate.setForegroundRunning`).
            gate.foregroundTaken()
            return (state.specs, state.stopping, state.backgroundPaused)
        }
    }
}

/// Whether background transfers must stand still right now: a reader waits on the network
/// (a foreground transfer handed in or running) or background work is paused. Background
/// transfers check it in their write callback, so they stop within one buffer even while the
/// loop is inside a long `curl_multi_perform`, instead of draining whole chunks first.
final class BackgroundGate: Sendable {
    private let foregroundWaiting = Atomic<Bool>(false)
    private let foregroundRunning = Atomic<Bool>(false)
    private let paused = Atomic<Bool>(false)

    var holdsBackground: Bool {
        foregroundWaiting.load(ordering: .acquiring) || foregroundRunning.load(ordering: .acquiring)
            || paused.load(ordering: .acquiring)
    }

    /// The loop starts no queued background transfer while this holds.
    var foregroundPresent: Bool {
        foregroundWaiting.load(ordering: .acquiring) || foregroundRunning.load(ordering: .acquiring)
    }

    func foregroundArrived() { foregroundWaiting.store(true, ordering: .releasing) }
    func foregroundTaken() { foregroundWaiting.store(false, ordering: .releasing) }
    func setForegroundRunning(_ running: Bool) { foregroundRunning.store(running, ordering: .releasing) }
    func setPaused(_ value: Bool) { paused.store(value, ordering: .releasing) }
}

extension TransferSpec {
    /// Background completion, which yields to every reader; probes and documents count as foreground.
    var isBackground: Bool {
        if case .range(let request, _, _) = self { return request.urgency.priority == .background }
        return false
    }

    /// What a request is for, as the metrics count it.
    var metricsKind: MountMetrics.RequestKind {
        switch self {
        case .probe: .probe
        case .range(let request, _, _): request.readThrough ? .readThrough : request.urgency.priority == .background ? .background : .range
        case .document: .document
        }
    }

    func fail(_ error: RemoteError) {
        switch self {
        case .probe(_, _, _, let completion): completion(.failure(error))
        case .range(_, _, let completion): completion(.failure(error))
        case .document(_, _, let completion): completion(.failure(error))
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
    /// Background transfers not started yet: beyond the background connection limit, or
    /// handed in while a reader waits or background work is paused.
    private var waitingBackground: [TransferSpec] = []

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
            for spec in specs {
                if spec.isBackground { waitingBackground.append(spec) } else { start(spec) }
            }
            schedule(paused: backgroundPaused)
            var running: Int32 = 0
            curl_multi_perform(multi.raw, &running)
            storeCoalescedData()
            collectFinished()
            schedule(paused: backgroundPaused)
            var ready: Int32 = 0
            curl_multi_poll(multi.raw, nil, 0, 1000, &ready)
        }
        for (easy, transfer) in active {
            curl_multi_remove_handle(multi.raw, easy)
            _ = transfer.finish(curlResult: CURLE_ABORTED_BY_CALLBACK, cancelled: true)
        }
        active.removeAll()
        for spec in waitingBackground + inbox.take().specs { spec.fail(.cancelled) }
        waitingBackground.removeAll()
        curl_multi_cleanup(multi.raw)
        inbox.markFinished()
    }

    /// Starts what may start, holds what must wait, and tells background transfers (through
    /// the gate) whether a reader is waiting.
    private func schedule(paused: Bool) {
        startWaitingBackground(paused: paused)
        let foregroundRunning = active.values.contains { !$0.isBackground }
        inbox.gate.setForegroundRunning(foregroundRunning)
        holdBackground(paused || foregroundRunning)
    }

    /// A transfer raised to the foreground while it waited starts at once; background ones
    /// start while no reader waits, within the background connection limit.
    private func startWaitingBackground(paused: Bool) {
        guard !waitingBackground.isEmpty else { return }
        var running = active.values.count { $0.isBackground }
        var stillWaiting: [TransferSpec] = []
        for spec in waitingBackground {
            if !spec.isBackground {
                start(spec)
            } else if !paused, !inbox.gate.foregroundPresent, running < configuration.backgroundConnectionLimit {
                start(spec)
                running += 1
            } else {
                stillWaiting.append(spec)
            }
        }
        waitingBackground = stillWaiting
    }

    private func start(_ spec: TransferSpec) {
        let transfer: CurlTransfer
        do {
            transfer = try CurlTransfer(spec: spec, configuration: configuration, gate: inbox.gate)
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
    /// as stalled. Background transfers also pause themselves from their write callback when
    /// the gate closes (`CurlTransfer.receive`); this lets them go again.
    private func holdBackground(_ holdBackground: Bool) {
        for (easy, transfer) in active {
            // A transfer raised to the foreground while held is let go at once. One still
            // reading its headers is left alone: libcurl can replay a paused response's
            // buffered headers after its body, which would defeat the checks on them.
            let hold = holdBackground && transfer.isBackground && (transfer.isPaused || transfer.isReceivingBody)
            guard transfer.isPaused != hold else { continue }
            if hold {
                curl_easy_pause(easy, CURLPAUSE_RECV)
                transfer.isPaused = true
            } else {
                // libcurl hands over the piece it kept when the transfer paused itself from
                // inside this call; that piece must be taken, not refused again.
                transfer.isPaused = false
                transfer.isResuming = true
                curl_easy_pause(easy, CURLPAUSE_CONT)
                transfer.isResuming = false
            }
        }
    }

    /// Hands what each transfer has gathered to its sink (one large write instead of libcurl's
    /// 16 KiB pieces); a transfer whose data cannot be stored ends here.
    private func storeCoalescedData() {
        var failed: [UnsafeMutableRawPointer] = []
        for (easy, transfer) in active where !transfer.storePending() {
            failed.append(easy)
        }
        for easy in failed {
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
                // A probe whose HEAD told too little goes on with a one-byte GET.
                start(next)
            }
        }
    }
}
