import Foundation

/// Everything tests change while the server runs: published files, per-path options,
/// queued faults and the request log. Lives inside one `Mutex`.
struct ServerState: Sendable {
    private(set) var files: [String: PublishedFile] = [:]
    private var options: [String: PathOptions] = [:]
    private var faults: [QueuedFault] = []
    private(set) var log: [RecordedRequest] = []
    private var clock = ValidatorClock()
    private var nextRequestID = 1
    /// How many requests of each path were redirected so far (`PathOptions.redirectsInTurn`).
    private var redirectTurns: [String: Int] = [:]
    private(set) var acceptedConnections = 0

    private struct QueuedFault: Sendable {
        var fault: Fault
        var remaining: Int
        var path: String?
        var method: String?
        /// Only requests whose `Range` starts at this byte.
        var rangeFrom: Int?

        func applies(to path: String, method: String, range: String?) -> Bool {
            (self.path.map { $0 == path } ?? true)
                && (self.method.map { $0.caseInsensitiveCompare(method) == .orderedSame } ?? true)
                && (rangeFrom.map { first in
                    guard let range, case .from(first, _)? = ByteRangeSpec(header: range) else { return false }
                    return true
                } ?? true)
        }
    }

    // MARK: Files and options

    mutating func publish(_ path: String, bytes: [UInt8], etag: String?, lastModified: Date?, weakETag: Bool) {
        let tag = PublishedFile.etagValue(etag ?? clock.nextTag(size: bytes.count), weak: weakETag)
        let date = lastModified ?? clock.nextDate()
        files[path] = PublishedFile(bytes: bytes, etag: tag, lastModified: HTTPDate.format(date))
    }

    /// New content for an existing path, keeping whether its ETag is weak.
    mutating func replaceContent(_ path: String, bytes: [UInt8]) {
        publish(path, bytes: bytes, etag: nil, lastModified: nil, weakETag: files[path]?.isWeak ?? false)
    }

    mutating func remove(_ path: String) { files[path] = nil }

    mutating func configure(_ path: String, _ new: PathOptions) { options[path] = new }

    func options(for path: String) -> PathOptions { options[path] ?? PathOptions() }

    /// Where this request of `path` is redirected, when its options redirect in turn.
    mutating func nextRedirect(for path: String) -> String? {
        let targets = options(for: path).redirectsInTurn
        guard !targets.isEmpty else { return nil }
        let turn = redirectTurns[path, default: 0]
        redirectTurns[path] = turn + 1
        return targets[turn % targets.count]
    }

    // MARK: Faults

    mutating func inject(_ fault: Fault, times: Int, path: String?, method: String?, rangeFrom: Int?) {
        guard times > 0 else { return }
        faults.append(QueuedFault(fault: fault, remaining: times, path: path, method: method, rangeFrom: rangeFrom))
    }

    mutating func clearFaults() { faults.removeAll() }

    var pendingFaultCount: Int { faults.reduce(0) { $0 + $1.remaining } }

    /// The oldest queued fault that applies to this request, used up by one.
    mutating func takeFault(path: String, method: String, range: String?) -> Fault? {
        guard let index = faults.firstIndex(where: { $0.applies(to: path, method: method, range: range) }) else { return nil }
        let fault = faults[index].fault
        faults[index].remaining -= 1
        if faults[index].remaining == 0 { faults.remove(at: index) }
        return fault
    }

    // MARK: Connections and the log

    /// Counts an accepted connection and returns its number (1, 2, …).
    mutating func connectionAccepted() -> Int {
        acceptedConnections += 1
        return acceptedConnections
    }

    mutating func record(connection: Int, request: HTTPRequest?, status: Int, fault: Fault?) -> Int {
        let id = nextRequestID
        nextRequestID += 1
        log.append(RecordedRequest(
            id: id, connection: connection,
            method: request?.method ?? "", target: request?.target ?? "", path: request?.path ?? "",
            headers: request?.headers ?? [], range: request?.headers.value(of: "Range"),
            ifRange: request?.headers.value(of: "If-Range"), receivedAt: request?.receivedAt ?? Date(),
            status: status, bodyBytesSent: 0, fault: fault, finished: false))
        return id
    }

    /// Updates a logged request; a no-op once `resetLog` dropped it.
    mutating func update(_ id: Int, bodyBytesSent: Int, finished: Bool) {
        guard let index = log.lastIndex(where: { $0.id == id }) else { return }
        log[index].bodyBytesSent = bodyBytesSent
        log[index].finished = finished
    }

    mutating func resetLog() { log.removeAll() }
}
