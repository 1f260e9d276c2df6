/// Serves one connection: requests in turn (keep-alive) until the peer leaves, a fault
/// ends the connection, or the server stops.
struct ConnectionHandler {
    let core: ServerCore
    let socket: ConnectionSocket
    /// The connection's number in accept order, for the log.
    let number: Int

    func run() {
        var reader = RequestReader(socket: socket, stop: core.stop, limits: core.limits)
        serving: while true {
            switch reader.next() {
            case .request(let request):
                if !serve(request) { break serving }
            case .finished:
                break serving
            case .malformed(let why):
                reject(.text(400, "bad request: \(why)\n", includesBody: true))
                break serving
            case .headTooLarge:
                reject(.text(431, "request head larger than \(core.limits.maxHeadBytes) bytes\n", includesBody: true))
                break serving
            }
        }
        socket.closeGracefully(stop: core.stop)
    }

    /// Answers one request; true when the connection stays open for the next.
    private func serve(_ request: HTTPRequest) -> Bool {
        let path = request.path
        // Fault, file and options in one step, so `changeFileBefore` and the answer agree.
        let (fault, file, options, redirect) = core.state.withLock { state in
            let fault = state.takeFault(path: path, method: request.method, range: request.headers.value(of: "Range"))
            if case .changeFileBefore(let bytes) = fault { state.replaceContent(path, bytes: bytes) }
            return (fault, state.files[path], state.options(for: path), state.nextRedirect(for: path))
        }
        let responder = Responder(request: request, file: file, options: options)
        var plan = responder.plan()
        if let redirect {
            plan = .text(302, "redirect to \(redirect)\n", includesBody: request.method != "HEAD")
            plan.setHeader("Location", redirect)
        }
        fault?.shape(&plan, from: responder)
        let closing = plan.ending != .keepAlive || request.wantsClose
        let status = plan.sendsNothing || plan.rawHead != nil ? 0 : plan.status
        // Logged before any delay, so a test sees a stalled request while it stalls.
        let id = core.state.withLock { $0.record(connection: number, request: request, status: status, fault: fault) }

        var delay = options.latency ?? .zero
        if case .stallBeforeHeaders(let duration) = fault { delay += duration }
        guard core.stop.sleep(delay) else {
            core.state.withLock { $0.update(id, bodyBytesSent: 0, finished: true) }
            return false
        }
        let delivered = carryOut(plan, closing: closing, logID: id, bytesPerSecond: options.bytesPerSecond)
        return delivered && !closing
    }

    /// A request that could not be parsed: logged with what is known, answered, closed.
    private func reject(_ plan: ResponsePlan) {
        let id = core.state.withLock { $0.record(connection: number, request: nil, status: plan.status, fault: nil) }
        _ = carryOut(plan, closing: true, logID: id, bytesPerSecond: nil)
    }

    /// Sends the plan's head and body; true when everything planned went out.
    private func carryOut(_ plan: ResponsePlan, closing: Bool, logID: Int, bytesPerSecond: Int?) -> Bool {
        var sent = 0
        defer { core.state.withLock { $0.update(logID, bodyBytesSent: sent, finished: true) } }
        if plan.sendsNothing { return false }
        guard socket.send(plan.head(closing: closing), timeout: core.limits.sendTimeout, stop: core.stop) else {
            return false
        }
        let delivered = sendBody(plan.bytesToSend, bytesPerSecond: bytesPerSecond, logID: logID, sent: &sent)
        if case .stallThenClose(let duration) = plan.ending, delivered {
            _ = core.stop.sleep(duration)
        }
        return delivered
    }

    /// Sends in chunks, paced to `bytesPerSecond` when given, keeping the log's byte count current.
    private func sendBody(_ body: ArraySlice<UInt8>, bytesPerSecond: Int?, logID: Int, sent: inout Int) -> Bool {
        let chunkSize = bytesPerSecond.map { max(1, min(64 * 1024, $0 / 20)) } ?? 256 * 1024
        let started = ContinuousClock.now
        var offset = body.startIndex
        while offset < body.endIndex {
            let end = min(offset + chunkSize, body.endIndex)
            guard socket.send(body[offset ..< end], timeout: core.limits.sendTimeout, stop: core.stop) else {
                return false
            }
            sent += end - offset
            offset = end
            let progress = sent
            core.state.withLock { $0.update(logID, bodyBytesSent: progress, finished: false) }
            if let rate = bytesPerSecond, offset < body.endIndex {
                let due = started + .seconds(Double(sent) / Double(rate))
                let wait = ContinuousClock.now.duration(to: due)
                if wait > .zero, !core.stop.sleep(wait) { return false }
            }
        }
        return true
    }
}
