import FaultServer
import Foundation
import Logging
import RangeFSCore
import Synchronization
import Testing

/// The real libcurl client (`CurlClient`) against the misbehaving server, without a mount:
/// each fault must come back as the `RemoteError` that decides what the fetcher does
/// (retry, start over, give up), and no byte outside the asked range may reach the sink.
/// Faults that take too long through a mount (a 20 s stall) are tested here with a short
/// stall timeout.
@Suite("Remote client against a faulty server")
final class RemoteFaultTests {
    let server: FaultServer
    let client: CurlClient
    let data = RandomBytes.make(count: 1 << 20, seed: 0xC0DE)

    init() throws {
        server = try FaultServer()
        server.publish("file.bin", bytes: data)
        var configuration = CurlClient.Configuration()
        configuration.stallTimeoutSeconds = 2
        configuration.connectTimeoutSeconds = 3
        var logger = Logger(label: "remote-fault-tests")
        logger.logLevel = .critical
        client = CurlClient(configuration: configuration, logger: logger)
    }

    deinit {
        client.shutdown()
        server.stop()
    }

    /// What one fetch delivered and how it ended.
    struct Fetched {
        var result: Result<Void, RemoteError>?
        var chunks: [(offset: UInt64, bytes: [UInt8])] = []
        var seconds: Double = 0

        var error: RemoteError? {
            if case .failure(let error) = result { return error }
            return nil
        }
    }

    private func info(_ path: String = "file.bin") throws -> RemoteFileInfo {
        let box = Mutex<Result<RemoteFileInfo, RemoteError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        client.probe(url: server.url(path), headers: [:], connection: .own) { result in
            box.withLock { $0 = result }
            done.signal()
        }
        guard done.wait(timeout: .now() + 30) == .success, let result = box.withLock({ $0 }) else {
            throw HarnessError("probe of \(path) did not finish in 30 s")
        }
        return try result.get()
    }

    private func probe(_ path: String) -> (Result<RemoteFileInfo, RemoteError>?, Double) {
        let box = Mutex<Result<RemoteFileInfo, RemoteError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let start = Date()
        client.probe(url: server.url(path), headers: [:], connection: .own) { result in
            box.withLock { $0 = result }
            done.signal()
        }
        _ = done.wait(timeout: .now() + 60)
        return (box.withLock { $0 }, Date().timeIntervalSince(start))
    }

    private func fetch(_ range: Range<UInt64>, path: String = "file.bin", validator: RemoteValidator? = nil,
                       size: Int? = nil, wholeBody: Bool = false, conditional: Bool = true) throws -> Fetched {
        let validator = try validator ?? info(path).validator
        var request = RangeRequest(url: server.url(path), headers: [:], range: range,
                                   expectedSize: UInt64(size ?? data.count), validator: validator, wholeBody: wholeBody)
        request.conditional = conditional
        let box = Mutex(Fetched())
        let done = DispatchSemaphore(value: 0)
        let start = Date()
        client.fetch(request, sink: { bytes, offset in
            box.withLock { $0.chunks.append((offset, Array(bytes))) }
            return true
        }, completion: { result in
            box.withLock { $0.result = result }
            done.signal()
        })
        guard done.wait(timeout: .now() + 60) == .success else {
            throw HarnessError("fetch of \(range) did not finish in 60 s")
        }
        var fetched = box.withLock { $0 }
        fetched.seconds = Date().timeIntervalSince(start)
        return fetched
    }

    /// Every delivered chunk lies inside `range`, follows the previous one, and holds the right bytes.
    private func checkChunks(_ fetched: Fetched, _ range: Range<UInt64>, of bytes: [UInt8]? = nil,
                             sourceLocation: SourceLocation = #_sourceLocation) {
        let bytes = bytes ?? data
        var next = range.lowerBound
        for chunk in fetched.chunks {
            #expect(chunk.offset == next, "chunk at \(chunk.offset), expected \(next)", sourceLocation: sourceLocation)
            let end = chunk.offset + UInt64(chunk.bytes.count)
            #expect(end <= range.upperBound, "bytes past the asked range (up to \(end), asked \(range))", sourceLocation: sourceLocation)
            if end <= UInt64(bytes.count) {
                #expect(chunk.bytes == Array(bytes[Int(chunk.offset)..<Int(end)]), "WRONG BYTES at \(chunk.offset)",
                        sourceLocation: sourceLocation)
            }
            next = end
        }
    }

    @Test("a stall mid-body is detected by the low-speed limit: .transport within a few seconds")
    func stallMidBody() throws {
        server.inject(.stall(afterBodyBytes: 1000, for: .seconds(20)), method: "GET")
        let fetched = try fetch(0..<100_000)
        guard case .transport(let message) = fetched.error else {
            Issue.record("expected .transport for a stall, got \(String(describing: fetched.result))")
            return
        }
        #expect(fetched.error?.isTransient == true)
        #expect(fetched.seconds < 10, "stall detected after \(fetched.seconds) s with a 2 s limit")
        checkChunks(fetched, 0..<100_000)
        print("stall mid-body: \(message) after \(String(format: "%.1f", fetched.seconds)) s")
    }

    @Test("a stall before the headers is detected: .transport within a few seconds")
    func stallBeforeHeaders() throws {
        let validator = try info().validator
        server.inject(.stallBeforeHeaders(for: .seconds(20)), method: "GET")
        let fetched = try fetch(0..<100_000, validator: validator)
        #expect(fetched.error.map { if case .transport = $0 { true } else { false } } == true,
                "expected .transport, got \(String(describing: fetched.result))")
        #expect(fetched.seconds < 10, "took \(fetched.seconds) s")
        #expect(fetched.chunks.isEmpty)
    }

    @Test("a wrong total size in Content-Range means the file changed: .changed, nothing delivered")
    func wrongTotalIsChange() throws {
        let validator = try info().validator
        server.inject(.wrongTotal(data.count + 10), method: "GET")
        let fetched = try fetch(1000..<5000, validator: validator)
        #expect(fetched.error.map { if case .changed = $0 { true } else { false } } == true, "got \(String(describing: fetched.result))")
        #expect(fetched.chunks.isEmpty, "bytes delivered from a reply of another version")
    }

    @Test("a Content-Range other than the one asked for is a protocol violation; nothing delivered")
    func wrongContentRangeIsViolation() throws {
        let validator = try info().validator
        server.inject(.wrongContentRange(offsetBy: 512), method: "GET")
        let fetched = try fetch(1000..<5000, validator: validator)
        #expect(fetched.error.map { if case .protocolViolation = $0 { true } else { false } } == true, "got \(String(describing: fetched.result))")
        #expect(fetched.error?.isTransient == true)
        #expect(fetched.chunks.isEmpty)
    }

    @Test("a 416 and a 200 with another ETag both mean the file changed")
    func changedReplies() throws {
        let validator = try info().validator
        server.inject(.status(416), method: "GET")
        let unsatisfiable = try fetch(1000..<5000, validator: validator)
        #expect(unsatisfiable.error.map { if case .changed = $0 { true } else { false } } == true, "416: \(String(describing: unsatisfiable.result))")

        server.inject(.changeFileBefore(bytes: RandomBytes.make(count: data.count, seed: 9)), method: "GET")
        let replaced = try fetch(1000..<5000, validator: validator)
        #expect(replaced.error.map { if case .changed = $0 { true } else { false } } == true, "200 with a new ETag: \(String(describing: replaced.result))")
        #expect(replaced.chunks.isEmpty, "bytes of the new version were delivered")
        #expect(server.gets("file.bin").last?.ifRange == validator.etag, "If-Range was not the stored ETag")
    }

    @Test("a 200 with the same ETag: to If-Range .conditionNotHonoured, to a plain range .rangesNotSupported, nothing delivered; a whole-body request then works")
    func ignoredRange() throws {
        let validator = try info().validator
        server.inject(.ignoreRange, method: "GET")
        let conditional = try fetch(1000..<5000, validator: validator)
        #expect(conditional.error == .conditionNotHonoured, "got \(String(describing: conditional.result))")
        #expect(conditional.chunks.isEmpty, "a 200 body was delivered as if it started at the asked offset")
        #expect(server.gets("file.bin").last?.ifRange == validator.etag)

        server.inject(.ignoreRange, method: "GET")
        let fetched = try fetch(1000..<5000, validator: validator, conditional: false)
        #expect(fetched.error == .rangesNotSupported, "got \(String(describing: fetched.result))")
        #expect(fetched.chunks.isEmpty, "a 200 body was delivered as if it started at the asked offset")
        #expect(server.gets("file.bin").last?.ifRange == nil, "an unconditional request sent If-Range")

        let whole = try fetch(0..<UInt64(data.count), validator: validator, wholeBody: true)
        #expect(whole.result.map { (try? $0.get()) != nil } == true, "whole body: \(String(describing: whole.result))")
        checkChunks(whole, 0..<UInt64(data.count))
        #expect(whole.chunks.reduce(0) { $0 + $1.bytes.count } == data.count)
    }

    @Test("short body, extra bytes, a dropped connection: a transient error or exactly the asked bytes, never more")
    func bodyLengthFaults() throws {
        let validator = try info().validator
        let faults: [Fault] = [.shortBody(missingBytes: 100), .extraBytes(5000), .dropConnection(afterBodyBytes: 2000),
                               .closeBeforeResponse]
        for fault in faults {
            server.inject(fault, method: "GET")
            let range: Range<UInt64> = 10_000..<60_000
            let fetched = try fetch(range, validator: validator)
            checkChunks(fetched, range)
            let delivered = fetched.chunks.reduce(0) { $0 + $1.bytes.count }
            switch fetched.result {
            case .success:
                #expect(delivered == range.count, "\(fault): success with \(delivered) of \(range.count) bytes")
            case .failure(let error):
                #expect(error.isTransient, "\(fault): \(error) should be retried")
                #expect(delivered < range.count || fault == .extraBytes(5000), "\(fault): failed after delivering everything")
            case nil:
                Issue.record("\(fault): no result")
            }
            print("\(fault): \(String(describing: fetched.result)), \(delivered) bytes delivered")
        }
    }

    @Test("redirects: relative followed; a loop and a redirect to ftp:// are refused, and ftp is never contacted")
    func redirects() throws {
        let validator = try info().validator
        server.inject(.redirect(to: "/file.bin"), for: "alias.bin")
        let followed = try fetch(0..<1000, path: "alias.bin", validator: validator)
        #expect((try? followed.result?.get()) != nil, "relative redirect: \(String(describing: followed.result))")
        checkChunks(followed, 0..<1000)

        server.inject(.redirect(to: "/loop.bin"), times: 100, for: "loop.bin")
        let loop = try fetch(0..<1000, path: "loop.bin", validator: validator)
        #expect(loop.error.map { if case .refused = $0 { true } else { false } } == true, "loop: \(String(describing: loop.result))")
        #expect(loop.error?.isTransient == false)
        #expect(server.requests(for: "loop.bin").count <= 10, "a loop followed \(server.requests(for: "loop.bin").count) times")
        server.clearFaults()

        let ftpHost = try FaultServer()
        server.inject(.redirect(to: "ftp://127.0.0.1:\(ftpHost.port)/file.bin"), for: "ftp.bin")
        let ftp = try fetch(0..<1000, path: "ftp.bin", validator: validator)
        #expect(ftp.error.map { if case .refused = $0 { true } else { false } } == true, "ftp: \(String(describing: ftp.result))")
        Thread.sleep(forTimeInterval: 0.2)
        #expect(ftpHost.acceptedConnections == 0, "the ftp:// target was contacted")

        server.inject(.redirect(to: "file:///etc/passwd"), for: "local.bin")
        let local = try fetch(0..<1000, path: "local.bin", validator: validator)
        #expect(local.error.map { if case .refused = $0 { true } else { false } } == true, "file://: \(String(describing: local.result))")
        #expect(local.chunks.isEmpty)
    }

    @Test("Retry-After in seconds and as a date comes back with the status; 500 and 429 are transient, 404 is not")
    func statusReplies() throws {
        let validator = try info().validator
        server.inject(.status(503, retryAfter: "7"), method: "GET")
        let seconds = try fetch(0..<1000, validator: validator)
        #expect(seconds.error == .status(503, retryAfter: .seconds(7)), "got \(String(describing: seconds.result))")

        let future = HTTPDateFormat.string(Date().addingTimeInterval(12))
        server.inject(.status(503, retryAfter: future), method: "GET")
        let dated = try fetch(0..<1000, validator: validator)
        if case .status(503, let after?, _) = dated.error {
            #expect(after >= .seconds(9) && after <= .seconds(13), "Retry-After date → \(after)")
        } else {
            Issue.record("Retry-After as a date: got \(String(describing: dated.result))")
        }

        server.inject(.status(503, retryAfter: "soon, maybe"), method: "GET")
        let garbage = try fetch(0..<1000, validator: validator)
        #expect(garbage.error == .status(503, retryAfter: nil), "garbage Retry-After: \(String(describing: garbage.result))")

        for (code, transient) in [(500, true), (429, true), (408, true), (404, false), (410, false), (403, false)] {
            server.inject(.status(code), method: "GET")
            let fetched = try fetch(0..<1000, validator: validator)
            if case .status(let got, _, _) = fetched.error {
                #expect(got == code)
            } else {
                Issue.record("\(code): got \(String(describing: fetched.result))")
            }
            #expect(fetched.error?.isTransient == transient, "\(code) transient should be \(transient)")
        }
    }

    @Test("huge and malformed headers fail the transfer (or are read correctly), without a crash")
    func brokenHeaders() throws {
        let validator = try info().validator
        for fault in [Fault.hugeHeader(bytes: 1_000_000), .malformedHeaders, .hugeHeader(bytes: 200_000)] {
            server.inject(fault, method: "GET")
            let fetched = try fetch(0..<1000, validator: validator)
            #expect(fetched.error != nil, "\(fault): expected a failure, got \(String(describing: fetched.result))")
            #expect(fetched.chunks.isEmpty, "\(fault): bytes delivered")
            print("\(fault): \(String(describing: fetched.error))")
        }
        server.inject(.malformedHeaders)
        let (probed, seconds) = probe("file.bin")
        if case .success(let info)? = probed {
            // HEAD failed, the one-byte GET fallback succeeded: that is fine, if it is right.
            #expect(info.size == UInt64(data.count))
        }
        #expect(seconds < 30)
        let fine = try fetch(0..<1000, validator: validator)
        #expect((try? fine.result?.get()) != nil, "the client works after the broken replies")
    }

    @Test("a weak ETag is not used for If-Range, nor the date beside it; a date alone is, where it is strong")
    func weakETagIfRange() throws {
        server.publish("weak.bin", bytes: data, lastModified: Date().addingTimeInterval(-3600), weakETag: true)
        let weak = try info("weak.bin")
        #expect(weak.validator.etag?.hasPrefix("W/") == true && weak.validator.lastModifiedIsStrong)
        let fetched = try fetch(0..<1000, path: "weak.bin", validator: weak.validator)
        #expect((try? fetched.result?.get()) != nil, "\(String(describing: fetched.result))")
        #expect(server.gets("weak.bin").last.map { $0.ifRange == nil && $0.status == 206 } == true, "\(server.gets("weak.bin"))")

        server.publish("dated.bin", bytes: data, lastModified: Date().addingTimeInterval(-3600))
        server.configure("dated.bin", PathOptions(sendETag: false))
        let dated = try info("dated.bin")
        _ = try fetch(0..<1000, path: "dated.bin", validator: dated.validator)
        let sent = server.gets("dated.bin").last?.ifRange
        #expect(sent == server.lastModified(of: "dated.bin"), "If-Range sent: \(sent ?? "none")")

        // Modified later than the reply's Date (as Apache dates a file written this second): a weak date.
        server.publish("fresh.bin", bytes: data, lastModified: Date().addingTimeInterval(3600))
        server.configure("fresh.bin", PathOptions(sendETag: false))
        let fresh = try info("fresh.bin")
        #expect(!fresh.validator.lastModifiedIsStrong)
        let ranged = try fetch(0..<1000, path: "fresh.bin", validator: fresh.validator)
        #expect((try? ranged.result?.get()) != nil, "\(String(describing: ranged.result))")
        #expect(server.gets("fresh.bin").last.map { $0.ifRange == nil && $0.status == 206 } == true,
                "no If-Range at all: \(server.gets("fresh.bin"))")
    }

    @Test("a probe where HEAD is refused falls back to a one-byte GET; a wrong probe reply is an error, not a size")
    func probes() throws {
        server.publish("nohead.bin", bytes: data)
        server.configure("nohead.bin", PathOptions(headAllowed: false))
        let (noHead, _) = probe("nohead.bin")
        #expect((try? noHead?.get())?.size == UInt64(data.count), "HEAD refused: \(String(describing: noHead))")

        server.inject(.status(500), times: 2, for: "file.bin")
        let (failed, seconds) = probe("file.bin")
        if case .failure(let error)? = failed {
            #expect(error == .status(500, retryAfter: nil))
        } else {
            Issue.record("a 500 probe: \(String(describing: failed))")
        }
        #expect(seconds < 30)
        let (gone, _) = probe("missing.bin")
        if case .failure(let error)? = gone { #expect(error == .status(404, retryAfter: nil)) } else {
            Issue.record("404 probe: \(String(describing: gone))")
        }
    }
}

/// IMF-fixdate, as `Retry-After` and `Last-Modified` write it.
enum HTTPDateFormat {
    static func string(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}
