import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `--metrics-address`: the Prometheus text format at /metrics, scraped with curl, moves by
/// what real reads through the mount did; `rangefs status --json` shows the same counters.
extension RangeFSIntegrationTests {
    @Test("/metrics counts the bytes fetched, the reads answered from the network and then from the cache, and the requests")
    func metricsCountReads() throws {
        let port = try FreeLoopbackPort.find()
        let entry = ManifestLine(path: "big.bin", url: fx.nginx.url("big.bin"))
        let logMark = fx.nginx.accessLog.mark()
        let mount = try fx.mount([entry], options: Fixture.readsOnly + ["--no-passthrough", "--metrics-address", "127.0.0.1:\(port)"])
        let scraper = MetricsScraper(port: port)
        let length = 1 << 20

        let before = try scraper.scrape()
        #expect(before["rangefs_fetched_bytes_total{kind=\"foreground\"}"] == 0, "nothing read yet")

        // First read: its bytes come from nginx.
        let first = Check.ddRead(mount.path("big.bin"), offset: 0, length: length)
        Check.succeeded(first, "first read", mount: mount)
        #expect(first.stdoutData.count == length)
        // Its read-ahead may still be arriving: the counts are taken once no transfer runs.
        let (afterFirst, settled) = try scraper.scrape(timeout: 30) { $0["rangefs_http_transfers_in_flight"] == 0 }
        #expect(settled, "the read's transfers ended\n\(afterFirst)")
        let fetched = afterFirst.sum(prefix: "rangefs_fetched_bytes_total{")
        let fromNetwork = afterFirst["rangefs_read_bytes_total{from=\"network\"}"] ?? 0
        let fromCache = afterFirst["rangefs_read_bytes_total{from=\"cache\"}"] ?? 0
        #expect(fromNetwork > 0, "the first read waited for the network\n\(afterFirst)")
        #expect(fromNetwork + fromCache >= Double(length), "every byte read was counted\n\(afterFirst)")
        #expect(fetched >= fromNetwork + fromCache, "bytes fetched cover the bytes read\n\(afterFirst)")
        #expect((afterFirst["rangefs_http_requests_total{kind=\"probe\",status=\"2xx\"}"] ?? 0) >= 1, "\(afterFirst)")
        #expect((afterFirst["rangefs_http_requests_total{kind=\"range\",status=\"2xx\"}"] ?? 0) >= 1, "\(afterFirst)")
        #expect((afterFirst["rangefs_read_duration_seconds_count{answer=\"waited\"}"] ?? 0) >= 1, "\(afterFirst)")

        // The same bytes again, past the page cache: every byte is a hit, nothing is fetched.
        let again = Command.run(["dd", "if=\(mount.path("big.bin"))", "iflag=direct", "bs=65536", "count=\(length / 65536)",
                                 "status=none"], timeout: 60)
        Check.succeeded(again, "re-read with O_DIRECT", mount: mount)
        // Its read-ahead may go on where the first read's stopped (at most 7 requests of a file
        // run at once): the counts are taken once no transfer runs.
        let (afterAgain, ended) = try scraper.scrape(timeout: 30) { $0["rangefs_http_transfers_in_flight"] == 0 }
        #expect(ended, "the re-read's transfers ended\n\(afterAgain)")
        let cacheGain = (afterAgain["rangefs_read_bytes_total{from=\"cache\"}"] ?? 0) - fromCache
        #expect(cacheGain >= Double(length), "the re-read was answered from the cache\n\(afterAgain)")
        #expect(afterAgain["rangefs_read_bytes_total{from=\"network\"}"] == fromNetwork, "the re-read waited for nothing")
        fx.nginx.accessLog.waitUntilQuiet()
        let served = fx.nginx.accessLog.entries(for: "/big.bin", since: logMark).compactMap { $0.servedRange(fileSize: fx.data.file("big.bin").size) }
        #expect(ByteRanges.overlaps(served).isEmpty, "the re-read fetched cached bytes again: \(served)")
        #expect((afterAgain["rangefs_read_duration_seconds_count{answer=\"cached\"}"] ?? 0) >= 1, "\(afterAgain)")
        #expect(afterAgain["rangefs_http_transfers_in_flight"] == 0, "no transfer is left running\n\(afterAgain)")
        #expect((afterAgain["rangefs_cached_bytes"] ?? 0) >= Double(length), "\(afterAgain)")
        #expect(afterAgain["rangefs_files{state=\"partial\"}"] == 1, "\(afterAgain)")

        // `status --json` shows the same counters.
        let counters = try mount.metricsCounters()
        #expect(counters["rangefs_read_bytes_total{from=\"cache\"}"] == afterAgain["rangefs_read_bytes_total{from=\"cache\"}"],
                "status --json: \(counters)")

        // Only GET /metrics is served.
        let other = Command.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10",
                                 "http://127.0.0.1:\(port)/other"], timeout: 20)
        #expect(other.stdout == "404", "\(other)")
    }

    @Test("--metrics-address refuses an address that is not HOST:PORT, and a taken port (-o metrics_address=) fails the mount")
    func metricsAddressIsChecked() throws {
        let entry = ManifestLine(path: "one.bin", url: fx.nginx.url("one.bin"))
        let bad = try fx.mount([entry], options: ["--metrics-address", "example.org:9464"], mount: false)
        let refused = bad.tryMount()
        #expect(!refused.succeeded && refused.stderr.contains("--metrics-address"), "\(refused)")

        let taken = try TakenLoopbackPort()
        defer { taken.close() }
        // Given as -o, as fstab does: it reaches the mount, which cannot listen there.
        let busy = try fx.mount([entry], options: ["-o", "metrics_address=127.0.0.1:\(taken.port)"], mount: false)
        let failed = busy.tryMount()
        #expect(!failed.succeeded && failed.stderr.contains("cannot listen"), "\(failed)\n\(busy.logTail())")
    }
}

extension Mount {
    /// The `metrics` object of `rangefs status --json`: samples by series.
    func metricsCounters() throws -> [String: Double] {
        let r = rangefs("status", ["--json"])
        guard r.succeeded,
              let json = try JSONSerialization.jsonObject(with: r.stdoutData) as? [String: Any],
              let metrics = json["metrics"] as? [String: Double] else {
            throw HarnessError("rangefs status --json gave no metrics:\n\(r)")
        }
        return metrics
    }

    /// Waits until no HTTP transfer of the mount runs (a read's read-ahead goes out in requests
    /// of its own, which may end after the read); false if some still ran after `seconds`.
    func transfersEnded(within seconds: Double = 10) -> Bool {
        Poll.until(seconds: seconds, every: 0.05) { (try? metricsCounters())?["rangefs_http_transfers_in_flight"] == 0 }
    }
}

/// The samples of one scrape, by series.
struct MetricsScrape: CustomStringConvertible {
    let samples: [String: Double]
    let text: String

    subscript(series: String) -> Double? { samples[series] }

    func sum(prefix: String) -> Double {
        samples.filter { $0.key.hasPrefix(prefix) }.values.reduce(0, +)
    }

    var description: String { text }
}

struct MetricsScraper {
    let port: UInt16

    /// GET /metrics with curl (bounded), parsed.
    func scrape() throws -> MetricsScrape {
        let r = Command.run(["curl", "-sS", "--fail", "--max-time", "10", "http://127.0.0.1:\(port)/metrics"], timeout: 20)
        guard r.succeeded else { throw HarnessError("scraping /metrics failed:\n\(r)") }
        var samples: [String: Double] = [:]
        for line in r.stdout.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            samples[String(line[..<space])] = value
        }
        return MetricsScrape(samples: samples, text: r.stdout)
    }

    /// Scrapes every 0.1 s until `condition` holds or `timeout` seconds pass; returns the last
    /// scrape and whether the condition held.
    func scrape(timeout: Double, until condition: (MetricsScrape) -> Bool) throws -> (MetricsScrape, Bool) {
        var last = try scrape()
        let held = try Poll.until(seconds: timeout, every: 0.1) {
            if condition(last) { return true }
            last = try scrape()
            return condition(last)
        }
        return (last, held)
    }
}

/// A loopback TCP port that is held open, so a mount asked to listen there must fail.
struct TakenLoopbackPort {
    let descriptor: Int32
    let port: UInt16

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard descriptor >= 0, bound == 0, listen(descriptor, 1) == 0 else { throw HarnessError("cannot bind a loopback port") }
        var local = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        self.descriptor = descriptor
        port = UInt16(bigEndian: local.sin_port)
    }

    func close() { _ = Glibc.close(descriptor) }
}

enum FreeLoopbackPort {
    /// A port the kernel just handed out and that is free again (the usual small race with
    /// other programs taking it meanwhile is acceptable on a test machine).
    static func find() throws -> UInt16 {
        let taken = try TakenLoopbackPort()
        taken.close()
        return taken.port
    }
}
