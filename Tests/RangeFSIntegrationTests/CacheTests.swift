import Foundation
import Testing

/// What reaches the server: each byte once, and nothing at all from a warm cache.
extension RangeFSIntegrationTests {
    @Test("after a remount with the same cache dir, reading everything again makes no request; no byte is asked for twice")
    func remountServesFromCache() throws {
        let cacheDir = try fx.makeCacheDir()
        let layout = fx.standardLayout
        let log = fx.nginx.accessLog

        // Phase 1: a cold cache; list and read everything.
        // Debug log: a failure shows which transfers were cut, and why.
        let mount = try fx.mount(fx.standardEntries, cacheDir: cacheDir, options: ["--log-level", "debug"])
        Check.succeeded(Command.run(["ls", "-laR", mount.mountpoint], timeout: 60), "ls -laR", mount: mount)
        for placed in layout {
            #expect(SHA256.of(mount.path(placed.path)).hash == placed.file.sha256, "phase 1: sha256 of \(placed.path)")
        }
        let unmount = mount.unmount()
        #expect(unmount.succeeded, "rangefs unmount: \(unmount)")
        #expect(!mount.isMounted, "still mounted after rangefs unmount")

        // Over phase 1: no byte range of any file was asked for twice, and ranges sent after
        // the first response carry that file's ETag as If-Range. A transfer the mount cut short
        // for a reader (it judged it late: on a busy machine, a stalled loop looks like a slow
        // link) stops at its cut, but what its server had already written past it into the
        // socket counts as sent in nginx's log: only such a tail may come twice.
        log.waitUntilQuiet()
        let phase1 = log.entries()
        let mountLog = mount.log()
        for placed in layout {
            let cuts = CutTransfers(log: mountLog, file: placed.file.name)
            let uri = "/" + placed.file.name
            let entries = phase1.filter { $0.path == uri }
            let ranges = entries.filter { $0.range != "bytes=0-0" }   // a size probe may overlap block 0
                .compactMap { $0.servedRange(fileSize: placed.file.size) }
            let unexplained = ByteRanges.overlaps(ranges).filter { !cuts.explain($0, $1) }
            #expect(unexplained.isEmpty, "\(placed.path): bytes served more than once: \(unexplained.prefix(5))\n\(entries.map(\.description).joined(separator: "\n"))\n\(cuts.lines.joined(separator: "\n"))")
            let etag = Self.etag(of: fx.nginx.url(placed.file.name))
            let later = entries.dropFirst().filter { $0.method == "GET" && $0.range != nil }
            for entry in later {
                #expect(entry.ifRange == etag, "\(placed.path): a later range request without If-Range \(etag ?? "?"): \(entry)")
            }
        }

        // Phase 2: the same cache, a new mount; nothing may reach the server.
        let mark = log.mark()
        let again = try fx.mount(fx.standardEntries, cacheDir: cacheDir)
        Check.succeeded(Command.run(["ls", "-laR", again.mountpoint], timeout: 60), "ls -laR after remount", mount: again)
        for placed in layout {
            let r = Command.run(["stat", "-c", "%s", again.path(placed.path)], timeout: 30)
            #expect(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "\(placed.file.size)",
                    "phase 2: size of \(placed.path): \(r)")
            #expect(SHA256.of(again.path(placed.path)).hash == placed.file.sha256, "phase 2: sha256 of \(placed.path)")
        }
        let second = again.unmount()
        #expect(second.succeeded, "rangefs unmount: \(second)")
        log.waitUntilQuiet()
        let phase2 = log.entries(since: mark)
        #expect(phase2.isEmpty, "the remount with a warm cache made \(phase2.count) requests:\n\(phase2.prefix(20).map(\.description).joined(separator: "\n"))")
    }

    @Test("two concurrent cold readers of one block: the second asks only for what the first's slow transfer does not bring soon; no byte is asked for twice")
    func concurrentReadersShareOneRequest() throws {
        // The throttled location keeps the first transfer in flight while the second
        // reader arrives (block 0 at 64 KiB/s takes about 4 s).
        let tail = fx.data.file("tail.bin")
        let mount = try fx.mount([ManifestLine(path: "slow.bin", url: fx.nginx.slowURL("tail.bin"))])
        let stat = Command.run(["stat", "-c", "%s", mount.path("slow.bin")], timeout: 30)
        #expect(Check.succeeded(stat, "stat", mount: mount) && stat.stdout.hasPrefix("\(tail.size)"))
        let log = fx.nginx.accessLog
        let mark = log.mark()

        let offsets = [0, 131_072]   // both inside block 0, on different pages
        let first = try BackgroundCommand(["dd", "if=\(mount.path("slow.bin"))", "iflag=skip_bytes,count_bytes",
                                          "bs=4096", "skip=\(offsets[0])", "count=4096", "status=none"])
        // The second reader starts once block 0 is on its way from nginx and not yet cached, so
        // it must find the transfer in flight (status counts only whole blocks as cached).
        let (inFlight, arriving) = try mount.waitForStatus(timeout: 30, interval: 0.1) { status in
            guard let file = status.file("slow.bin") else { return false }
            return file.bytesPerSecond > 0 && file.cachedBytes < TestData.blockSize
        }
        try #require(arriving, "block 0 never arrived in flight from the throttled server: \(inFlight)")
        let second = try BackgroundCommand(["dd", "if=\(mount.path("slow.bin"))", "iflag=skip_bytes,count_bytes",
                                           "bs=4096", "skip=\(offsets[1])", "count=4096", "status=none"])
        let results = [first.wait(timeout: 60), second.wait(timeout: 60)]
        for (offset, r) in zip(offsets, results) {
            if Check.succeeded(r, "dd at \(offset)", mount: mount) {
                #expect(r.stdoutData == (try tail.bytes(offset: offset, length: 4096)), "bytes at \(offset)")
            }
        }

        // Requests end (and are logged) when their transfers end: unmount first.
        mount.unmount()
        log.waitUntilQuiet(timeout: 20)
        let gets = log.entries(for: "/slow/tail.bin", since: mark).filter { $0.method == "GET" }
        let block0 = 0..<TestData.blockSize
        // In the order they started (nginx logs a request when it ends).
        let covering = gets.filter { entry in
            entry.requestedRanges(fileSize: tail.size).contains { $0.overlaps(block0) }
        }.sorted { $0.finishedAt - $0.requestTime < $1.finishedAt - $1.requestTime }
        print("concurrent readers: range requests after the lookup:\n  " + gets.map(\.description).joined(separator: "\n  "))
        // The first reader's transfer brings block 0 from its start. At 64 KiB/s the second
        // reader's bytes are seconds behind its frontier: the second reader cuts it where its
        // bytes stop coming soon and asks for the rest of the block itself, from that point on.
        let firstRange = try #require(covering.first?.requestedRanges(fileSize: tail.size).first, "no request for block 0")
        #expect(firstRange.lowerBound == 0)
        let rest = covering.dropFirst().flatMap { $0.requestedRanges(fileSize: tail.size) }.sorted { $0.lowerBound < $1.lowerBound }
        #expect(ByteRanges.overlaps(rest).isEmpty, "the second reader's requests overlap: \(rest)")
        if let cut = rest.first?.lowerBound {
            // Its requests start where the first transfer was cut (past the first reader's bytes,
            // at or before its own) and reach the end of the block without a gap.
            #expect(zip(rest, rest.dropFirst()).allSatisfy { $0.upperBound == $1.lowerBound }, "gaps: \(rest)")
            #expect(rest.last?.upperBound ?? 0 >= block0.upperBound)
            #expect(cut > offsets[0] + 4096 && cut <= offsets[1], "cut at \(cut)")
        }
    }

    @Test("rangefs unmount and SIGTERM of the daemon both unmount cleanly and keep the cache")
    func unmountAndSigtermKeepTheCache() throws {
        let cacheDir = try fx.makeCacheDir()
        let tail = fx.data.file("tail.bin")
        let entries = [ManifestLine(path: "tail.bin", url: fx.nginx.url("tail.bin"))]
        let log = fx.nginx.accessLog

        let mount = try fx.mount(entries, cacheDir: cacheDir)
        #expect(FileManager.default.fileExists(atPath: mount.logPath), "no daemon log at \(mount.logPath)")
        #expect(SHA256.of(mount.path("tail.bin")).hash == tail.sha256)
        let daemons = mount.daemonPids()
        try #require(daemons.count == 1, "expected one daemon process for the mount, found \(daemons)")
        let t0 = Date()
        _ = kill(daemons[0], SIGTERM)
        let exited = ProcessInfo.waitForExit(daemons[0], seconds: 30)
        #expect(exited, "the daemon did not exit within 30 s of SIGTERM")
        #expect(!mount.isMounted, "still mounted after SIGTERM of the daemon")
        print("SIGTERM -> daemon gone after \(String(format: "%.2f", Date().timeIntervalSince(t0))) s")

        let mark = log.mark()
        let again = try fx.mount(entries, cacheDir: cacheDir)
        #expect(SHA256.of(again.path("tail.bin")).hash == tail.sha256)
        let r = again.unmount()
        #expect(r.succeeded, "rangefs unmount: \(r)")
        #expect(!again.isMounted)
        #expect(again.daemonPids().isEmpty, "daemon still running after rangefs unmount returned")
        log.waitUntilQuiet()
        let after = log.entries(since: mark)
        #expect(after.isEmpty, "the cache written before SIGTERM was not reused: \(after.map(\.description))")
    }

    /// The ETag nginx sends for `url` (quotes included), from a HEAD request.
    static func etag(of url: String) -> String? {
        let r = Command.run(["curl", "-sS", "-I", url], timeout: 15)
        for line in r.stdout.split(whereSeparator: \.isNewline) where line.lowercased().hasPrefix("etag:") {
            return line.dropFirst(5).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        return nil
    }
}

/// The transfers of one file a mount's debug log says it cut short for a reader ("…/FILE: a reader
/// of byte L does not wait for the transfer of bytes A..<B …"): bytes from L on of the request for A..<B.
struct CutTransfers {
    let lines: [String]
    private let cutAt: [Range<Int>: Int]

    init(log: String, file: String) {
        lines = log.split(separator: "\n").map(String.init).filter { $0.contains("/\(file): a reader of byte ") }
        var cutAt: [Range<Int>: Int] = [:]
        for line in lines {
            guard let late = Self.integer(in: line, after: "a reader of byte "),
                  let lower = Self.integer(in: line, after: "the transfer of bytes "),
                  let upper = Self.integer(in: line, after: "..<") else { continue }
            cutAt[lower..<upper] = min(cutAt[lower..<upper] ?? late, late)
        }
        self.cutAt = cutAt
    }

    /// Whether the bytes `a` and `b` share lie past a cut of the request for one of them.
    func explain(_ a: Range<Int>, _ b: Range<Int>) -> Bool {
        let shared = a.clamped(to: b)
        return [a, b].contains { asked in cutAt.contains { $0.key.lowerBound == asked.lowerBound && $0.value <= shared.lowerBound } }
    }

    private static func integer(in line: String, after marker: String) -> Int? {
        guard let start = line.range(of: marker)?.upperBound else { return nil }
        return Int(line[start...].prefix { $0.isNumber })
    }
}
