/// How each fault bends the well-behaved plan. `stallBeforeHeaders` and
/// `changeFileBefore` act before planning, so they leave the plan as it is.
extension Fault {
    func shape(_ plan: inout ResponsePlan, from responder: Responder) {
        let isHead = responder.request.method == "HEAD"
        switch self {
        case .dropConnection(let after):
            plan.bodyLimit = max(0, after)
            plan.ending = .close
        case .stall(let after, let duration):
            plan.bodyLimit = max(0, after)
            plan.ending = .stallThenClose(duration)
        case .stallBeforeHeaders, .changeFileBefore:
            break
        case .shortBody(let missing):
            plan.bodyLimit = max(0, plan.body.count - missing)
            plan.ending = .close
        case .extraBytes(let count):
            plan.extraBody = Self.bytesAfter(plan, in: responder.file, count: count)
            plan.ending = .close
        case .status(let code, let retryAfter):
            plan = .text(code, "fault: status \(code)\n", includesBody: !isHead)
            if let retryAfter { plan.setHeader("Retry-After", retryAfter) }
        case .ignoreRange:
            plan = responder.plan(honouringRange: false)
        case .wrongContentRange(let offset):
            guard let file = responder.file, !file.bytes.isEmpty else { return }
            let total = file.bytes.count
            let asked = plan.servedRange ?? 0 ..< total
            let start = min(max(0, asked.lowerBound + offset), total - 1)
            Self.makePartial(&plan, file: file, range: start ..< min(start + asked.count, total), total: total)
        case .wrongTotal(let claimed):
            guard let file = responder.file, !file.bytes.isEmpty else { return }
            Self.makePartial(&plan, file: file, range: plan.servedRange ?? 0 ..< file.bytes.count, total: claimed)
        case .gzipContentEncoding:
            guard plan.includesBody else { return }
            plan.body = ArraySlice(GzipStream.compress(Array(plan.body)))
            plan.setHeader("Content-Encoding", "gzip")
        case .gzipTransferCoding:
            guard plan.includesBody else { return }
            var head = "HTTP/1.1 \(plan.status) \(ResponsePlan.reason(for: plan.status))\r\nServer: FaultServer\r\n"
            for field in plan.headers { head += "\(field.name): \(field.value)\r\n" }
            head += "Transfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n"
            plan.rawHead = Array(head.utf8)
            plan.body = ArraySlice(GzipStream.chunked(GzipStream.compress(Array(plan.body))))
            plan.ending = .close
        case .bodyLengthOff(let delta):
            guard let file = responder.file, let served = plan.servedRange else { return }
            let end = min(max(served.lowerBound, served.upperBound + delta), file.bytes.count)
            plan.body = file.bytes[served.lowerBound ..< end]
        case .redirect(let location, let status):
            plan = .text(status, "redirect to \(location)\n", includesBody: !isHead)
            plan.setHeader("Location", location)
        case .hugeHeader(let size):
            let name = "X-Fault-Padding"
            let filler = String(repeating: "a", count: max(1, size - name.count - 4))
            plan.headers.insert(HeaderField(name, filler), at: 0)
        case .malformedHeaders:
            plan.rawHead = Array("HTTP/1.1 2x0 ???\r\nthis line has no colon\r\n\u{1}\u{2}\u{3}: \r\n\r\n".utf8)
            plan.includesBody = false
            plan.ending = .close
        case .closeBeforeResponse:
            plan.sendsNothing = true
            plan.ending = .close
        }
    }

    private static func makePartial(_ plan: inout ResponsePlan, file: PublishedFile, range: Range<Int>, total: Int) {
        plan.status = 206
        plan.body = file.bytes[range]
        plan.servedRange = range
        plan.setHeader("Content-Range", ResponsePlan.contentRange(range, total: total))
    }

    /// What follows the announced body in the file, then `X` once the file ends: plausible
    /// bytes a client must still refuse.
    private static func bytesAfter(_ plan: ResponsePlan, in file: PublishedFile?, count: Int) -> [UInt8] {
        let count = max(0, count)
        let end = plan.servedRange?.upperBound ?? plan.body.count
        let following = file.map { Array($0.bytes.dropFirst(end).prefix(count)) } ?? []
        return following + [UInt8](repeating: UInt8(ascii: "X"), count: count - following.count)
    }
}
