import FaultServer
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The fault server checked against a real client: each behaviour the RangeFS tests rely
/// on, driven with the `curl` command. Needs no FUSE and no nginx.
@Suite("FaultServerSelfTests")
struct FaultServerSelfTests {
    let server: FaultServer
    let data = FaultServerSelfTests.bytes(count: 10_000)

    init() throws {
        server = try FaultServer()
        server.publish("/data.bin", bytes: data)
    }

    // MARK: Plain HTTP semantics

    @Test("HEAD: size, Accept-Ranges, strong ETag, IMF-fixdate Last-Modified, no body")
    func headReportsSizeAndValidators() throws {
        let reply = curl(["-I", server.url("data.bin").absoluteString])
        #expect(reply.exitCode == 0, "\(reply)")
        #expect(reply.status == 200)
        #expect(reply.header("Content-Length") == "10000")
        #expect(reply.header("Accept-Ranges") == "bytes")
        let etag = try #require(reply.header("ETag"))
        #expect(etag.hasPrefix("\"") && etag.hasSuffix("\"") && etag.count > 2, "ETag \(etag)")
        #expect(etag == server.etag(of: "data.bin"))
        let date = try #require(reply.header("Last-Modified"))
        #expect(date.wholeMatch(of: /[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT/) != nil, "\(date)")
        #expect(reply.body.isEmpty)
        #expect(server.requests.map(\.method) == ["HEAD"])
    }

    @Test("weak ETag, omitted validators, HEAD refused with 405, ranges unsupported")
    func pathOptionsChangeHeaders() {
        server.publish("weak.bin", bytes: data, weakETag: true)
        let weak = curl(["-I", server.url("weak.bin").absoluteString])
        #expect(weak.header("ETag")?.hasPrefix("W/\"") == true, "\(weak)")

        server.configure("data.bin", PathOptions(rangesSupported: false, headAllowed: false,
                                                 sendETag: false, sendLastModified: false))
        let head = curl(["-I", server.url("data.bin").absoluteString])
        #expect(head.status == 405, "\(head)")
        #expect(head.header("Allow") == "GET")
        let get = curl(["-i", "-r", "10-19", server.url("data.bin").absoluteString])
        #expect(get.status == 200, "\(get)")
        #expect(get.body == data)
        #expect(get.header("Accept-Ranges") == nil && get.header("ETag") == nil && get.header("Last-Modified") == nil,
                "\(get.headers)")
    }

    @Test("GET with a single Range: 206, exact Content-Range and bytes; without Range: 200 and all bytes")
    func rangeRequests() {
        let url = server.url("data.bin").absoluteString
        let cases: [(range: String, first: Int, last: Int)] = [
            ("bytes=100-199", 100, 199), ("bytes=9990-", 9990, 9999), ("bytes=-10", 9990, 9999),
            ("bytes=0-0", 0, 0), ("bytes=9995-20000", 9995, 9999), ("bytes=-20000", 0, 9999),
        ]
        for c in cases {
            let reply = curl(["-i", "-H", "Range: \(c.range)", url])
            #expect(reply.status == 206, "\(c.range): \(reply)")
            #expect(reply.header("Content-Range") == "bytes \(c.first)-\(c.last)/10000", "\(c.range)")
            #expect(reply.header("Content-Length") == "\(c.last - c.first + 1)", "\(c.range)")
            #expect(reply.body == Array(data[c.first...c.last]), "\(c.range): wrong bytes")
        }
        let whole = curl(["-i", url])
        #expect(whole.status == 200 && whole.body == data && whole.header("Content-Range") == nil, "\(whole)")
        // Several ranges, or nonsense, are ignored: the whole body.
        for ignored in ["bytes=0-1,5-6", "bytes=5-1", "items=0-1"] {
            let reply = curl(["-i", "-H", "Range: \(ignored)", url])
            #expect(reply.status == 200 && reply.body == data, "\(ignored): \(reply)")
        }
    }

    @Test("an unsatisfiable range gets 416 with Content-Range: bytes */total")
    func unsatisfiableRange() {
        let reply = curl(["-i", "-H", "Range: bytes=10000-", server.url("data.bin").absoluteString])
        #expect(reply.status == 416, "\(reply)")
        #expect(reply.header("Content-Range") == "bytes */10000")
        #expect(reply.header("Content-Length") == "0")
        server.publish("empty.bin", bytes: [])
        let empty = curl(["-i", "-H", "Range: bytes=0-", server.url("empty.bin").absoluteString])
        #expect(empty.status == 416 && empty.header("Content-Range") == "bytes */0", "\(empty)")
    }

    @Test("unknown and removed paths get 404, or the configured 410")
    func missingFiles() {
        #expect(curl(["-i", server.url("nothing-here").absoluteString]).status == 404)
        server.remove("data.bin")
        let removed = curl(["-i", server.url("data.bin").absoluteString])
        #expect(removed.status == 404 && removed.header("Content-Length") != nil, "\(removed)")
        server.configure("data.bin", PathOptions(goneStatus: 410))
        #expect(curl(["-i", server.url("data.bin").absoluteString]).status == 410)
        #expect(curl(["-I", server.url("data.bin").absoluteString]).status == 410)
    }

    @Test("If-Range: a matching strong ETag or Last-Modified keeps the range; anything else gets 200 and the whole body")
    func ifRange() throws {
        let url = server.url("data.bin").absoluteString
        let etag = try #require(server.etag(of: "data.bin"))
        let date = try #require(server.lastModified(of: "data.bin"))
        let range = ["-H", "Range: bytes=100-199"]

        let byTag = curl(["-i"] + range + ["-H", "If-Range: \(etag)", url])
        #expect(byTag.status == 206 && byTag.body == Array(data[100...199]), "\(byTag)")
        let byDate = curl(["-i"] + range + ["-H", "If-Range: \(date)", url])
        #expect(byDate.status == 206, "\(byDate)")
        let otherTag = curl(["-i"] + range + ["-H", "If-Range: \"something-else\"", url])
        #expect(otherTag.status == 200 && otherTag.body == data, "\(otherTag)")
        let otherDate = curl(["-i"] + range + ["-H", "If-Range: Thu, 01 Jan 1970 00:00:00 GMT", url])
        #expect(otherDate.status == 200, "\(otherDate)")

        // A weak ETag never matches (RFC 9110 §13.1.5), not even itself.
        server.publish("weak.bin", bytes: data, etag: "v1", weakETag: true)
        let weakTag = try #require(server.etag(of: "weak.bin"))
        #expect(weakTag == "W/\"v1\"")
        let weak = curl(["-i"] + range + ["-H", "If-Range: \(weakTag)", server.url("weak.bin").absoluteString])
        #expect(weak.status == 200 && weak.body == data, "\(weak)")

        // Republishing changes both validators, even within the same second.
        server.publish("data.bin", bytes: Array(data.reversed()))
        #expect(server.etag(of: "data.bin") != etag)
        #expect(server.lastModified(of: "data.bin") != date)
        for old in [etag, date] {
            let stale = curl(["-i"] + range + ["-H", "If-Range: \(old)", url])
            #expect(stale.status == 200 && stale.body == Array(data.reversed()), "If-Range \(old): \(stale)")
        }
    }

    // MARK: Faults

    @Test("dropConnection: Content-Length promises everything, N bytes arrive, curl exits 18")
    func dropConnection() {
        server.inject(.dropConnection(afterBodyBytes: 1234))
        let reply = curl(["-i", server.url("data.bin").absoluteString])
        #expect(reply.exitCode == 18, "\(reply)")
        #expect(reply.header("Content-Length") == "10000")
        #expect(reply.header("Connection") == "close")
        #expect(reply.body == Array(data.prefix(1234)))
        server.waitUntilQuiet()
        let logged = server.requests
        #expect(logged.count == 1)
        #expect(logged.first?.fault == .dropConnection(afterBodyBytes: 1234))
        #expect(logged.first?.bodyBytesSent == 1234)
        #expect(logged.first?.status == 200)
        // The fault was used up: the next request is answered normally.
        #expect(curl(["-i", server.url("data.bin").absoluteString]).body == data)
    }

    @Test("shortBody: a few bytes missing from a ranged body, curl exits 18")
    func shortBody() {
        server.inject(.shortBody(missingBytes: 10))
        let reply = curl(["-i", "-r", "0-99", server.url("data.bin").absoluteString])
        #expect(reply.exitCode == 18, "\(reply)")
        #expect(reply.status == 206 && reply.body == Array(data.prefix(90)), "\(reply)")
    }

    @Test("stall: headers and N bytes, then silence: curl --max-time gives up with 28")
    func stall() {
        server.inject(.stall(afterBodyBytes: 100, for: .seconds(30)))
        let reply = curl(["-i", "--max-time", "1", server.url("data.bin").absoluteString])
        #expect(reply.exitCode == 28, "\(reply)")
        #expect(reply.seconds < 10, "took \(reply.seconds) s")
        #expect(reply.status == 200 && reply.body == Array(data.prefix(100)), "\(reply)")
        let logged = server.requests.first
        #expect(logged?.finished == false, "the stalled response is still open: \(String(describing: logged))")
        #expect(logged?.bodyBytesSent == 100)
    }

    @Test("stallBeforeHeaders: silence first, then a normal answer")
    func stallBeforeHeaders() {
        server.inject(.stallBeforeHeaders(for: .seconds(30)))
        let impatient = curl(["-i", "--max-time", "1", server.url("data.bin").absoluteString])
        #expect(impatient.exitCode == 28 && impatient.result.stdoutData.isEmpty, "\(impatient)")
        let stalled = server.requests.first
        #expect(stalled?.finished == false && stalled?.fault == .stallBeforeHeaders(for: .seconds(30)),
                "logged while it stalls: \(String(describing: stalled))")

        server.inject(.stallBeforeHeaders(for: .milliseconds(400)))
        let patient = curl(["-i", server.url("data.bin").absoluteString])
        #expect(patient.exitCode == 0 && patient.body == data, "\(patient)")
        #expect(patient.seconds >= 0.35, "answered after \(patient.seconds) s")
    }

    @Test("status faults: 503 with Retry-After, 429, 500, 410, with a body and Content-Length")
    func statusFaults() {
        server.inject(.status(503, retryAfter: "2"))
        let busy = curl(["-i", server.url("data.bin").absoluteString])
        #expect(busy.status == 503 && busy.header("Retry-After") == "2", "\(busy)")
        #expect(busy.header("Content-Length") == "\(busy.body.count)" && !busy.body.isEmpty)
        for code in [429, 500, 410] {
            server.inject(.status(code))
            let reply = curl(["-f", "-i", server.url("data.bin").absoluteString])
            #expect(reply.exitCode == 22 && reply.status == code && reply.header("Retry-After") == nil, "\(reply)")
        }
        #expect(server.requests.map(\.status) == [503, 429, 500, 410])
    }

    @Test("a fault queued for a range's first byte meets only requests from that byte")
    func faultForRangeStart() {
        let url = server.url("data.bin").absoluteString
        server.inject(.status(503), for: "data.bin", rangeFrom: 100)
        let whole = curl(["-i", url])
        let other = curl(["-i", "-r", "0-99", url])
        let faulted = curl(["-i", "-r", "100-199", url])
        let after = curl(["-i", "-r", "100-199", url])
        let statuses: [Int?] = [whole.status, other.status, faulted.status, after.status]
        #expect(statuses == [200, 206, 503, 206],
                "\(server.requests)")
    }

    @Test("ignoreRange: 200 with the whole body although a range was asked for")
    func ignoreRange() {
        server.inject(.ignoreRange)
        let reply = curl(["-i", "-r", "100-199", server.url("data.bin").absoluteString])
        #expect(reply.status == 200 && reply.body == data && reply.header("Content-Range") == nil, "\(reply)")
    }

    @Test("wrongContentRange and wrongTotal: 206 replies that do not match the request")
    func lyingRanges() {
        let url = server.url("data.bin").absoluteString
        server.inject(.wrongContentRange(offsetBy: 10))
        let shifted = curl(["-i", "-r", "100-199", url])
        #expect(shifted.status == 206, "\(shifted)")
        #expect(shifted.header("Content-Range") == "bytes 110-209/10000")
        #expect(shifted.body == Array(data[110...209]))

        server.inject(.wrongTotal(5000))
        let total = curl(["-i", "-r", "100-199", url])
        #expect(total.header("Content-Range") == "bytes 100-199/5000", "\(total)")
        #expect(total.body == Array(data[100...199]))
    }

    @Test("extraBytes: more body than Content-Length, then close")
    func extraBytes() throws {
        server.inject(.extraBytes(7))
        let reply = curl(["-i", "-v", "-r", "0-9", server.url("data.bin").absoluteString])
        #expect(reply.status == 206 && reply.header("Content-Length") == "10", "\(reply)")
        #expect(reply.body == Array(data.prefix(10)), "curl stops at Content-Length")
        server.waitUntilQuiet()
        #expect(server.requests.first?.bodyBytesSent == 17)

        // curl drops the excess (and reports it only when it arrives in a separate read),
        // so a raw read shows what was on the wire: 10 announced bytes, then 7 more.
        server.inject(.extraBytes(7))
        let raw = try Self.rawExchange(port: server.port,
                                       "GET /data.bin HTTP/1.1\r\nHost: x\r\nRange: bytes=9990-9999\r\n\r\n")
        let body = try #require(Self.bodyAfterHead(raw))
        #expect(body == Array(data.suffix(10)) + Array("XXXXXXX".utf8), "\(String(decoding: raw, as: UTF8.self))")
    }

    @Test("changeFileBefore: new bytes and validators before the answer, so an old If-Range gets 200")
    func changeFileBefore() throws {
        let oldTag = try #require(server.etag(of: "data.bin"))
        let newBytes = Self.bytes(count: 3000, seed: 7)
        server.inject(.changeFileBefore(bytes: newBytes))
        let reply = curl(["-i", "-r", "0-99", "-H", "If-Range: \(oldTag)", server.url("data.bin").absoluteString])
        #expect(reply.status == 200 && reply.body == newBytes, "\(reply)")
        let newTag = try #require(reply.header("ETag"))
        #expect(newTag != oldTag && newTag == server.etag(of: "data.bin"))
    }

    @Test("redirects: relative Location is followed, a loop ends with curl 47, ftp:// is refused")
    func redirects() {
        server.publish("target.bin", bytes: Array(data.prefix(50)))
        server.inject(.redirect(to: "/target.bin"), for: "data.bin")
        let followed = curl(["-i", "-L", server.url("data.bin").absoluteString])
        #expect(followed.exitCode == 0 && followed.body == Array(data.prefix(50)), "\(followed)")

        server.resetLog()
        server.inject(.redirect(to: "/data.bin", status: 301), times: 100, for: "data.bin")
        let loop = curl(["-i", "-L", "--max-redirs", "5", server.url("data.bin").absoluteString])
        #expect(loop.exitCode == 47, "\(loop)")
        #expect(server.requests.count == 6, "\(server.requests)")
        server.clearFaults()
        #expect(server.pendingFaults == 0)

        server.inject(.redirect(to: "ftp://127.0.0.1/data.bin"))
        let ftp = curl(["-i", "-L", "--proto-redir", "=http,https", server.url("data.bin").absoluteString])
        #expect(ftp.exitCode == 1, "\(ftp)")
        #expect(ftp.result.stderr.lowercased().contains("ftp"), "\(ftp.result.stderr)")
    }

    @Test("hugeHeader: an 8 KiB header line is delivered; one past curl's limit fails the transfer")
    func hugeHeader() {
        server.inject(.hugeHeader(bytes: 8 * 1024))
        let big = curl(["-i", server.url("data.bin").absoluteString])
        #expect(big.exitCode == 0 && big.body == data, "\(big)")
        #expect((big.header("X-Fault-Padding")?.count ?? 0) > 8000)

        server.inject(.hugeHeader(bytes: 300 * 1024))
        let huge = curl(["-i", server.url("data.bin").absoluteString])
        #expect(huge.exitCode != 0, "\(huge)")
    }

    @Test("malformedHeaders and closeBeforeResponse: curl reports a broken reply")
    func brokenReplies() {
        server.inject(.malformedHeaders)
        let garbage = curl(["-i", server.url("data.bin").absoluteString])
        #expect(garbage.exitCode == 8 || garbage.exitCode == 1, "weird server reply expected: \(garbage)")

        server.inject(.closeBeforeResponse)
        let empty = curl(["-i", server.url("data.bin").absoluteString])
        #expect(empty.exitCode == 52, "\(empty)")
        server.waitUntilQuiet()
        #expect(server.requests.map(\.status) == [0, 0])
    }

    @Test("faults apply in order, per path and method, `times` over")
    func faultQueueing() {
        server.publish("other.bin", bytes: data)
        server.inject(.status(500), times: 2, for: "data.bin", method: "GET")
        server.inject(.status(503), for: "other.bin")
        server.inject(.status(429))
        #expect(server.pendingFaults == 4)
        let url = server.url("data.bin").absoluteString
        #expect(curl(["-i", server.url("other.bin").absoluteString]).status == 503, "the other path's fault")
        #expect(curl(["-I", url]).status == 429, "HEAD is not a GET: the any-path fault applies")
        #expect(curl(["-i", url]).status == 500)
        #expect(curl(["-i", url]).status == 500)
        #expect(curl(["-i", url]).status == 200)
        #expect(server.pendingFaults == 0)
    }

    // MARK: Pacing

    @Test("bytesPerSecond paces the body; latency delays every response")
    func pacing() {
        server.configure("data.bin", PathOptions(bytesPerSecond: 20_000))
        let slow = curl(["-i", server.url("data.bin").absoluteString])
        #expect(slow.body == data, "\(slow)")
        #expect(slow.seconds >= 0.4 && slow.seconds < 5, "10000 bytes at 20000 B/s took \(slow.seconds) s")

        server.configure("data.bin", PathOptions(latency: .milliseconds(300)))
        let late = curl(["-I", server.url("data.bin").absoluteString])
        #expect(late.status == 200 && late.seconds >= 0.28, "HEAD took \(late.seconds) s")
    }

    // MARK: Log, connections, lifecycle

    @Test("the request log: method, path, Range, If-Range, headers, status, bytes, fault, connection")
    func requestLog() throws {
        let started = Date()
        _ = curl(["-i", "-r", "5-14", "-H", "If-Range: \"x\"", "-H", "X-Test: one",
                  server.url("data.bin").absoluteString + "?q=1"])
        server.inject(.status(500), for: "data.bin")
        _ = curl(["-I", server.url("data.bin").absoluteString])
        server.waitUntilQuiet()
        let log = server.requests
        try #require(log.count == 2, "\(log)")
        let get = log[0]
        #expect(get.method == "GET" && get.path == "/data.bin" && get.target == "/data.bin?q=1")
        #expect(get.range == "bytes=5-14" && get.ifRange == "\"x\"")
        #expect(get.header("x-test") == "one" && get.header("User-Agent")?.hasPrefix("curl/") == true)
        #expect(get.status == 200 && get.bodyBytesSent == 10_000 && get.fault == nil && get.finished)
        #expect(get.receivedAt >= started.addingTimeInterval(-1))
        let head = log[1]
        #expect(head.method == "HEAD" && head.status == 500 && head.fault == .status(500) && head.bodyBytesSent == 0)
        #expect(head.id > get.id && head.connection != get.connection, "two curl runs, two connections")
        #expect(server.requests(for: "data.bin").count == 2)
        server.resetLog()
        #expect(server.requests.isEmpty)
    }

    @Test("keep-alive: two URLs in one curl run share one connection; a fault's Connection: close ends it")
    func keepAlive() {
        let url = server.url("data.bin").absoluteString
        let reused = curl(["-v", "-o", "/dev/null", "-o", "/dev/null", url, url])
        #expect(reused.exitCode == 0, "\(reused)")
        #expect(reused.result.stderr.contains("Re-using existing connection"), "\(reused.result.stderr)")
        #expect(server.acceptedConnections == 1)
        #expect(Set(server.requests.map(\.connection)) == [1])

        server.inject(.extraBytes(1), for: "data.bin")
        let closed = curl(["-v", "-o", "/dev/null", "-o", "/dev/null", url, url])
        #expect(closed.exitCode == 0, "\(closed)")
        #expect(server.acceptedConnections == 3, "the faulted response closed its connection")
    }

    @Test("requests the server cannot parse get 400; a head over 64 KiB gets 431")
    func badRequests() {
        // Ten header lines of 7 KiB: 70 KiB in all.
        let big = (0..<10).flatMap { ["-H", "X-Big-\($0): " + String(repeating: "b", count: 7 * 1024)] }
        let tooLarge = curl(["-i"] + big + [server.url("data.bin").absoluteString])
        #expect(tooLarge.status == 431, "status \(tooLarge.status), curl exit \(tooLarge.exitCode)")
        let bad = curl(["-i", "-X", "GE T", server.url("data.bin").absoluteString])
        #expect(bad.status == 400, "\(bad)")
        let post = curl(["-i", "-d", "x=1", server.url("data.bin").absoluteString])
        #expect(post.status == 405 && post.header("Allow") == "GET, HEAD", "\(post)")
    }

    @Test("raw requests: two pipelined on one connection, bare LF line ends, garbage gets 400")
    func rawRequests() throws {
        let two = "GET /data.bin HTTP/1.1\r\nHost: x\r\nRange: bytes=0-4\r\n\r\n"
            + "HEAD /data.bin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        let text = String(decoding: try Self.rawExchange(port: server.port, two), as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 206 Partial Content\r\n"), "\(text)")
        #expect(text.contains("\r\n\r\n" + String(decoding: data.prefix(5), as: UTF8.self) + "HTTP/1.1 200 OK\r\n"))
        #expect(text.hasSuffix("Connection: close\r\n\r\n"), "HEAD: no body, then close")
        #expect(Set(server.requests.map(\.connection)).count == 1)

        let sloppy = try Self.rawExchange(port: server.port, "GET /data.bin HTTP/1.0\nRange: bytes=1-2\n\n")
        #expect(Self.bodyAfterHead(sloppy) == Array(data[1...2]), "\(String(decoding: sloppy, as: UTF8.self))")

        let garbage = try Self.rawExchange(port: server.port, "\u{1}\u{2} nonsense\r\n\r\n")
        #expect(String(decoding: garbage, as: UTF8.self).hasPrefix("HTTP/1.1 400 Bad Request\r\n"))
        server.waitUntilQuiet()
        #expect(server.requests.last?.status == 400 && server.requests.last?.method == "")
    }

    @Test("stop() ends a stalled response at once and releases the port")
    func stopReleasesPort() throws {
        let port = server.port
        server.inject(.stall(afterBodyBytes: 10, for: .seconds(60)))
        let client = try BackgroundCommand(["curl", "-sS", "--noproxy", "*", "-o", "/dev/null",
                                            server.url("data.bin").absoluteString])
        Poll.until(seconds: 10, every: 0.01) { server.requests.first?.bodyBytesSent == 10 }
        let clock = ContinuousClock()
        let stopped = clock.measure { #expect(server.stop()) }
        #expect(stopped < .seconds(2), "stop took \(stopped)")
        let stalled = client.wait(timeout: 10)
        #expect(stalled.status == 18, "the stalled transfer ended short: \(stalled)")
        #expect(server.stop(), "stop is idempotent")

        let refused = curl(["-i", "--max-time", "5", "http://127.0.0.1:\(port)/data.bin"])
        #expect(refused.exitCode == 7, "\(refused)")
        #expect(Self.canListen(on: port), "port \(port) is still taken")
    }

    @Test("dropping the last reference stops the server too")
    func deinitStops() throws {
        var other: FaultServer? = try FaultServer()
        let port = try #require(other?.port)
        other?.publish("x", bytes: [1, 2, 3])
        #expect(curl(["-i", "http://127.0.0.1:\(port)/x"]).body == [1, 2, 3])
        other = nil
        #expect(curl(["-i", "--max-time", "5", "http://127.0.0.1:\(port)/x"]).exitCode == 7)
    }
}

// MARK: - Helpers

extension FaultServerSelfTests {
    /// What curl printed (`-i`: headers, then body), split up; redirect heads skipped.
    struct CurlReply: CustomStringConvertible {
        let result: CommandResult
        var status = 0
        var headers: [HeaderField] = []
        var body: [UInt8] = []

        var exitCode: Int32 { result.timedOut ? -1 : result.status }
        var seconds: Double { result.seconds }
        func header(_ name: String) -> String? { headers.value(of: name) }

        init(_ result: CommandResult) {
            self.result = result
            var rest = [UInt8](result.stdoutData)
            // One head per response with -i / -I; with -L, the last one is the answer.
            while rest.starts(with: Array("HTTP/".utf8)), let end = FaultServerSelfTests.endOfHead(rest) {
                let lines = String(decoding: rest[..<end], as: UTF8.self).components(separatedBy: "\r\n")
                status = lines.first.flatMap { $0.split(separator: " ").dropFirst().first.flatMap { Int($0) } } ?? 0
                headers = lines.dropFirst().compactMap { line in
                    guard let colon = line.firstIndex(of: ":") else { return nil }
                    return HeaderField(String(line[..<colon]),
                                       line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
                }
                rest = Array(rest[(end + 4)...])
            }
            body = rest
        }

        var description: String {
            "status \(status), \(body.count) body bytes, headers \(headers)\n\(result)"
        }
    }

    /// Sends `request` on a new connection and returns everything read until the server
    /// closes (at most 10 s): what went over the wire, with nothing smoothed over by a client.
    static func rawExchange(port: Int, _ request: String) throws -> [UInt8] {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket: errno \(errno)") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw HarnessError("connect to port \(port): errno \(errno)") }
        let bytes = Array(request.utf8)
        guard send(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count else {
            throw HarnessError("send: errno \(errno)")
        }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = recv(fd, &chunk, chunk.count, 0)
            guard n > 0 else { break }   // EOF, or the 10 s receive timeout
            received += chunk[..<n]
        }
        return received
    }

    /// The bytes after the first CRLF CRLF.
    static func bodyAfterHead(_ bytes: [UInt8]) -> [UInt8]? {
        endOfHead(bytes).map { Array(bytes[($0 + 4)...]) }
    }

    /// Where the first CRLF CRLF starts.
    static func endOfHead(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        return (0...(bytes.count - 4)).first { i in
            bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10
        }
    }

    /// curl on loopback, never through a proxy from the environment, bounded in time.
    func curl(_ arguments: [String], timeout: Double = 30) -> CurlReply {
        CurlReply(Command.run(["curl", "-sS", "--noproxy", "*"] + arguments, timeout: timeout))
    }

    static func bytes(count: Int, seed: Int = 1) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: ($0 &* 31 &+ seed) ^ ($0 >> 8)) }
    }

    /// Whether a new listening socket can bind the port (TIME_WAIT tolerated, as by any server).
    static func canListen(on port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 && listen(fd, 1) == 0
            }
        }
    }
}
