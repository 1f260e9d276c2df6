import CCurl
import Foundation
import Logging
import Synchronization

// Design note: the remote part, HTTP(S) and SFTP over libcurl.
//
// - Probes, range transfers and whole documents (manifests, feeds, listing pages, a WebDAV
//   `PROPFIND`: `DocumentDownload`, any length up to a cap, revalidated with a `304`) run on two
//   multi handles, each on a thread of its own (`CurlMultiLoop`): one for ranges and the probes a
//   reader waits on, a connection each; one for a listing's probes and pages, streams of one
//   shared connection where the server speaks HTTP/2 (`Scheduling/ConnectionRules`). Which
//   transfer goes first is the scheduling part's; the loop asks it of every transfer.
// - A reply may fill the cache only once `ResponseCheck` (pure) passed it, before its first body
//   byte: status, `Content-Range`, length, encodings, validators (ETags compared weakly, so that
//   Apache's `W/"x"` and `"x"` are one version). A `200` to a conditional range request is asked
//   again without the condition; only a `200` to a plain range request says a server ignores
//   ranges (`Catalog/RangeIgnoringServers`). `RemoteValidator.ifRangeValue` sends a strong ETag,
//   else a date at least a second older than the reply that gave it, else nothing.
// - Redirects are followed here, one request per hop (`RedirectHop`), not by libcurl, which would
//   send custom headers wherever they lead: the caller's headers go only to the origin (scheme,
//   host, port) they were given for, and a dialect signs only requests to its own server.
//   `FetchSource` says where a file's ranges go (its URL, or the mirror a redirect led to) and
//   whether a fresh answer is the same version, a move or a change.
// - A `ServerDialect` in the configuration adds what a kind of server needs beyond plain HTTP
//   (signatures, credentials put in the URL as a request goes out, the conditional header of
//   ranges, error bodies read, a `2xx` that is an error all the same); nil for web servers.
//   `sftp://` transfers run on the same loop, signed in with `Configuration.ssh`.

/// The libcurl client: a multi handle on a thread of its own, so every transfer of a mount
/// shares one connection pool and no caller's thread waits on the network; and a second one
/// for a listing's probes and pages, streams of a shared connection (`ConnectionRules`).
public final class CurlClient: RemoteClient {
    public struct Configuration: Sendable {
        public var maxConnectionsPerHost = 8
        public var maxConnections = 64
        /// Connections of a server background transfers never start on, so a reader's request
        /// finds one at once; a held background transfer gives its own up when a reader's
        /// request would otherwise wait for one (`CurlMultiLoop.startAheadOfBackground`).
        public var connectionsKeptForReaders = 2
        /// A held background transfer whose rest would come within this long (at the pace it
        /// came so far) runs to its end rather than give its connection up to a reader's request.
        public var backgroundFinishesWithin: Duration = .milliseconds(250)
        /// Background transfers running at once; more wait in the client until one ends.
        var backgroundConnectionLimit: Int {
            max(1, maxConnectionsPerHost - connectionsKeptForReaders)
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
        /// A netrc file: a request to a host it has an entry for signs in with that entry's login
        /// and password (HTTP Basic), as `curl --netrc-file` does; nil reads none.
        public var netrcFile: String?
        /// `--max-rate`: what background ranges kept to a rate take together, in bytes per
        /// second (`BackgroundRateBudget`); nil leaves them uncapped.
        public var backgroundBytesPerSecond: UInt64?
        /// Where requests are counted: by kind and status, and those in flight.
        public var metrics = MountMetrics()
        /// What the server needs beyond plain HTTP (an S3 bucket's signatures); nil for a web server.
        public var dialect: (any ServerDialect)?
        /// How an SFTP mount's `sftp://` transfers sign in; nil for every other mount, whose
        /// transfers may then reach http and https alone.
        public var ssh: SSHSignIn?

        public init() {}
    }

    private let inbox: CurlInbox
    /// The shared pool's: a listing's probes and pages (`ConnectionRules.goesAsStream`).
    private let streamInbox: CurlInbox

    public init(configuration: Configuration = Configuration(), logger: Logger) {
        CurlGlobal.initialize()
        inbox = Self.startLoop(pool: .connectionEach, named: "rangefs-http", configuration: configuration, logger: logger)
        streamInbox = Self.startLoop(pool: .sharedStreams, named: "rangefs-streams", configuration: configuration,
                                     logger: logger)
    }

    private static func startLoop(pool: ConnectionRules.Pool, named name: String, configuration: Configuration,
                                  logger: Logger) -> CurlInbox {
        let multi = CurlMultiHandle(configuration: configuration, pool: pool)
        let inbox = CurlInbox(multi: multi)
        ThreadNames.start(name) {
            CurlMultiLoop(multi: multi, inbox: inbox, configuration: configuration, logger: logger).run()
        }
        return inbox
    }

    public func probe(url: URL, headers: [String: String], connection: ConnectionUse,
                      completion: @escaping @Sendable (Result<RemoteFileInfo, RemoteError>) -> Void) {
        let spec = TransferSpec.probe(url: url, headers: headers, method: .head, connection: connection, completion: completion)
        (spec.goesAsStream ? streamInbox : inbox).submit(spec)
    }

    public func fetch(_ request: RangeRequest, sink: @escaping RangeBodySink,
                      completion: @escaping @Sendable (Result<Void, RemoteError>) -> Void) {
        request.control.whenRaised { [inbox] in inbox.readerRaised() }
        inbox.submit(.range(request, sink: sink, completion: completion))
    }

    public func fetchDocument(_ request: DocumentRequest, sink: @escaping DocumentBodySink,
                              completion: @escaping @Sendable (Result<DocumentReply, RemoteError>) -> Void) {
        let spec = TransferSpec.document(request, sink: sink, completion: completion)
        (spec.goesAsStream ? streamInbox : inbox).submit(spec)
    }

    public func setBackgroundPaused(_ paused: Bool) {
        inbox.setBackgroundPaused(paused)
    }

    public func quietBackground(_ reason: BackgroundQuiet, for duration: Duration) {
        inbox.quietBackground(reason, for: duration)
    }

    /// Returns once the loop threads have ended and every transfer has completed.
    public func shutdown() {
        inbox.stop()
        streamInbox.stop()
        inbox.waitUntilFinished()
        streamInbox.waitUntilFinished()
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

    case probe(url: URL, headers: [String: String], method: ProbeMethod, connection: ConnectionUse,
               completion: @Sendable (Result<RemoteFileInfo, RemoteError>) -> Void)
    case range(RangeRequest, sink: RangeBodySink, completion: @Sendable (Result<Void, RemoteError>) -> Void)
    case document(DocumentRequest, sink: DocumentBodySink, completion: @Sendable (Result<DocumentReply, RemoteError>) -> Void)
}

/// The multi handle. Safe to share: libcurl allows `curl_multi_wakeup` from any thread,
/// and every other call on it happens on the loop thread.
struct CurlMultiHandle: @unchecked Sendable {
    let raw: UnsafeMutableRawPointer
    let connectionRules: ConnectionRules
    var pool: ConnectionRules.Pool { connectionRules.pool }

    init(configuration: CurlClient.Configuration, pool: ConnectionRules.Pool) {
        guard let multi = curl_multi_init() else { fatalError("curl_multi_init failed") }
        rangefs_multi_setopt_long(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, configuration.maxConnections)
        connectionRules = ConnectionRules(pool: pool)
        connectionRules.apply(toMulti: multi, maxConnectionsPerHost: configuration.maxConnectionsPerHost)
        raw = multi
    }

    func wakeup() {
        curl_multi_wakeup(raw)
    }
}

/// Hands transfers from any thread to the loop thread. Lock order: `state` → a submitted range's
/// `TransferControl` (read for its purpose; a leaf); the gate's atomics take no lock.
final class CurlInbox: Sendable {
    private struct State {
        var specs: [TransferSpec] = []
        var stopping = false
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
            if spec.purpose.makesBackgroundWait { gate.readerArrived() }
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
        gate.setPaused(paused)
        multi.wakeup()
    }

    func quietBackground(_ reason: BackgroundQuiet, for duration: Duration) {
        // A walk extends its quiet at every step: the loop is woken only when one begins.
        if gate.quiet(reason).extend(by: duration) { multi.wakeup() }
    }

    /// A read started waiting on read-ahead or background work: background transfers stop now,
    /// and the loop looks at its transfers again.
    func readerRaised() {
        state.withLock { _ in gate.readerArrived() }
        multi.wakeup()
    }

    func take() -> (specs: [TransferSpec], stopping: Bool) {
        state.withLock { state in
            defer { state.specs.removeAll() }
            // From here on the loop itself knows of these transfers (`BackgroundGate.setReaderRunning`).
            gate.readersTaken()
            return (state.specs, state.stopping)
        }
    }
}

extension TransferSpec {
    /// The server it goes to (`URL.serverKey`).
    var server: String {
        switch self {
        case .probe(let url, _, _, _, _): url.serverKey
        case .range(let request, _, _): request.url.serverKey
        case .document(let request, _, _): request.url.serverKey
        }
    }

    /// Goes as a stream of a connection shared with others (`ConnectionRules.goesAsStream`).
    var goesAsStream: Bool { ConnectionRules.goesAsStream(self) }

    /// What a request is for, as the metrics count it.
    var metricsKind: MountMetrics.RequestKind {
        switch self {
        case .probe: .probe
        case .range(let request, _, _): request.readThrough ? .readThrough : purpose.isBackgroundWork ? .background : .range
        case .document: .document
        }
    }

    func fail(_ error: RemoteError) {
        switch self {
        case .probe(_, _, _, _, let completion): completion(.failure(error))
        case .range(_, _, let completion): completion(.failure(error))
        case .document(_, _, let completion): completion(.failure(error))
        }
    }
}
