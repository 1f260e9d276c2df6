import Foundation
import Logging
import Testing
@testable import RangeFSCore

/// The metrics' text exposition, the address option and the /metrics listener, without a mount.
@Suite("Metrics")
struct MetricsExpositionTests {
    @Test("each hook moves its own series in the exposition, by the amounts given")
    func hooksMoveTheirSeries() {
        let metrics = MountMetrics()
        metrics.fetched(100, at: 1000, readAheadFrom: 1060, background: false)
        metrics.fetched(50, at: 2000, readAheadFrom: nil, background: false)
        metrics.fetched(70, at: 0, readAheadFrom: nil, background: true)
        metrics.requestStarted()
        metrics.requestEnded(.range, status: 206, cancelled: false)
        metrics.requestStarted()
        metrics.requestEnded(.probe, status: 0, cancelled: false)
        metrics.requestStarted()
        metrics.requestEnded(.background, status: 503, cancelled: false)
        metrics.requestStarted()
        metrics.requestEnded(.readThrough, status: 206, cancelled: true)
        metrics.requestStarted()
        metrics.readAnswered(bytes: 4096, waited: false, after: .microseconds(30))
        metrics.readAnswered(bytes: 8192, waited: true, after: .milliseconds(40))
        metrics.retried()
        metrics.evicted()
        metrics.sourceMarkedBad()
        metrics.handOverRanOutOfTime()
        metrics.handOverRanOutOfTime()
        metrics.update(cachedBytes: 12345, files: [.partial: 2, .waitingForSpace: 1])

        let samples = metrics.samples()
        #expect(samples[#"rangefs_fetched_bytes_total{kind="foreground"}"#] == 110)
        #expect(samples[#"rangefs_fetched_bytes_total{kind="read_ahead"}"#] == 40)
        #expect(samples[#"rangefs_fetched_bytes_total{kind="background"}"#] == 70)
        #expect(samples[#"rangefs_http_requests_total{kind="range",status="2xx"}"#] == 1)
        #expect(samples[#"rangefs_http_requests_total{kind="probe",status="error"}"#] == 1)
        #expect(samples[#"rangefs_http_requests_total{kind="background",status="5xx"}"#] == 1)
        #expect(samples[#"rangefs_http_requests_total{kind="read_through",status="cancelled"}"#] == 1)
        #expect(samples[#"rangefs_http_requests_total{kind="read_through",status="2xx"}"#] == 0)
        #expect(samples["rangefs_http_transfers_in_flight"] == 1, "five started, four ended")
        #expect(samples[#"rangefs_read_bytes_total{from="cache"}"#] == 4096)
        #expect(samples[#"rangefs_read_bytes_total{from="network"}"#] == 8192)
        #expect(samples[#"rangefs_read_duration_seconds_count{answer="cached"}"#] == 1)
        #expect(samples[#"rangefs_read_duration_seconds_count{answer="waited"}"#] == 1)
        #expect(abs((samples[#"rangefs_read_duration_seconds_sum{answer="waited"}"#] ?? 0) - 0.04) < 1e-9)
        #expect(samples["rangefs_retries_total"] == 1)
        #expect(samples["rangefs_evictions_total"] == 1)
        #expect(samples["rangefs_sources_marked_bad_total"] == 1)
        #expect(samples["rangefs_hand_overs_out_of_time_total"] == 2 && metrics.handOversThatRanOutOfTime == 2)
        #expect(samples["rangefs_cached_bytes"] == 12345)
        #expect(samples[#"rangefs_files{state="partial"}"#] == 2)
        #expect(samples[#"rangefs_files{state="waiting_for_space"}"#] == 1)
        #expect(samples[#"rangefs_files{state="complete"}"#] == 0)

        let text = metrics.exposition()
        #expect(text.contains("# TYPE rangefs_fetched_bytes_total counter\n"))
        #expect(text.contains("# TYPE rangefs_read_duration_seconds histogram\n"))
        // A 40 ms wait lands in the 0.1 s bucket and not in the 25 ms one.
        #expect(text.contains(#"rangefs_read_duration_seconds_bucket{answer="waited",le="0.025"} 0"#), "\(text)")
        #expect(text.contains(#"rangefs_read_duration_seconds_bucket{answer="waited",le="0.1"} 1"#), "\(text)")
        #expect(!samples.keys.contains { $0.contains("_bucket") }, "status --json leaves the buckets out")
    }

    @Test("labels are fixed words: the series are the same set whatever was read from where")
    func labelsAreBounded() {
        let metrics = MountMetrics()
        let before = Set(metrics.samples().keys)
        for status in [200, 206, 301, 404, 416, 500, 0] {
            for kind in MountMetrics.RequestKind.allCases {
                metrics.requestStarted()
                metrics.requestEnded(kind, status: status, cancelled: false)
            }
        }
        metrics.fetched(1, at: 0, readAheadFrom: 0, background: false)
        metrics.readAnswered(bytes: 1, waited: true, after: .seconds(30))
        #expect(Set(metrics.samples().keys) == before)
        #expect(before.count == 5 * 7 + 3 + 2 + 2 * 2 + 1 + 4 + 1 + 5, "\(before.sorted())")
    }

    @Test("metrics addresses: HOST:PORT, [IPv6]:PORT, a bare port on loopback; names and bad ports refused")
    func addresses() throws {
        #expect(try MetricsAddress(parsing: "9464") == MetricsAddress(host: "127.0.0.1", port: 9464))
        #expect(try MetricsAddress(parsing: "localhost:9464") == MetricsAddress(host: "127.0.0.1", port: 9464))
        #expect(try MetricsAddress(parsing: "[::1]:0") == MetricsAddress(host: "::1", port: 0))
        #expect(try MetricsAddress(parsing: "[::1]:9464").description == "[::1]:9464")
        #expect(try MetricsAddress(parsing: "127.0.0.2:1").isLoopback)
        #expect(try !MetricsAddress(parsing: "0.0.0.0:9464").isLoopback)
        #expect(try !MetricsAddress(parsing: "[::]:9464").isLoopback)
        for bad in ["example.org:9464", "::1:9464", "127.0.0.1:65536", "127.0.0.1:", "127.0.0.1:http", "[::1]9464", ""] {
            #expect(throws: MetricsAddressError.self, "\(bad)") { try MetricsAddress(parsing: bad) }
        }
    }

    @Test("the HTTP answers: GET /metrics, a query ignored; other paths, methods and garbage refused")
    func replies() {
        let body = { "rangefs_retries_total 0\n" }
        let ok = MetricsHTTP.reply(to: "GET /metrics?x=1 HTTP/1.1\r\nHost: a", body: body)
        #expect(ok.status == "200 OK" && ok.body == body() && ok.contentType.hasPrefix("text/plain; version=0.0.4"))
        #expect(MetricsHTTP.reply(to: "GET / HTTP/1.1", body: body).status.hasPrefix("404"))
        #expect(MetricsHTTP.reply(to: "POST /metrics HTTP/1.1", body: body).status.hasPrefix("405"))
        #expect(MetricsHTTP.reply(to: "hello", body: body).status.hasPrefix("400"))
        #expect(MetricsHTTP.reply(to: "GET /metrics SPDY/3", body: body).status.hasPrefix("400"))
        let bytes = String(decoding: ok.bytes, as: UTF8.self)
        #expect(bytes.hasPrefix("HTTP/1.1 200 OK\r\n") && bytes.contains("Content-Length: \(body().utf8.count)\r\n")
                && bytes.hasSuffix("\r\n\r\n" + body()))
    }

    @Test("the listener serves /metrics on loopback, refuses an oversized request, drops a silent client, and stops")
    func listener() throws {
        let listener = try MetricsListener(address: MetricsAddress(host: "127.0.0.1", port: 0),
                                           logger: Logger(label: "test")) { "rangefs_retries_total 7\n" }
        defer { listener.stop() }
        #expect(listener.address.port != 0)

        // A client that sends nothing holds the listener at most `clientTimeout`.
        let silent = try LoopbackClient(port: listener.address.port)
        defer { silent.close() }

        let answer = try LoopbackClient.exchange(port: listener.address.port, Array("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n") && answer.hasSuffix("\r\n\r\nrangefs_retries_total 7\n"), "\(answer)")

        let huge = Array("GET /metrics HTTP/1.1\r\nX: ".utf8) + [UInt8](repeating: UInt8(ascii: "a"), count: 3 * MetricsListener.maxRequestBytes)
        let refused = try LoopbackClient.exchange(port: listener.address.port, huge)
        #expect(refused.hasPrefix("HTTP/1.1 431 "), "\(refused)")

        let started = ContinuousClock.now
        listener.stop()
        #expect(ContinuousClock.now - started < .seconds(2), "stop returns within a poll interval")
        #expect(throws: (any Error).self) { try LoopbackClient.exchange(port: listener.address.port, Array("GET /metrics HTTP/1.1\r\n\r\n".utf8)) }
    }
}

/// A TCP client on 127.0.0.1 with a 10 s limit on every wait.
private struct LoopbackClient {
    struct Failure: Error { var what: String }
    let descriptor: Int32

    init(port: UInt16) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var limit = timeval(tv_sec: 10, tv_usec: 0)
        _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            _ = Glibc.close(descriptor)
            throw Failure(what: "connect: errno \(errno)")
        }
    }

    func close() { _ = Glibc.close(descriptor) }

    /// Sends `request` (as much as the peer takes) and reads the answer until the peer closes.
    static func exchange(port: UInt16, _ request: [UInt8]) throws -> String {
        let client = try LoopbackClient(port: port)
        defer { client.close() }
        _ = request.withUnsafeBytes { send(client.descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var answer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while answer.count < 1 << 20 {
            let count = chunk.withUnsafeMutableBytes { recv(client.descriptor, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            answer += chunk[..<count]
        }
        return String(decoding: answer, as: UTF8.self)
    }
}
