import CCurl
import Foundation

/// One easy handle and what it has seen so far. Lives on the loop thread only.
final class CurlTransfer {
    let easy: UnsafeMutableRawPointer
    private let spec: TransferSpec
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
    /// Set once the status and headers of the final response were checked (at the first body byte).
    private var checked = false
    /// The first problem found; the transfer is aborted and this is what the caller hears.
    private var failure: RemoteError?
    private var bodyBytes: UInt64 = 0
    /// For a probe answered by a range GET: the size read from its headers.
    private var probedSize: UInt64?
    /// The headers of the latest response (a redirect or `100 Continue` starts a new set).
    private(set) var responseHeaders = ReceivedHeaders()
    /// Says when a background transfer must stop receiving.
    private let gate: BackgroundGate
    /// `--max-rate` for the background as a whole; what a capped transfer receives is taken from it.
    private let rateBudget: BackgroundRateBudget?
    /// Body bytes received but not yet handed to the sink: libcurl delivers 16 KiB at a time,
    /// the sink gets them in one piece after each round of the loop or when this fills.
    private var coalesced: CoalescingBuffer?
    /// Where `coalesced` comes from and goes back to when the transfer ends.
    private let buffers: CoalescingBufferPool
    /// Bytes handed to the sink so far.
    private var storedBytes: UInt64 = 0
    let metrics: MountMetrics
    private let dialect: (any ServerDialect)?
    /// Where this request goes: the URL asked for, or a redirect's target (`hop`).
    let requestURL: URL
    /// The dialect sent another URL than `requestURL` (credentials in its query): libcurl's
    /// own view of the URL must not be reported.
    let sentURLDiffers: Bool
    /// Redirects followed to get here; the transfer follows them itself (`RedirectHop`).
    private let hop: RedirectHop
    /// Set when the response is a redirect to follow: where the next request goes.
    private var redirect: RedirectHop?
    /// Body bytes of a redirect response, read and dropped so its connection can be reused.
    private var redirectBodyBytes = 0
    /// A redirect's body longer than this is not read to its end: its connection is closed.
    private static let redirectBodyLimit = 64 * 1024
    private let maxRedirects: Int
    /// The start of an error reply's body, for the dialect to read (`errorDetail`).
    private var errorBody: [UInt8] = []
    /// How much of an error reply's body is kept: S3's error documents are a few hundred bytes.
    private static let errorBodyBytes = 8 * 1024

    /// What it is for, now (a range may be raised while it runs): every scheduling rule asks
    /// this (`TransferPurpose`).
    var purpose: TransferPurpose { spec.purpose }
    /// A size probe (HEAD or a one-byte GET).
    var isProbe: Bool {
        if case .probe = spec { return true }
        return false
    }
    /// Its request has not gone out yet: libcurl queued it until a connection to its server is free.
    var isWaitingToSend: Bool {
        var pretransfer: curl_off_t = 0
        return rangefs_easy_getinfo_off(easy, CURLINFO_PRETRANSFER_TIME_T, &pretransfer) == CURLE_OK && pretransfer == 0
    }
    /// Where it goes (`URL.serverKey`), for the connections per server.
    var server: String { requestURL.serverKey }
    var isPaused = false {
        didSet { pace.setHeld(isPaused) }
    }
    /// Set while the loop lets a held transfer go: the piece libcurl kept is taken then.
    var isResuming = false
    /// Kept to `--max-rate` (background work's ranges), until a reader raises it
    /// (`CurlMultiLoop.liftCapOfRaised`): foreground reads are never capped.
    var isRateCapped = false
    /// Whether it must stand still now: `holds` holds its purpose, or it is kept to `--max-rate`
    /// and the background's rate is spent for now (`BackgroundRateBudget`). Asked by the write
    /// callback and by the loop alike.
    func mustStandStill(_ holds: BackgroundGate.Holds) -> Bool {
        holds.hold(purpose) || isRateCapped && rateBudget?.isSpent() == true
    }
    /// The response's headers were checked and its body has begun (a redirect's body, read
    /// only to reuse the connection, does not count).
    var isReceivingBody: Bool { checked && redirect == nil }
    /// A background transfer close to its end that runs to it instead of giving its connection
    /// up to a reader's request (`CurlMultiLoop.startAheadOfBackground`): it is not held any more.
    var finishesFirst = false
    /// Set while a held background transfer gives its connection up to a reader's request,
    /// taking first what reached this machine while it was held. Not held meanwhile.
    var handOver: HandOver?
    /// Background work making way for a reader's request: it runs to its end, or it is handing
    /// its connection over. Such a transfer is neither held nor asked again to make way.
    var makingWayForReader: Bool { finishesFirst || handOver != nil }
    private var pace = TransferPace()
    /// When the request was handed to libcurl.
    var startedAt: ContinuousClock.Instant { pace.startedAt }

    /// How much body is gathered before it is written: libcurl's largest receive buffer.
    static let receiveBufferBytes = 512 * 1024

    /// libcurl's receive buffer for a range capped at `bytesPerSecond` (`--max-rate`): about a
    /// thousandth of a second's worth, since the rate budget (`BackgroundRateBudget`) is asked
    /// at each piece and a piece is what may come beyond it. At least a TLS record (16 KiB):
    /// with smaller reads an https background fetched well under its cap (docs/benchmarks.md).
    static func receiveBufferBytes(cappedAt bytesPerSecond: UInt64?) -> Int {
        guard let bytesPerSecond else { return receiveBufferBytes }
        return Int(min(max(bytesPerSecond / 1000, 16 << 10), UInt64(receiveBufferBytes)))
    }

    /// `hop`: a redirect of `spec`'s request being followed; nil for the request itself.
    init(spec: TransferSpec, hop: RedirectHop? = nil, configuration: CurlClient.Configuration, gate: BackgroundGate,
         rateBudget: BackgroundRateBudget?, buffers: CoalescingBufferPool) throws(RemoteError) {
        guard let easy = curl_easy_init() else { throw .transport("curl_easy_init failed") }
        self.easy = easy
        self.spec = spec
        self.gate = gate
        self.rateBudget = rateBudget
        self.buffers = buffers
        metrics = configuration.metrics
        dialect = configuration.dialect
        maxRedirects = configuration.maxRedirects
        let asked = Self.setRequest(of: spec, on: easy, configuration: configuration)
        if case .range(let request, _, _) = spec { isRateCapped = request.maxBytesPerSecond != nil }
        var headers = asked.ownHeaders
        self.hop = hop ?? RedirectHop(asked: asked.url)
        let url = self.hop.url
        requestURL = url
        headers.merge(self.hop.headers(asked.callerHeaders)) { own, _ in own }
        let sent = configuration.dialect?.sentURL(for: url) ?? url
        sentURLDiffers = sent != url
        rangefs_easy_setopt_string(easy, CURLOPT_URL, sent.absoluteString)
        Self.setConnectionRules(on: easy, configuration: configuration)
        // Compressed bodies would break byte offsets: ask for the identity encoding only.
        headers["Accept-Encoding"] = "identity"
        if let dialect = configuration.dialect {
            headers.merge(dialect.authorizationHeaders(method: asked.method, url: url, date: Date())) { _, signed in signed }
        }
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            headerList = curl_slist_append(headerList, "\(name): \(value)")
        }
        rangefs_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, headerList)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        rangefs_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer)
        // Unretained: the loop keeps this transfer (`CurlMultiLoop.active`) for as long as its
        // easy handle is in the multi handle, the only time libcurl calls these callbacks, and
        // `deinit` cleans the handle up before the object goes.
        let context = Unmanaged.passUnretained(self).toOpaque()
        rangefs_easy_setopt_write_callback(easy, curlTransferWrite)
        rangefs_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, context)
        rangefs_easy_setopt_header_callback(easy, curlTransferHeader)
        rangefs_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, context)
        metrics.requestStarted()
    }

    deinit {
        if let coalesced { buffers.giveBack(coalesced) }
        curl_easy_cleanup(easy)
        curl_slist_free_all(headerList)
        errorBuffer.deallocate()
    }

    // MARK: Headers

    /// One header line as libcurl hands it over (not NUL-terminated, CRLF at the end).
    /// Collected here rather than read back with `curl_easy_header`, whose view of a paused and
    /// resumed transfer proved unreliable.
    fileprivate func receiveHeader(_ line: UnsafeRawBufferPointer) {
        responseHeaders.take(line)
    }

    // MARK: Body

    /// What the write callback tells libcurl.
    enum Reception { case taken, pause, abort }

    /// Called by libcurl for every piece of the body (16 KiB at most).
    fileprivate func receive(_ bytes: UnsafeRawBufferPointer) -> Reception {
        if !checked {
            checked = true
            failure = checkResponse()
        }
        if redirect != nil {
            redirectBodyBytes += bytes.count
            return redirectBodyBytes <= Self.redirectBodyLimit ? .taken : .abort
        }
        if case .status = failure, dialect != nil, errorBody.count < Self.errorBodyBytes {
            // An error reply that may say why: its start is kept for `errorDetail`.
            errorBody += bytes.prefix(Self.errorBodyBytes - errorBody.count)
            return .taken
        }
        guard failure == nil else { return .abort }
        switch spec {
        case .probe:
            // The headers said all there is to say; the body is not wanted.
            return .abort
        case .range(let request, _, _):
            // A reader waits, background work is paused, or the background's rate is spent: stop
            // now, not after this burst. libcurl keeps this piece and hands it over again when
            // the loop resumes us.
            if !isResuming, !makingWayForReader, mustStandStill(gate.holds) {
                isPaused = true
                return .pause
            }
            if isRateCapped { rateBudget?.take(bytes.count) }
            let wanted = UInt64(request.range.count)
            guard bodyBytes + UInt64(bytes.count) <= wanted else {
                failure = .protocolViolation("server sent more than the \(wanted) bytes asked for")
                return .abort
            }
            return gather(bytes)
        case .document(let request, _, _):
            guard bodyBytes + UInt64(bytes.count) <= request.maxBytes else {
                failure = request.tooLong(bodyBytes + UInt64(bytes.count), announced: false)
                return .abort
            }
            return gather(bytes)
        }
    }

    /// Keeps body bytes for the sink; writes out what was gathered first when they do not fit.
    private func gather(_ bytes: UnsafeRawBufferPointer) -> Reception {
        if coalesced == nil { coalesced = buffers.take() }
        if !coalesced!.append(bytes) {
            guard storePending() else { return .abort }
            _ = coalesced!.append(bytes)
        }
        bodyBytes += UInt64(bytes.count)
        pace.bodyArrived()
        return .taken
    }

    /// How long the rest of a range's body would take at the pace it came so far (from the
    /// request's start to its latest byte, leaving out the time it was held); nil before its
    /// first byte.
    var expectedRestDuration: Duration? {
        guard case .range(let request, _, _) = spec else { return nil }
        // A transfer cut short after it started has only the bytes before its cut to bring.
        let wanted = UInt64(request.wantedRange.count)
        let rest = wanted - min(bodyBytes, wanted)
        return pace.restDuration(received: bodyBytes, rest: rest)
    }

    /// Whether its hand-over took what had arrived, or its time is up; false without one.
    /// Loop thread only (it asks the handle for its socket).
    func handOverIsOver(now: ContinuousClock.Instant) -> Bool {
        guard let handOver else { return false }
        return handOver.isOver(lastBodyAt: pace.lastBodyAt, unreadBytes: Int(rangefs_easy_unread_socket_bytes(easy)), now: now)
    }

    /// Hands the gathered bytes to the sink. False when the sink could not store them; the
    /// transfer has then failed.
    func storePending() -> Bool {
        guard failure == nil, let buffer = coalesced, buffer.count > 0 else { return failure == nil }
        defer { buffer.removeAll() }
        switch spec {
        case .range(let request, let sink, _):
            guard sink(buffer.bytes, request.range.lowerBound + storedBytes) else {
                failure = .localStorage("the cache could not store the data")
                return false
            }
        case .document(_, let sink, _):
            // The receiver stopped the transfer on purpose.
            guard sink(buffer.bytes) else {
                failure = .cancelled
                return false
            }
        case .probe:
            break
        }
        storedBytes += UInt64(buffer.count)
        return true
    }

    /// Checks the final response's status and headers before any byte of its body is used.
    private func checkResponse() -> RemoteError? {
        let reply = responseFacts(redirected: hop.count > 0)
        switch hop.next(status: reply.status, locationHeader: reply.header("Location"), maxRedirects: maxRedirects) {
        case .success(let next?):
            redirect = next
            return nil
        case .success(nil):
            break
        case .failure(let refusal):
            return refusal
        }
        if (200..<300).contains(reply.status), let dialect,
           dialect.isErrorReply(url: requestURL, status: reply.status, headers: reply.headers) {
            // Its body is kept for `errorDetail`, never handed to the sink.
            return .status(reply.status)
        }
        let verdict: RemoteError?
        switch spec {
        case .probe(_, _, let method, _, _):
            switch ResponseCheck.probedSize(reply, firstByte: method == .firstByte) {
            case .success(let size):
                probedSize = size
                verdict = nil
            case .failure(let error):
                verdict = error
            }
        case .range(let request, _, _) where SFTPVersion.isSFTP(requestURL):
            verdict = sftpVerdict(request)
        case .range(let request, _, _):
            verdict = ResponseCheck.range(reply, for: request, condition: dialect?.rangeCondition ?? .ifRange)
                ?? request.versionCheck?(RemoteFileInfo(size: request.expectedSize, validator: reply.validator,
                                                        modified: responseHeaders.lastModified,
                                                        finalURL: reply.redirected ? effectiveURL : nil))
        case .document(let request, _, _):
            verdict = ResponseCheck.document(reply, for: request)
        }
        // The checks are pure; the server's `Retry-After` is read here, where dates are parsed.
        if case .status(let code, _, _) = verdict { return .status(code, retryAfter: responseHeaders.retryAfter) }
        return verdict
    }

    // MARK: Completion

    /// A background transfer stops to give its connection to a reader: what it gathered is
    /// stored, and the request for the rest of its range is returned, to go out again later
    /// with the same sink and completion. Nil when it cannot stop here: a whole-body stream
    /// (it could only start over), one whose bytes all arrived, or one its sink refused.
    func remainder() -> TransferSpec? {
        guard case .range(var request, let sink, let completion) = spec, !request.wholeBody, failure == nil,
              storePending(), storedBytes < UInt64(request.range.count) else { return nil }
        let rest = request.range.lowerBound + storedBytes
        // Cut short where it has come to already: it ends by itself with its next bytes.
        guard rest < request.wantedRange.upperBound else { return nil }
        request.range = rest..<request.range.upperBound
        return .range(request, sink: sink, completion: completion)
    }

    /// It gave its connection up (`remainder`): the request ends here without an outcome.
    func gaveUpItsConnection() {
        metrics.requestEnded(spec.metricsKind, status: responseCode, cancelled: true)
    }

    /// What goes out after a transfer ends without an outcome for its caller.
    struct FollowUp {
        let spec: TransferSpec
        /// The redirect to follow; nil to ask the URL itself again (a probe's one-byte GET).
        let hop: RedirectHop?
    }

    /// Reports the outcome to the caller. Returns a follow-up transfer when the response is a
    /// redirect, or when a HEAD probe must be retried as a one-byte GET.
    func finish(curlResult: CURLcode, cancelled: Bool) -> FollowUp? {
        metrics.requestEnded(spec.metricsKind, status: responseCode, cancelled: cancelled)
        if cancelled {
            spec.fail(.cancelled)
            return nil
        }
        if curlResult == CURLE_OK, !checked {
            // No body at all (HEAD, an empty file, an error page without a body).
            checked = true
            failure = checkResponse()
        }
        // A redirect's body was dropped, whether or not it was read to its end.
        if let redirect { return FollowUp(spec: spec, hop: redirect) }
        // What arrived is stored also when the transfer failed: a retry goes on from there.
        _ = storePending()
        if case .status(let code, _, nil) = failure, let dialect,
           let detail = dialect.errorDetail(url: requestURL, status: code, body: errorBody, headers: responseHeaders.lines) {
            failure = .status(code, retryAfter: responseHeaders.retryAfter, detail: detail)
        }
        switch spec {
        case .probe(let url, let headers, let method, let connection, let completion):
            if method == .head, failure != nil || curlResult != CURLE_OK {
                // Some servers refuse HEAD or omit its length; the range GET decides.
                return FollowUp(spec: .probe(url: url, headers: headers, method: .firstByte, connection: connection,
                                             completion: completion), hop: nil)
            }
            if let failure {
                completion(.failure(failure))
            } else if let size = probedSize {
                let reply = responseFacts(redirected: hop.count > 0)
                completion(.success(RemoteFileInfo(size: size, validator: reply.validator, modified: responseHeaders.lastModified,
                                                   finalURL: reply.redirected ? effectiveURL : nil,
                                                   cameAsStream: spec.goesAsStream && spokeHTTP2)))
            } else {
                completion(.failure(transportError(curlResult)))
            }
        case .range(let request, _, let completion):
            if let failure {
                completion(.failure(failure))
            } else if curlResult != CURLE_OK {
                completion(.failure(transportError(curlResult)))
            } else if SFTPVersion.isSFTP(requestURL), let short = SFTPReadCheck.afterBody(request, delivered: storedBytes) {
                completion(.failure(short))
            } else if storedBytes != UInt64(request.range.count) {
                completion(.failure(.protocolViolation("short body: \(storedBytes) of \(request.range.count) bytes")))
            } else {
                completion(.success(()))
            }
        case .document(let request, _, let completion):
            if let failure {
                completion(.failure(failure))
            } else if curlResult != CURLE_OK {
                completion(.failure(transportError(curlResult)))
            } else {
                let reply = responseFacts(redirected: hop.count > 0)
                let notModified = reply.status == 304
                var validator = reply.validator
                if notModified, validator.etag == nil, validator.lastModified == nil, let held = request.heldVersion {
                    validator = held
                }
                completion(.success(DocumentReply(notModified: notModified, validator: validator,
                                                  contentType: responseHeaders.value(of: "Content-Type"),
                                                  finalURL: effectiveURL ?? request.url, modified: responseHeaders.lastModified,
                                                  serverTime: serverTime)))
            }
        }
        return nil
    }

    private func transportError(_ code: CURLcode) -> RemoteError {
        let detail = String(cString: errorBuffer)
        let message = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
        if SFTPVersion.isSFTP(requestURL), let failure = Self.sftpFailure(code, message: message) { return failure }
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            return .transport("stalled or timed out (\(message))")
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_TOO_MANY_REDIRECTS, CURLE_URL_MALFORMAT,
             CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM:
            return .refused(message)
        default:
            return .transport(message)
        }
    }
}

private func curlTransferHeader(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int,
                                _ context: UnsafeMutableRawPointer?) -> Int {
    guard let context else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    transfer.receiveHeader(UnsafeRawBufferPointer(start: data, count: length))
    return length
}

private func curlTransferWrite(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int,
                               _ context: UnsafeMutableRawPointer?) -> Int {
    guard let context else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    switch transfer.receive(UnsafeRawBufferPointer(start: data, count: length)) {
    case .taken: return length
    case .pause: return Int(CURL_WRITEFUNC_PAUSE)
    case .abort:
        ConnectionRules.closeConnectionWhenDone(transfer.easy)
        return 0
    }
}
