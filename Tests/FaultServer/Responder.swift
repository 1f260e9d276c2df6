import Foundation

/// The well-behaved answer to a request, by HTTP semantics alone (no faults): `HEAD`,
/// `GET`, a single `Range`, `If-Range`, `If-None-Match`/`If-Modified-Since` (304), 404/410, 405, 416.
struct Responder: Sendable {
    let request: HTTPRequest
    let file: PublishedFile?
    let options: PathOptions

    private var isHead: Bool { request.method == "HEAD" }

    func plan(honouringRange: Bool = true) -> ResponsePlan {
        guard request.method == "GET" || isHead else {
            var plan = ResponsePlan.text(405, "method not allowed\n", includesBody: true)
            plan.setHeader("Allow", options.headAllowed ? "GET, HEAD" : "GET")
            return plan
        }
        if isHead && !options.headAllowed {
            var plan = ResponsePlan.text(405, "HEAD not allowed here\n", includesBody: false)
            plan.setHeader("Allow", "GET")
            return plan
        }
        guard let file else {
            return ResponsePlan.text(options.goneStatus, "no file at \(request.path)\n", includesBody: !isHead)
        }

        var plan = ResponsePlan(status: 200, headers: validatorHeaders(of: file), body: file.bytes[...],
                                includesBody: !isHead)
        plan.chunked = options.chunked
        if isHead, let stated = options.statedSize { plan.announcedLength = stated }
        if isUnchanged(file) {
            plan.status = 304
            plan.body = []
            plan.includesBody = false
            plan.chunked = false
            return plan
        }
        guard honouringRange, options.rangesSupported,
              let header = request.headers.value(of: "Range"), let spec = ByteRangeSpec(header: header),
              ifRangeAllowsRange(for: file) else {
            return plan   // no range, ignored range, or changed file: the whole current body
        }
        let total = file.bytes.count
        guard let range = spec.resolve(size: total) else {
            plan.status = 416
            plan.body = []
            plan.setHeader("Content-Range", "bytes */\(total)")
            return plan
        }
        plan.status = 206
        plan.body = file.bytes[range]
        plan.servedRange = range
        plan.setHeader("Content-Range", options.statedSize.map { "bytes \(range.lowerBound)-\(range.upperBound - 1)/\($0)" }
            ?? ResponsePlan.contentRange(range, total: total))
        return plan
    }

    private func validatorHeaders(of file: PublishedFile) -> [HeaderField] {
        var headers = [HeaderField("Content-Type", options.contentType ?? "application/octet-stream")]
        if options.rangesSupported { headers.append(HeaderField("Accept-Ranges", "bytes")) }
        if options.sendETag { headers.append(HeaderField("ETag", file.etag)) }
        if options.sendLastModified { headers.append(HeaderField("Last-Modified", file.lastModified)) }
        return headers
    }

    /// RFC 9110 §13.1.1-2: `If-None-Match` naming the current version (weak comparison, or
    /// `*`) means unchanged; without it, `If-Modified-Since` with the very date this version
    /// was sent with does. Validators the server does not send cannot match.
    private func isUnchanged(_ file: PublishedFile) -> Bool {
        if let tags = request.headers.value(of: "If-None-Match") {
            guard options.sendETag else { return false }
            let opaque = { (tag: Substring) in tag.hasPrefix("W/") ? tag.dropFirst(2) : tag }
            let current = opaque(Substring(file.etag))
            return tags.split(separator: ",").contains { candidate in
                let tag = candidate.trimmingCharacters(in: .whitespaces)
                return tag == "*" || opaque(Substring(tag)) == current
            }
        }
        guard let date = request.headers.value(of: "If-Modified-Since") else { return false }
        return options.sendLastModified && date == file.lastModified
    }

    /// RFC 9110 §13.1.5: the range applies only if `If-Range` names the current version
    /// by a strong ETag (exact match; a weak one never matches) or by its exact
    /// `Last-Modified` date. A validator the server does not send cannot match.
    private func ifRangeAllowsRange(for file: PublishedFile) -> Bool {
        guard let ifRange = request.headers.value(of: "If-Range") else { return true }
        if ifRange.hasPrefix("\"") || ifRange.hasPrefix("W/") {
            return options.sendETag && !file.isWeak && !ifRange.hasPrefix("W/") && ifRange == file.etag
        }
        return options.sendLastModified && ifRange == file.lastModified
    }
}
