import FaultServer
import Foundation
import RangeFSCore
import Testing

/// A misbehaving server (the `FaultServer`) behind a real mount: every read either returns
/// the right bytes or fails with EIO in bounded time. Mounted with `--prefetch none`, so
/// only reads make requests and each fault hits the request a read caused.
extension RangeFSIntegrationTests {
    static let faultFileSize = 4 << 20

    // MARK: Retries

    @Test("fault: a connection dropped mid-body is retried from where the body stopped; the bytes are right")
    func faultDropMidBodyResumes() throws {
        let server = try FaultServer()
        let data = RandomBytes.make(count: Self.faultFileSize, seed: 0xD0)
        server.publish("drop.bin", bytes: data)
        let mount = try fx.mount(server: server, names: ["drop.bin"])
        // Within the first request (the smallest size, 64 KiB, while the server's speed is unknown).
        let dropAfter = 40_000
        server.inject(.dropConnection(afterBodyBytes: dropAfter), for: "drop.bin", method: "GET")

        let out = Reading.whole(mount.path("drop.bin"))
        #expect(out.succeeded && out.bytes == Data(data), "cat after a dropped connection: \(out)\(Check.daemonLog(mount))")
        server.waitUntilQuiet()
        let gets = server.gets("drop.bin")
        let faulted = try #require(gets.first { $0.fault != nil }, "the fault was never used: \(gets)")
        let asked = try #require(faulted.requestedRange(size: data.count), "the faulted GET had no single Range: \(faulted)")
        let retries = gets.filter { $0.id > faulted.id }.compactMap { $0.requestedRange(size: data.count) }
            .filter { $0.upperBound == asked.upperBound }
        let retry = try #require(retries.first, "no retry of \(asked) after the drop:\n\(gets.map(\.description).joined(separator: "\n"))")
        #expect(retry.lowerBound > asked.lowerBound,
                "the retry asked for \(retry) again from the start of \(asked) instead of resuming")
        #expect(retry.lowerBound <= asked.lowerBound + dropAfter,
                "the retry \(retry) skips bytes the dropped reply never delivered (it stopped at \(asked.lowerBound + dropAfter))")
        print("dropped reply for \(asked) after \(dropAfter) bytes; retry asked for \(retry)")
    }

    @Test("fault: 503 with Retry-After: 1 twice, then success: right bytes, each retry at least ~1 s later")
    func faultRetryAfterHonoured() throws {
        let server = try FaultServer()
        let data = RandomBytes.make(count: Self.faultFileSize, seed: 0x503)
        server.publish("busy.bin", bytes: data)
        // 1 MiB blocks: the read is one block, one request from byte 0. Both 503s meet that
        // request and its retry, not a read-ahead request that may reach the server first.
        let mount = try fx.mount(server: server, names: ["busy.bin"], options: Fixture.readsOnly + ["--block-size", "1M"])
        server.inject(.status(503, retryAfter: "1"), times: 2, for: "busy.bin", method: "GET", rangeFrom: 0)

        let out = Reading.range(mount.path("busy.bin"), offset: 0, length: 65536)
        #expect(out.succeeded && out.bytes == Data(data[0..<65536]), "read through two 503s: \(out)\(Check.daemonLog(mount))")
        #expect(out.result.seconds >= 1.8, "the read ignored Retry-After: it took \(out.result.seconds) s for two 503s")
        #expect(out.result.seconds < 30)
        server.waitUntilQuiet()
        let gets = server.gets("busy.bin")
        let fromZero = gets.filter { $0.requestedRange(size: data.count)?.lowerBound == 0 }
        #expect(fromZero.map(\.status).prefix(3) == [503, 503, 206],
                "the read's request, twice 503, then its retry answered: \(gets.map(\.description).joined(separator: "\n"))")
        for (reply, next) in zip(fromZero, fromZero.dropFirst()) where reply.status == 503 {
            let gap = next.receivedAt.timeIntervalSince(reply.receivedAt)
            #expect(gap >= 0.9, "retry \(next) came \(gap) s after the 503 asking for 1 s")
            print("503 with Retry-After: 1 → retry after \(String(format: "%.2f", gap)) s")
        }
        let counters = try mount.metricsCounters()
        #expect(counters[#"rangefs_http_requests_total{kind="range",status="5xx"}"#] == 2, "the metrics count both 503s: \(counters)")
        #expect(counters["rangefs_retries_total"] == 2, "the metrics count both retries: \(counters)")
    }

    @Test("fault: 429 Too Many Requests is retried; the bytes are right")
    func faultTooManyRequestsRetried() throws {
        let server = try FaultServer()
        let data = RandomBytes.make(count: Self.faultFileSize, seed: 0x429)
        server.publish("limited.bin", bytes: data)
        let mount = try fx.mount(server: server, names: ["limited.bin"])
        server.inject(.status(429), for: "limited.bin", method: "GET")

        let offset = 1 << 20
        let out = Reading.range(mount.path("limited.bin"), offset: offset, length: 100_000)
        #expect(out.succeeded && out.bytes == Data(data[offset..<(offset + 100_000)]), "read after a 429: \(out)\(Check.daemonLog(mount))")
        server.waitUntilQuiet()
        let gets = server.gets("limited.bin")
        #expect(gets.first?.status == 429 && gets.count >= 2 && gets.dropFirst().contains { $0.status == 206 },
                "expected a 429 and then a successful retry: \(gets)")
    }

    @Test("fault: 500 on every attempt → EIO within 30 s, status 'failed' with 500, logged once per failure; a later read succeeds")
    func faultServerErrorBeyondBudget() throws {
        let server = try FaultServer()
        let data = RandomBytes.make(count: Self.faultFileSize, seed: 0x500)
        server.publish("broken.bin", bytes: data)
        let mount = try fx.mount(server: server, names: ["broken.bin"])
        let path = mount.path("broken.bin")
        let url = server.url("broken.bin").absoluteString
        server.inject(.status(500), times: 10_000, for: "broken.bin", method: "GET")

        let out = Reading.range(path, offset: 0, length: 65536, timeout: 90)
        #expect(out.failedWithEIO, "a read against a server that always answers 500 should fail with EIO: \(out)\(Check.daemonLog(mount))")
        #expect(out.bytes.isEmpty, "got \(out.bytes.count) bytes from a server answering 500")
        #expect(out.result.seconds < 30, "EIO took \(out.result.seconds) s")
        // The reader's read-ahead went out in requests of its own, which may still be spending
        // their attempts: the file shows as failed once they have.
        #expect(Poll.until(seconds: 30, every: 0.2) {
            mount.status().status?.files.first { $0.path == "broken.bin" }?.state == .failed
        }, "broken.bin never showed as failed: \(mount.statusText())")
        server.waitUntilQuiet()
        let failed = server.gets("broken.bin").filter { $0.status == 500 }
        // Retries of one request ask for the same bytes (no body byte arrived): one range = one failure.
        let failures = Set(failed.compactMap { $0.requestedRange(size: data.count) })
        #expect(!failures.isEmpty && failed.count > failures.count,
                "expected retries of each failing request: \(failed.count) requests for \(failures.count) ranges")
        print("500 forever: EIO after \(String(format: "%.2f", out.result.seconds)) s, \(failed.count) requests for \(failures.count) failed ranges")

        // The status and the attributes say why.
        let status = mount.status()
        if let file = status.status?.files.first(where: { $0.path == "broken.bin" }) {
            #expect(file.state == .failed, "status state \(file.state), expected failed: \(file)")
            #expect(file.failure?.contains("500") == true, "status failure should mention 500: \(file)")
        } else {
            Issue.record("rangefs status --json failed or lacks broken.bin: \(status.result)")
        }
        #expect(XAttr.get(path, "user.rangefs.state") == "failed", "xattrs: \(XAttr.all(path))")
        #expect(XAttr.get(path, "user.rangefs.error")?.contains("500") == true, "xattrs: \(XAttr.all(path))")
        let text = mount.statusText()
        #expect(text.stdout.contains("failed") && text.stdout.contains("500"), "rangefs status: \(text)")

        // The log names the URL and the status once per failed request, not once per attempt:
        // every failed range has its line, and there are no more lines than requests whose
        // attempts all failed (a range read again after its EIO is a request of its own).
        let finalLines = mount.log().split(separator: "\n").filter {
            $0.contains(url) && $0.contains("500") && !$0.contains("retry")
        }
        let lines = "\(finalLines.count) final error line(s) naming \(url) and 500:\n\(finalLines.joined(separator: "\n"))\(Check.daemonLog(mount))"
        for range in failures {
            #expect(finalLines.contains { $0.contains("bytes \(range.lowerBound)-\(range.upperBound - 1) failed") },
                    "no final line for bytes \(range): \(lines)")
        }
        #expect(finalLines.count * FetchPolicy().maxAttempts <= failed.count, "a line per attempt? \(failed.count) requests, \(lines)")

        // The failure is not remembered as data: once the server recovers, the same read works.
        server.clearFaults()
        let again = Reading.range(path, offset: 0, length: 65536)
        #expect(again.succeeded && again.bytes == Data(data[0..<65536]), "read after the server recovered: \(again)\(Check.daemonLog(mount))")
        let whole = Reading.whole(path)
        #expect(whole.succeeded && whole.bytes == Data(data), "whole file after recovery: \(whole)")
        #expect(XAttr.get(path, "user.rangefs.state") != "failed", "still failed after a good read: \(XAttr.all(path))")
    }

    @Test("fault: a stall that ends with a closed connection is retried; the bytes are right, in bounded time")
    func faultShortStallRetried() throws {
        let server = try FaultServer()
        let data = RandomBytes.make(count: Self.faultFileSize, seed: 0x57A11)
        server.publish("stall.bin", bytes: data)
        let mount = try fx.mount(server: server, names: ["stall.bin"])
        server.inject(.stall(afterBodyBytes: 10_000, for: .seconds(3)), for: "stall.bin", method: "GET")
        server.inject(.stallBeforeHeaders(for: .seconds(2)), for: "stall.bin", method: "GET")

        let out = Reading.whole(mount.path("stall.bin"), timeout: 90)
        #expect(out.succeeded && out.bytes == Data(data), "read through stalls: \(out)\(Check.daemonLog(mount))")
        #expect(out.result.seconds < 40, "took \(out.result.seconds) s")
        #expect(server.pendingFaults == 0, "not every stall was hit")
    }

    // MARK: Replies that lie

    @Test("fault: a lying reply once, then good ones: the file reads right (or, for a changed size, right or EIO, then right after reopening)",
          arguments: LyingReply.cases)
    func faultLyingReplyOnce(_ lie: LyingReply) throws {
        let server = try FaultServer()
        let data = RandomBytes.make(count: Self.faultFileSize, seed: 0x11E)
        server.publish("lie.bin", bytes: data)
        let mount = try fx.mount(server: server, names: ["lie.bin"])
        let path = mount.path("lie.bin")
        server.inject(lie.fault(data.count), for: "lie.bin", method: "GET")

        let first = Reading.whole(path)
        let firstOK = Reading.isPrefix(first.bytes, of: data)
        #expect(firstOK, "\(lie.name): wrong bytes at offset \(Reading.firstDifference(first.bytes, data) ?? -1): \(first)")
        if lie.changesVersion {
            // A reply naming another size is a changed file. Which of the read's first requests
            // meets it is the network's choice: the reader's own, while it holds no byte, and the
            // handle follows the file to its new version (the server, honest again, gives the
            // same bytes); one of its read-ahead's, once it holds bytes, and the read fails.
            #expect((first.succeeded && first.bytes == Data(data)) || first.failedWithEIO,
                    "\(lie.name): the whole file or EIO: \(first)\(Check.daemonLog(mount))")
            #expect(mount.logLines(containing: "changed").count >= 1, "\(lie.name): the change is not logged\(Check.daemonLog(mount))")
        } else {
            #expect(first.succeeded && first.bytes == Data(data), "\(lie.name): one bad reply should be retried: \(first)\(Check.daemonLog(mount))")
        }
        #expect(first.result.seconds < 30)
        #expect(server.pendingFaults == 0, "\(lie.name): the fault was not used")

        let again = Reading.whole(path)
        #expect(again.succeeded && again.bytes == Data(data), "\(lie.name): reading again: \(again)\(Check.daemonLog(mount))")
        #expect(mount.isMounted && !mount.daemonPids().isEmpty, "\(lie.name): the daemon is gone")
    }

    @Test("fault: a server that lies on every reply never yields a wrong byte: EIO within 30 s; right bytes once it stops",
          arguments: LyingReply.cases)
    func faultLyingReplyAlways(_ lie: LyingReply) throws {
        let server = try FaultServer()
        let data = RandomBytes.make(count: Self.faultFileSize, seed: 0x11E2)
        server.publish("liar.bin", bytes: data)
        let mount = try fx.mount(server: server, names: ["liar.bin"])
        let path = mount.path("liar.bin")
        server.inject(lie.fault(data.count), times: 10_000, for: "liar.bin", method: "GET")

        for offset in [0, 3 << 20] {
            let out = Reading.range(path, offset: offset, length: 200_000)
            #expect(Reading.isPrefix(out.bytes, of: data, at: offset),
                    "\(lie.name): WRONG BYTES at \(Reading.firstDifference(out.bytes, data, at: offset) ?? -1): \(out)")
            #expect(out.failedWithEIO || (out.succeeded && out.bytes.count == 200_000),
                    "\(lie.name): expected EIO or the right bytes at \(offset): \(out)\(Check.daemonLog(mount))")
            #expect(out.result.seconds < 30, "\(lie.name): took \(out.result.seconds) s")
            print("\(lie.name) always, read at \(offset): \(out)")
        }
        server.clearFaults()
        let whole = Reading.whole(path)
        #expect(whole.succeeded && whole.bytes == Data(data), "\(lie.name): after the lies stopped: \(whole)\(Check.daemonLog(mount))")
    }

    // MARK: Servers without ranges

    @Test("fault: a server that ignores Range: reads and cp get the right bytes through one stream, and the log says so")
    func faultServerIgnoresRanges() throws {
        let server = try FaultServer()
        let data = RandomBytes.make(count: Self.faultFileSize, seed: 0x200)
        let other = RandomBytes.make(count: 1 << 20, seed: 0x201)
        server.publish("whole.bin", bytes: data)
        server.publish("other.bin", bytes: other)
        server.configure("whole.bin", PathOptions(rangesSupported: false))
        server.configure("other.bin", PathOptions(rangesSupported: false))
        let mount = try fx.mount(server: server, names: ["whole.bin", "other.bin"])

        // A read in the middle first: a 200 body must never be taken as starting there.
        let offset = 1_500_000
        let middle = Reading.range(mount.path("whole.bin"), offset: offset, length: 70_000)
        #expect(middle.succeeded && middle.bytes == Data(data[offset..<(offset + 70_000)]),
                "read in the middle from a server without ranges: \(middle)\(Check.daemonLog(mount))")
        let copy = fx.workDir.appendingPathComponent("whole-copy.bin")
        let cp = Command.run(["cp", mount.path("whole.bin"), copy.path], timeout: 90)
        Check.succeeded(cp, "cp from a server without ranges", mount: mount)
        #expect((try? Data(contentsOf: copy)) == Data(data), "cp copied wrong bytes")
        let second = Reading.whole(mount.path("other.bin"))
        #expect(second.succeeded && second.bytes == Data(other), "the second file of that server: \(second)")

        let switched = mount.logLines(containing: "ignores ranges")
        #expect(!switched.isEmpty, "the log does not say the server ignores ranges\(Check.daemonLog(mount))")
        server.waitUntilQuiet()
        let gets = server.requests.filter { $0.method == "GET" }
        let listing = gets.map(\.description).joined(separator: "\n") + Check.daemonLog(mount)
        // Each file streamed once; the range requests that discovered it are few (each asked
        // with If-Range, whose 200 proves nothing, then once without). One file does not
        // condemn its server: the second file finds out for itself (three would).
        for name in ["/whole.bin", "/other.bin"] {
            let streams = gets.filter { $0.path == name && $0.range == nil }
            #expect(streams.count == 1, "\(name) was streamed \(streams.count) times:\n\(listing)")
            #expect(gets.filter { $0.path == name && $0.range != nil }.count <= 4, "range requests after the switch:\n\(listing)")
            #expect(gets.contains { $0.path == name && $0.range != nil && $0.ifRange == nil },
                    "\(name) was streamed without a plain range request answered 200:\n\(listing)")
        }
        // A second range request that meets the same 200 is not a failure of the file.
        let failures = mount.logLines(containing: "whole.bin", "failed")
        #expect(failures.isEmpty, "an ignored Range was logged as a failure:\n\(failures.joined(separator: "\n"))")
        print("no ranges: \(gets.count) GETs; log: \(switched.first ?? "")")
    }

    @Test("fault: two readers at once at a server that ignores Range: both get their bytes from the one stream, neither gets EIO")
    func faultServerIgnoresRangesConcurrentReaders() throws {
        let server = try FaultServer()
        let size = 8 << 20
        let data = RandomBytes.make(count: size, seed: 0x202)
        server.publish("both.bin", bytes: data)
        // A round trip long enough that both range requests are out before the first 200 is back.
        server.configure("both.bin", PathOptions(rangesSupported: false, bytesPerSecond: 16 << 20, latency: .milliseconds(300)))
        let mount = try fx.mount(server: server, names: ["both.bin"])
        let path = mount.path("both.bin")
        _ = Command.run(["stat", path], timeout: 30)   // the size probe, out of the way

        let offsets = [5 << 20, 7 << 20]
        let readers = try offsets.map { offset in
            try BackgroundCommand(["dd", "if=\(path)", "iflag=direct,skip_bytes,count_bytes", "bs=65536",
                                   "skip=\(offset)", "count=100000", "status=none"])
        }
        for (offset, reader) in zip(offsets, readers) {
            let out = ReadOutcome(result: reader.wait(timeout: 90))
            #expect(out.succeeded && out.bytes == Data(data[offset..<(offset + 100_000)]),
                    "concurrent reader at \(offset): \(out)\(Check.daemonLog(mount))")
        }
        server.waitUntilQuiet()
        let gets = server.gets("both.bin")
        print("two readers, no ranges: \(gets.map(\.description).joined(separator: "; "))")
        #expect(gets.filter { $0.range == nil }.count == 1, "the file was streamed more than once: \(gets)")
        #expect(mount.logLines(containing: "both.bin", "failed").isEmpty, "a range request answered 200 was logged as a failure\(Check.daemonLog(mount))")
    }

    // MARK: Changed files

    @Test("fault: the file changes between requests: a new reader, given nothing of it yet, reads the new version; the change is logged once")
    func faultFileChangesBetweenRequests() throws {
        let server = try FaultServer()
        let v1 = RandomBytes.make(count: Self.faultFileSize, seed: 0xC1)
        let v2 = RandomBytes.make(count: Self.faultFileSize, seed: 0xC2)   // same size: only the validator tells
        server.publish("changing.bin", bytes: v1)
        let mount = try fx.mount(server: server, names: ["changing.bin"])
        let path = mount.path("changing.bin")
        let head = Reading.range(path, offset: 0, length: 65536)
        #expect(head.succeeded && head.bytes == Data(v1[0..<65536]), "first read: \(head)")
        // The change must meet the read below, not the first read's read-ahead.
        #expect(mount.transfersEnded(), "the first read's transfers never ended\(Check.daemonLog(mount))")

        server.inject(.changeFileBefore(bytes: v2), for: "changing.bin", method: "GET")
        let offset = 3 << 20
        let changed = Reading.range(path, offset: offset, length: 65536)
        // A new open that has read nothing: it has no old bytes to mix with the new ones.
        #expect(changed.succeeded && changed.bytes == Data(v2[offset..<(offset + 65536)]),
                "a new reader that meets a changed file reads the new version: \(changed)\(Check.daemonLog(mount))")
        server.waitUntilQuiet()
        let ifRanges = server.gets("changing.bin").compactMap(\.ifRange)
        #expect(!ifRanges.isEmpty, "no GET carried If-Range")

        let reopened = Reading.whole(path)
        #expect(reopened.succeeded && reopened.bytes == Data(v2), "after the change, reopening should give the new version: \(reopened)\(Check.daemonLog(mount))")
        let logged = mount.logLines(containing: "changed on the server")
        #expect(logged.count == 1, "the change should be logged once, got \(logged.count):\n\(logged.joined(separator: "\n"))\(Check.daemonLog(mount))")
    }

    @Test("fault: a change seen after a remount with a warm cache: a new reader gets the new version (the stale record is not reused)")
    func faultFileChangesAfterWarmRemount() throws {
        let server = try FaultServer()
        let v1 = RandomBytes.make(count: Self.faultFileSize, seed: 0xC3)
        let v2 = RandomBytes.make(count: Self.faultFileSize, seed: 0xC4)
        server.publish("warm.bin", bytes: v1)
        let cacheDir = try fx.makeCacheDir()
        let first = try fx.mount(server: server, names: ["warm.bin"], cacheDir: cacheDir)
        let head = Reading.range(first.path("warm.bin"), offset: 0, length: 65536)
        #expect(head.succeeded && head.bytes == Data(v1[0..<65536]), "first read: \(head)")
        Check.succeeded(first.unmount(), "unmount")

        server.publish("warm.bin", bytes: v2)
        let mount = try fx.mount(server: server, names: ["warm.bin"], cacheDir: cacheDir)
        let path = mount.path("warm.bin")
        let cached = Reading.range(path, offset: 0, length: 65536)
        // Block 0 was cached from v1 and nothing asked the server yet: v1 is right for now.
        #expect(cached.succeeded && cached.bytes == Data(v1[0..<65536]), "cached block after remount: \(cached)")
        let uncached = Reading.range(path, offset: 3 << 20, length: 65536)
        #expect(uncached.succeeded && uncached.bytes == Data(v2[(3 << 20)..<((3 << 20) + 65536)]),
                "a new reader's uncached read of a changed file reads the new version: \(uncached)\(Check.daemonLog(mount))")
        // Every later read gives the new version; none may give bytes of no version (zeros).
        for attempt in 1...3 {
            let reopened = Reading.whole(path)
            let ofV1 = Reading.isPrefix(reopened.bytes, of: v1), ofV2 = Reading.isPrefix(reopened.bytes, of: v2)
            let zeros = reopened.bytes.prefix(4096).allSatisfy { $0 == 0 }
            #expect(ofV1 || ofV2 || reopened.bytes.isEmpty,
                    "attempt \(attempt): WRONG BYTES after the change: \(reopened.bytes.count) bytes, \(zeros && !reopened.bytes.isEmpty ? "starting with zeros" : "not a prefix of either version")")
            #expect(reopened.succeeded && reopened.bytes == Data(v2),
                    "attempt \(attempt): reopening after the change should give the new version: \(reopened)\(Check.daemonLog(mount))")
        }
    }

    @Test("fault: the file changes while a reader holds it open: the reader gets EIO and only bytes of the old version; reopening gives the new one")
    func faultFileChangesUnderOpenReader() throws {
        let server = try FaultServer()
        let v1 = RandomBytes.make(count: Self.faultFileSize, seed: 0xC5)
        let v2 = RandomBytes.make(count: Self.faultFileSize, seed: 0xC6)
        server.publish("open.bin", bytes: v1)
        let mount = try fx.mount(server: server, names: ["open.bin"])
        let path = mount.path("open.bin")
        let flags = try Scratch.makeDir("flags")
        // One open file description: 256 KiB, a pause while the server changes the file, then the rest.
        let reader = try PausedReader(path, flags: flags)
        #expect(reader.waitForFirstPart(), "the reader did not get its first 256 KiB")
        server.publish("open.bin", bytes: v2)
        let out = reader.finish()

        let ofV1 = Reading.isPrefix(out.bytes, of: v1), ofV2 = Reading.isPrefix(out.bytes, of: v2)
        #expect(ofV1 || ofV2, "the reader got a MIX of versions (first difference from v1 at \(Reading.firstDifference(out.bytes, v1) ?? -1)): \(out)")
        #expect(out.bytes.count >= 262_144 && ofV1, "the first 256 KiB were read before the change and must be v1: \(out)")
        #expect(out.failedWithEIO || (out.succeeded && out.bytes == Data(v1)),
                "a reader of the old version should get EIO once the change is seen: \(out)\(Check.daemonLog(mount))")
        print("open reader across a change: \(out)")

        let reopened = Reading.whole(path)
        #expect(reopened.succeeded && reopened.bytes == Data(v2), "reopening should give the new version: \(reopened)\(Check.daemonLog(mount))")
        Scratch.remove(flags)
    }

    @Test("fault: the file changes in the middle of a cp: cp fails with EIO or copies one version whole; afterwards the file is the new version")
    func faultFileChangesDuringCopy() throws {
        let server = try FaultServer()
        let size = 8 << 20
        let v1 = RandomBytes.make(count: size, seed: 0xC7)
        let v2 = RandomBytes.make(count: size, seed: 0xC8)
        server.publish("copying.bin", bytes: v1)
        server.configure("copying.bin", PathOptions(bytesPerSecond: 1 << 20))
        let mount = try fx.mount(server: server, names: ["copying.bin"])
        let path = mount.path("copying.bin")
        let copy = fx.workDir.appendingPathComponent("copy.bin")
        _ = Reading.range(path, offset: 0, length: 1)   // the size probe, out of the way

        let cp = try BackgroundCommand(["cp", path, copy.path])
        // Change the file once cp's first reply is well under way: later requests meet v2.
        let started = Poll.until(seconds: 30) { server.gets("copying.bin").contains { $0.bodyBytesSent >= 256 << 10 } }
        let lastBeforeChange = server.gets("copying.bin").map(\.id).max() ?? 0
        server.publish("copying.bin", bytes: v2)
        // The change must fall inside the copy: cp's first reply under way (above), cp still
        // running after the change, and part of v1 not yet sent, so cp has to ask again. Both
        // are read just after the change, so they hold at it too.
        let copyingAtChange = cp.isRunning
        let sentAtChange = server.gets("copying.bin").filter { $0.id <= lastBeforeChange }
        try #require(started, "cp's first reply never got under way within 30 s: \(sentAtChange)\(Check.daemonLog(mount))")
        try #require(copyingAtChange, "cp had finished before the change was published: the test did not exercise it")
        let v1BytesSent = ByteRanges.unionSize(sentAtChange.map { request in
            let start = request.requestedRange(size: size)?.lowerBound ?? 0
            return start..<min(size, start + request.bodyBytesSent)
        })
        try #require(v1BytesSent < size, "all of v1 had been sent before the change: \(sentAtChange)")
        let result = cp.wait(timeout: 120)
        let copyEnded = Date()
        // Requests the mount made after the change while cp was still copying.
        let askedAfterChange = server.gets("copying.bin").filter { $0.id > lastBeforeChange && $0.receivedAt <= copyEnded }
        #expect(!askedAfterChange.isEmpty, "the mount asked nothing after the change while cp copied: \(server.gets("copying.bin"))")
        let copied = (try? Data(contentsOf: copy)) ?? Data()
        let ofV1 = Reading.isPrefix(copied, of: v1), ofV2 = Reading.isPrefix(copied, of: v2)
        #expect(ofV1 || ofV2, "cp produced a MIX of versions (first difference from v1 at \(Reading.firstDifference(copied, v1) ?? -1))")
        let eio = !result.timedOut && result.status != 0 && result.stderr.contains("Input/output error")
        #expect(eio || (result.succeeded && (copied == Data(v1) || copied == Data(v2))),
                "cp across a change: expected EIO or one whole version: \(result)\(Check.daemonLog(mount))")
        server.waitUntilQuiet()
        print("cp across a change: \(eio ? "EIO" : "completed") after \(copied.count) bytes (\(ofV1 ? "v1" : "v2")); requests: \(server.gets("copying.bin").count)")
        if result.succeeded && copied == Data(v1) {
            Issue.record("every byte of v1 was fetched before the change, so the change was never seen: this test did not exercise it")
        }

        server.configure("copying.bin", PathOptions())
        let after = Reading.whole(path)
        #expect(after.succeeded && after.bytes == Data(v2), "after the change the file should be the new version: \(after)\(Check.daemonLog(mount))")
        #expect(mount.logLines(containing: "changed on the server").count == 1, "the change should be logged once\(Check.daemonLog(mount))")
    }

    // MARK: Redirects

    @Test("fault: a relative redirect is followed; a redirect loop and a redirect to ftp:// fail with EIO (ftp never contacted)")
    func faultRedirects() throws {
        let server = try FaultServer()
        let elsewhere = try FaultServer()   // stands in for the ftp host: it must see no connection
        let data = RandomBytes.make(count: Self.faultFileSize, seed: 0x302)
        for name in ["real.bin", "loop.bin", "loop-get.bin", "ftp.bin", "good.bin"] { server.publish(name, bytes: data) }
        server.inject(.redirect(to: "/real.bin"), times: 10_000, for: "alias.bin")
        server.inject(.redirect(to: "/loop.bin"), times: 10_000, for: "loop.bin")
        server.inject(.redirect(to: "loop-get.bin", status: 307), times: 10_000, for: "loop-get.bin", method: "GET")
        server.inject(.redirect(to: "ftp://127.0.0.1:\(elsewhere.port)/ftp.bin"), times: 10_000, for: "ftp.bin", method: "GET")
        let mount = try fx.mount(server: server, names: ["alias.bin", "loop.bin", "loop-get.bin", "ftp.bin", "good.bin"])

        let alias = Reading.whole(mount.path("alias.bin"))
        #expect(alias.succeeded && alias.bytes == Data(data), "read through a relative redirect: \(alias)\(Check.daemonLog(mount))")
        #expect(server.gets("real.bin").contains { $0.range != nil }, "no range request reached the redirect's target")

        for name in ["loop.bin", "loop-get.bin", "ftp.bin"] {
            let out = Reading.range(mount.path(name), offset: 0, length: 65536)
            #expect(out.failedWithEIO, "\(name): expected EIO: \(out)\(Check.daemonLog(mount))")
            #expect(out.bytes.isEmpty, "\(name): got bytes")
            #expect(out.result.seconds < 30, "\(name): took \(out.result.seconds) s")
        }
        server.waitUntilQuiet()
        // A loop is given up after a bounded number of hops and not retried forever.
        for name in ["loop.bin", "loop-get.bin"] {
            let count = server.requests(for: name).count
            #expect(count <= 60, "\(name): \(count) requests for a redirect loop")
            print("\(name): \(count) requests before giving up")
        }
        #expect(elsewhere.acceptedConnections == 0, "the ftp:// redirect target was contacted")
        let good = Reading.whole(mount.path("good.bin"))
        #expect(good.succeeded && good.bytes == Data(data), "another file after the redirect failures: \(good)")
        #expect(mount.isMounted)
    }

    // MARK: Files that went away

    @Test("fault: 404 and 410 for files that existed and were partly cached: uncached reads fail with EIO, cached blocks still read",
          arguments: [404, 410])
    func faultFileGone(_ status: Int) throws {
        let server = try FaultServer()
        let data = RandomBytes.make(count: Self.faultFileSize, seed: UInt64(status))
        server.publish("gone.bin", bytes: data)
        server.configure("gone.bin", PathOptions(goneStatus: status))
        let mount = try fx.mount(server: server, names: ["gone.bin"])
        let path = mount.path("gone.bin")
        let head = Reading.range(path, offset: 0, length: 65536)
        #expect(head.succeeded && head.bytes == Data(data[0..<65536]), "first read: \(head)")

        server.remove("gone.bin")
        let gone = Reading.range(path, offset: 3 << 20, length: 65536)
        #expect(gone.failedWithEIO && gone.bytes.isEmpty, "\(status): uncached read should fail with EIO: \(gone)\(Check.daemonLog(mount))")
        #expect(gone.result.seconds < 30)
        let cached = Reading.range(path, offset: 1000, length: 30_000)
        #expect(cached.succeeded && cached.bytes == Data(data[1000..<31_000]), "\(status): cached bytes should still read: \(cached)\(Check.daemonLog(mount))")
        let text = mount.statusText()
        #expect(text.stdout.contains("\(status)"), "\(status): rangefs status should give the reason: \(text)")
        #expect(mount.logLines(containing: server.url("gone.bin").absoluteString, "\(status)").count >= 1,
                "\(status): the log should name the URL and the status\(Check.daemonLog(mount))")
    }

    // MARK: Validators

    @Test("fault: a weak ETag is never sent in If-Range (the date is, or nothing); reads are right, and a change is still seen")
    func faultWeakETag() throws {
        let server = try FaultServer()
        let data = RandomBytes.make(count: Self.faultFileSize, seed: 0x3EA)
        server.publish("weak.bin", bytes: data, weakETag: true)
        let mount = try fx.mount(server: server, names: ["weak.bin"])
        let path = mount.path("weak.bin")
        for offset in [0, 1 << 20, 2 << 20 + 12345] {
            let out = Reading.range(path, offset: offset, length: 100_000)
            #expect(out.succeeded && out.bytes == Data(data[offset..<(offset + 100_000)]),
                    "weak ETag, read at \(offset): \(out)\(Check.daemonLog(mount))")
        }
        server.waitUntilQuiet()
        let date = server.lastModified(of: "weak.bin")
        let gets = server.gets("weak.bin")
        for get in gets {
            #expect(get.ifRange == nil || get.ifRange == date, "If-Range must be the date or absent with a weak ETag: \(get)")
            #expect(get.ifRange?.hasPrefix("W/") != true, "weak ETag sent in If-Range: \(get)")
        }
        #expect(gets.contains { $0.status == 206 }, "no ranged reply: \(gets)")
        print("weak ETag: If-Range values sent: \(Set(gets.map { $0.ifRange ?? "-" }))")

        // A new version (new weak tag, new date) is still noticed.
        let v2 = RandomBytes.make(count: Self.faultFileSize, seed: 0x3EB)
        server.publish("weak.bin", bytes: v2, weakETag: true)
        let changed = Reading.range(path, offset: 3 << 20, length: 65536)
        #expect(changed.failedWithEIO || (changed.succeeded && changed.bytes == Data(v2[(3 << 20)..<((3 << 20) + 65536)])),
                "read of a changed weak-ETag file: \(changed)\(Check.daemonLog(mount))")
        let reopened = Reading.whole(path)
        #expect(reopened.succeeded && reopened.bytes == Data(v2), "after the change: \(reopened)\(Check.daemonLog(mount))")
    }

    // MARK: Broken headers

    @Test("fault: huge and malformed response headers: EIO, no crash; the daemon keeps serving other files")
    func faultBrokenHeaders() throws {
        let server = try FaultServer()
        let data = RandomBytes.make(count: Self.faultFileSize, seed: 0x4EAD)
        for name in ["huge.bin", "malformed.bin", "malformed-probe.bin", "big-but-fine.bin", "good.bin"] {
            server.publish(name, bytes: data)
        }
        server.inject(.hugeHeader(bytes: 1_000_000), times: 10_000, for: "huge.bin", method: "GET")
        server.inject(.malformedHeaders, times: 10_000, for: "malformed.bin", method: "GET")
        server.inject(.malformedHeaders, times: 10_000, for: "malformed-probe.bin")
        server.inject(.hugeHeader(bytes: 16_000), times: 10_000, for: "big-but-fine.bin")
        let mount = try fx.mount(server: server, names: ["huge.bin", "malformed.bin", "malformed-probe.bin", "big-but-fine.bin", "good.bin"])

        for name in ["huge.bin", "malformed.bin", "malformed-probe.bin"] {
            let out = Reading.range(mount.path(name), offset: 0, length: 65536)
            #expect(out.failedWithEIO && out.bytes.isEmpty, "\(name): expected EIO: \(out)\(Check.daemonLog(mount))")
            #expect(out.result.seconds < 30, "\(name): took \(out.result.seconds) s")
            #expect(mount.isMounted && !mount.daemonPids().isEmpty, "\(name): the daemon died\(Check.daemonLog(mount))")
        }
        let fine = Reading.whole(mount.path("big-but-fine.bin"))
        #expect(fine.succeeded && fine.bytes == Data(data), "a 16 KB header is legal: \(fine)\(Check.daemonLog(mount))")
        let good = Reading.whole(mount.path("good.bin"))
        #expect(good.succeeded && good.bytes == Data(data), "another file after the broken headers: \(good)")
        let ls = Command.run(["ls", "-la", mount.mountpoint], timeout: 30)
        #expect(!ls.timedOut, "ls hung: \(ls)")
    }
}

/// A reply that lies about what it carries; `changesVersion` when it names another size,
/// which RangeFS must take as a changed remote file.
struct LyingReply: Sendable, CustomTestStringConvertible {
    let name: String
    let changesVersion: Bool
    let make: @Sendable (Int) -> Fault

    func fault(_ size: Int) -> Fault { make(size) }
    var testDescription: String { name }

    static let cases: [LyingReply] = [
        LyingReply(name: "short body", changesVersion: false) { _ in .shortBody(missingBytes: 5000) },
        LyingReply(name: "extra bytes", changesVersion: false) { _ in .extraBytes(70_000) },
        LyingReply(name: "wrong Content-Range", changesVersion: false) { _ in .wrongContentRange(offsetBy: 4096) },
        LyingReply(name: "wrong total (larger)", changesVersion: true) { size in .wrongTotal(size + 1) },
        LyingReply(name: "close before response", changesVersion: false) { _ in .closeBeforeResponse },
        LyingReply(name: "drop after 1 byte", changesVersion: false) { _ in .dropConnection(afterBodyBytes: 1) },
        LyingReply(name: "502", changesVersion: false) { _ in .status(502) },
    ]
}
