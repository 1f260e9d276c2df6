/// What the checks need to know of the final response (after redirects): its status and
/// headers, its announced length, and whether a redirect was followed to get it.
struct ResponseFacts: Sendable {
    var status: Int
    /// Header names in lowercase, in arrival order.
    var headers: [(name: String, value: String)]
    /// `Content-Length`, when the reply has one (a chunked reply has none).
    var contentLength: UInt64?
    /// The reply came from another URL than the one asked (a redirect was followed).
    var redirected: Bool

    /// The first header of that name, or nil.
    func header(_ name: String) -> String? {
        let key = name.lowercased()
        return headers.first { $0.name == key }?.value
    }

    var validator: RemoteValidator {
        let lastModified = header("Last-Modified")
        return RemoteValidator(etag: header("ETag"), lastModified: lastModified,
                               lastModifiedIsStrong: lastModified.map { Self.isStrong(lastModified: $0, date: header("Date")) } ?? false)
    }

    /// A date is a strong validator when it is at least a second older than the reply's `Date`
    /// (RFC 9110 §8.8.2.2); without a `Date` it cannot be told.
    static func isStrong(lastModified: String, date: String?) -> Bool {
        guard let date, let sent = RFC822Date.parse(date)?.date,
              let modified = RFC822Date.parse(lastModified)?.date else { return false }
        return sent.timeIntervalSince(modified) >= 1
    }
}

/// Decides, before a single body byte is used, whether a reply may fill the cache. Pure logic:
/// `CurlTransfer` gathers the facts and acts on the verdict. Every rule here protects the one
/// promise that a reader never sees a byte the remote file does not hold at that offset.
enum ResponseCheck {
    /// The verdict on a reply to a range request (or, with `wholeBody`, to a plain GET) that
    /// named its version by `condition`.
    static func range(_ reply: ResponseFacts, for request: RangeRequest, condition: RangeCondition = .ifRange) -> RemoteError? {
        if let encoded = encodingProblem(reply) { return encoded }
        if request.wholeBody { return wholeBody(reply, for: request) }
        switch reply.status {
        case 206:
            guard let text = reply.header("Content-Range"), let contentRange = ContentRange(headerValue: text) else {
                return .protocolViolation("206 reply without a valid Content-Range")
            }
            if let total = contentRange.total, total != request.expectedSize {
                return .changed("size was \(request.expectedSize), now \(total)")
            }
            guard contentRange.range == request.range, contentRange.total != nil else {
                return .protocolViolation("asked for bytes \(request.range.lowerBound)-\(request.range.upperBound - 1), got Content-Range: \(text)")
            }
            if let length = reply.contentLength, length != UInt64(request.range.count) {
                return .protocolViolation("Content-Length \(length) disagrees with Content-Range: \(text)")
            }
            // Without a condition sent (a weak validator), this check is the only one.
            if let why = partialReplyChange(from: request.validator, to: reply.validator) {
                return versionMismatch(why, redirected: reply.redirected)
            }
            return nil
        case 200:
            // The whole body of another version: a change. Of the version held, in answer to a
            // request that named it: the server did not take the condition, which says nothing
            // of ranges. Only a plain range request answered so shows that ranges are ignored.
            if let why = versionChange(from: request.validator, to: reply.validator) {
                return versionMismatch(why, redirected: reply.redirected)
            }
            return request.conditionHeader(condition) == nil ? .rangesNotSupported : .conditionNotHonoured
        case 416:
            return .changed("range not satisfiable (the file is shorter now)")
        case 412 where condition == .ifMatch && request.validator.etag != nil:
            return .changed("ETag is no longer \(request.validator.etag!) (412 to If-Match)")
        default:
            return .status(reply.status, retryAfter: nil)
        }
    }

    /// A whole-file GET: the same version and the same length, or nothing is used.
    private static func wholeBody(_ reply: ResponseFacts, for request: RangeRequest) -> RemoteError? {
        guard reply.status == 200 else { return .status(reply.status, retryAfter: nil) }
        if let length = reply.contentLength, length != request.expectedSize {
            return .changed("size was \(request.expectedSize), now \(length)")
        }
        return versionChange(from: request.validator, to: reply.validator)
            .map { versionMismatch($0, redirected: reply.redirected) }
    }

    /// A whole document: `200` (`207` to a `PROPFIND`; or `304` to a conditional request), not
    /// encoded, and not announced longer than the cap. A chunked reply has no length to check
    /// here; the transfer counts its bytes as they come.
    static func document(_ reply: ResponseFacts, for request: DocumentRequest) -> RemoteError? {
        switch reply.status {
        case request.method.successStatus:
            if let encoded = encodingProblem(reply) { return encoded }
            if let length = reply.contentLength, length > request.maxBytes {
                return request.tooLong(length, announced: true)
            }
            return nil
        case 304 where request.heldVersion != nil:
            return nil
        default:
            return .status(reply.status, retryAfter: nil)
        }
    }

    /// The size a probe's reply states, or why it cannot be trusted.
    static func probedSize(_ reply: ResponseFacts, firstByte: Bool) -> Result<UInt64, RemoteError> {
        // An encoded reply's lengths are those of the encoding, not of the file.
        if let encoded = encodingProblem(reply) { return .failure(encoded) }
        switch (firstByte, reply.status) {
        case (true, 206):
            guard let text = reply.header("Content-Range"), let total = ContentRange(headerValue: text)?.total else {
                return .failure(.protocolViolation("206 reply without a Content-Range total"))
            }
            return .success(total)
        case (true, 416):
            // The only file with no byte 0 is the empty one (`Content-Range: bytes */0`).
            guard let text = reply.header("Content-Range"), let total = ContentRange.unsatisfiedTotal(headerValue: text) else {
                return .failure(.status(416, retryAfter: nil))
            }
            return .success(total)
        case (_, 200):
            guard let length = reply.contentLength else { return .failure(.protocolViolation("no Content-Length in the reply")) }
            return .success(length)
        default:
            return .failure(.status(reply.status, retryAfter: nil))
        }
    }

    /// How the reply's version differs from `validator`, or nil when it is the same (or cannot
    /// be told: a server that sends no validator at all).
    /// ETags are compared weakly (`RemoteValidator.sameVersion`).
    static func versionChange(from validator: RemoteValidator, to reply: RemoteValidator) -> String? {
        if let expected = validator.etag {
            if let etag = reply.etag, RemoteValidator.sameVersion(etag, expected) { return nil }
            return "ETag was \(expected), now \(reply.etag ?? "none")"
        }
        if let expected = validator.lastModified {
            return reply.lastModified == expected ? nil : "Last-Modified was \(expected), now \(reply.lastModified ?? "none")"
        }
        return nil
    }

    /// How a `206`'s validators differ from `validator`: only those the reply names are
    /// compared (a server may leave them out of partial replies).
    private static func partialReplyChange(from validator: RemoteValidator, to reply: RemoteValidator) -> String? {
        if let expected = validator.etag {
            guard let etag = reply.etag else { return nil }
            return RemoteValidator.sameVersion(etag, expected) ? nil : "ETag was \(expected), now \(etag)"
        }
        if let expected = validator.lastModified, let modified = reply.lastModified, modified != expected {
            return "Last-Modified was \(expected), now \(modified)"
        }
        return nil
    }

    /// Another validator from the URL the validator came from is a new version; from a place a
    /// redirect led to, it may be a mirror with its own validator for the same bytes.
    private static func versionMismatch(_ why: String, redirected: Bool) -> RemoteError {
        redirected ? .servedElsewhere(why) : .changed(why)
    }

    /// The body is not the file's bytes as they are: it carries a content coding (gzip from a
    /// misconfigured proxy, although the request asked for `identity`), or a transfer coding
    /// libcurl does not undo (it removes `chunked` only).
    static func encodingProblem(_ reply: ResponseFacts) -> RemoteError? {
        if let coding = reply.header("Content-Encoding"), !codings(coding).allSatisfy({ $0 == "identity" }) {
            return .protocolViolation("reply is encoded (Content-Encoding: \(coding)) although identity was asked for; its bytes are not the file's")
        }
        if let coding = reply.header("Transfer-Encoding"),
           !codings(coding).allSatisfy({ $0 == "chunked" || $0 == "identity" }) {
            return .protocolViolation("reply has a transfer coding that is not undone (Transfer-Encoding: \(coding)); its bytes are not the file's")
        }
        return nil
    }

    private static func codings(_ value: String) -> [String] {
        value.split(separator: ",").map { $0.trimmingASCIIWhitespace().lowercased() }.filter { !$0.isEmpty }
    }
}
