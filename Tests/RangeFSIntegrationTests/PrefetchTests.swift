import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The prefetcher: background completion, promotion to complete, foreground priority,
/// pause and resume, and the --prefetch policies.
extension RangeFSIntegrationTests {
    /// Small files and one of a few MiB, so that a full background completion takes seconds.
    static let prefetchNames = ["empty.bin", "one.bin", "block.bin", "block-plus-one.bin", "tail.bin",
                                TestData.mp3Name, TestData.spacedName]

    @Test("with nothing read, the prefetcher completes every file (status, xattrs, data files, one log line each); a remount reads them all with no request")
    func prefetchCompletesEverything() throws {
        let files = Self.prefetchNames.map { fx.data.file($0) }
        let entries = files.map { ManifestLine(path: "files/\($0.name)", url: fx.nginx.url($0.name)) }
        let cacheDir = try fx.makeCacheDir()
        let log = fx.nginx.accessLog

        // Phase 1: mount, read nothing, wait for the background to finish.
        let started = Date()
        let mount = try fx.mount(entries, cacheDir: cacheDir)
        let (status, met) = try mount.waitForStatus(timeout: 60) { $0.allComplete }
        print("prefetch: \(files.count) files, \(files.reduce(0) { $0 + $1.size }) bytes complete after \(String(format: "%.2f", Date().timeIntervalSince(started))) s (met: \(met))")
        try #require(met, "not every file became complete within 60 s:\n\(status)\n--- daemon log ---\n\(mount.logTail())")
        #expect(!status.paused)
        #expect(status.prefetch == "all")
        #expect(status.files.count == files.count, "status lists \(status.files.count) files:\n\(status)")

        for (file, entry) in zip(files, entries) {
            let path = entry.path!
            if let s = status.file(path) {
                #expect(s.state == "complete" && s.size == file.size && s.cachedBytes == file.size && s.failure == nil,
                        "status of \(path): \(s.state) \(s.cachedBytes)/\(s.size ?? -1) \(s.failure ?? "")")
                #expect(s.url == entry.url, "status url of \(path): \(s.url)")
            } else {
                Issue.record("status has no line for \(path):\n\(status)")
            }
            let (attrs, r) = FileAttrs.dump(mount.path(path))
            guard let attrs else {
                Issue.record("getfattr -d \(path) failed:\n\(r)")
                continue
            }
            #expect(attrs["user.rangefs.state"] == "complete", "\(path): \(attrs)")
            #expect(attrs["user.rangefs.progress"] == "100.0", "\(path): \(attrs)")
            #expect(attrs["user.rangefs.cached"] == "\(file.size)", "\(path): \(attrs)")
            #expect(attrs["user.rangefs.url"] == entry.url, "\(path): \(attrs)")
            #expect(attrs["user.rangefs.error"] == nil, "\(path): \(attrs)")
        }

        // The data files: all promoted (no .part), and together exactly the originals' bytes.
        let dataFiles = CacheDataFile.list(cacheDir: cacheDir.path)
        let listing = dataFiles.map { "\($0.name) \($0.size)" }.joined(separator: "\n")
        #expect(dataFiles.filter(\.isPartial).isEmpty, "partial data files left after completion:\n\(listing)")
        let nonEmpty = dataFiles.filter { $0.size > 0 }
        #expect(dataFiles.count - nonEmpty.count <= 1, "more than one empty data file:\n\(listing)")
        let expectedSizes = files.map(\.size).filter { $0 > 0 }.sorted()
        #expect(nonEmpty.map(\.size).sorted() == expectedSizes, "sizes in data/:\n\(listing)")
        let expectedHashes = files.filter { $0.size > 0 }.map(\.sha256).sorted()
        let dataHashes = nonEmpty.compactMap { SHA256.of($0.path).hash }.sorted()
        #expect(dataHashes == expectedHashes, "sha256 of the files in data/ differ from the originals:\n\(listing)")

        // The log says each promotion once (an empty file is complete from the start).
        let lines = mount.completionLines()
        for (file, entry) in zip(files, entries) where file.size > 0 {
            let mine = lines.filter { $0.contains("complete: \(entry.url) ") }
            #expect(mine.count == 1, "log lines for the promotion of \(entry.url): \(mine.count)\n\(lines.joined(separator: "\n"))")
        }

        // Bytes through the mount, and nothing fetched twice.
        for (file, entry) in zip(files, entries) {
            #expect(SHA256.of(mount.path(entry.path!)).hash == file.sha256, "phase 1: sha256 of \(entry.path!)")
        }
        let unmount = mount.unmount()
        #expect(unmount.succeeded, "rangefs unmount: \(unmount)")
        log.waitUntilQuiet()
        for file in files {
            let requests = log.entries(for: "/" + file.name)
            let served = requests.filter { $0.range != "bytes=0-0" }.compactMap { $0.servedRange(fileSize: file.size) }
            let overlaps = ByteRanges.overlaps(served)
            #expect(overlaps.isEmpty, "\(file.name): bytes served more than once: \(overlaps.prefix(5))\n\(requests.map(\.description).joined(separator: "\n"))")
        }

        // Phase 2: the same cache; listing and reading everything makes no request at all.
        let mark = log.mark()
        let again = try fx.mount(entries, cacheDir: cacheDir)
        let first = try again.statusSnapshot()
        #expect(first.allComplete, "after the remount not every file is complete at once:\n\(first)")
        Check.succeeded(Command.run(["ls", "-laR", again.mountpoint], timeout: 30), "ls -laR after remount", mount: again)
        for (file, entry) in zip(files, entries) {
            #expect(SHA256.of(again.path(entry.path!)).hash == file.sha256, "phase 2: sha256 of \(entry.path!)")
            #expect(FileAttrs.value("user.rangefs.state", of: again.path(entry.path!)) == "complete", "phase 2: state of \(entry.path!)")
        }
        let second = again.unmount()
        #expect(second.succeeded, "rangefs unmount: \(second)")
        log.waitUntilQuiet()
        let phase2 = log.entries(since: mark)
        #expect(phase2.isEmpty, "the remount of a complete cache made \(phase2.count) requests:\n\(phase2.prefix(20).map(\.description).joined(separator: "\n"))")
    }

    @Test("while the prefetcher keeps every background slot busy on a throttled server, a cold 4 KiB read of another file returns within 5 s")
    func foregroundReadBeatsBusyPrefetcher() throws {
        // Five names for the 100 MiB file (the query makes them distinct URLs): at 64 KiB/s a
        // background chunk of 4 MiB takes a minute, so the three whole-file slots stay busy on
        // the first three, in manifest order, for the whole test. The reads go to the middle of
        // the other two, which background work never reaches meanwhile: the heads walk fetches
        // only files' starts and ends.
        let big = fx.data.file("big.bin")
        let entries = (1...3).map { ManifestLine(path: "big-\($0).bin", url: fx.nginx.slowURL("big.bin") + "?copy=\($0)") }
            + (4...5).map { ManifestLine(path: "other-\($0).bin", url: fx.nginx.slowURL("big.bin") + "?copy=\($0)") }
        let mount = try fx.mount(entries, options: ["--max-downloads", "3"])

        // Wait until the background moves at least two transfers' worth (64 KiB/s each).
        let (busy, met) = try mount.waitForStatus(timeout: 30, interval: 0.5) { status in
            status.files.filter { $0.path.hasPrefix("big-") }.reduce(0) { $0 + $1.bytesPerSecond } >= 120_000
        }
        print("foreground priority: background before the reads:\n\(busy)")
        try #require(met, "the prefetcher did not get busy on the big files within 30 s:\n\(busy)\n\(mount.logTail())")
        let middle = 48 << 20
        for name in ["other-4.bin", "other-5.bin"] {
            let s = busy.file(name)
            try #require(s != nil && s!.cachedBytes < middle,
                         "\(name) is cached up to its middle: the read would prove nothing:\n\(busy)")
        }

        let reads: [(String, TestFile, Int)] = [("other-4.bin", big, middle), ("other-5.bin", big, middle + 131_072)]
        for (name, file, offset) in reads {
            let r = Command.run(["dd", "if=\(mount.path(name))", "iflag=skip_bytes,count_bytes", "bs=4096",
                                 "skip=\(offset)", "count=4096", "status=none"], timeout: 90)
            print("foreground priority: cold 4 KiB read of \(name) at \(offset) during background work took \(formatMillis(r.seconds))")
            if Check.succeeded(r, "dd \(name) at \(offset)", mount: mount) {
                #expect(r.stdoutData == (try file.bytes(offset: offset, length: 4096)), "bytes of \(name) at \(offset)")
            }
            #expect(r.seconds < 5, "a cold 4 KiB read of \(name) took \(r.seconds) s while the prefetcher was busy (bound 5 s)\n\(mount.logTail())")
        }
        let after = try mount.statusSnapshot()
        #expect(after.files.filter { $0.path.hasPrefix("big-") }.allSatisfy { $0.state != "complete" },
                "a big file completed: the background was not busy the whole time")
    }

    @Test("rangefs pause stops background requests (also across a remount) while reads still work; resume completes everything")
    func pauseStopsBackgroundTraffic() throws {
        // Its own nginx at 1 MiB/s per request: the MP3's two chunks take about 4 s, long
        // enough to pause in the middle; the whole set completes a few seconds after resume.
        let server = try NginxServer(serving: fx.data.dir, slowRate: "1m")
        defer { server.stop() }
        let log = server.accessLog
        let names = [TestData.mp3Name, "tail.bin", "block-plus-one.bin", "one.bin"]
        let files = names.map { fx.data.file($0) }
        let entries = files.map { ManifestLine(path: $0.name, url: server.slowURL($0.name)) }
        let cacheDir = try fx.makeCacheDir()
        let mount = try fx.mount(entries, cacheDir: cacheDir, options: ["--max-downloads", "2"])

        let (moving, met) = try mount.waitForStatus(timeout: 20, interval: 0.1) { $0.cachedBytes > 0 || $0.bytesPerSecond > 0 }
        try #require(met, "no background transfer started within 20 s:\n\(moving)\n\(mount.logTail())")
        let pause = mount.rangefs("pause")
        try #require(Check.succeeded(pause, "rangefs pause", mount: mount))
        let pausedAt = Date.epochNow

        // Bytes already on their way may still land just after the pause: wait until the held
        // transfers stand still. At 1 MiB/s a transfer that still ran would complete a 256 KiB
        // block every quarter second, so two snapshots half a second apart that agree show it
        // held. The bound is short: transfers left running would finish their chunks (about 4 s)
        // and then stand still too, proving nothing.
        let (before, held) = try mount.waitUntilStill(timeout: 2, apart: 0.5)
        try #require(held, "cached bytes still grew 2 s after pause: the running transfers were not held:\n\(before)")
        let windowStart = Date.epochNow
        // Then nothing may start or move. No event marks the moment a transfer would have shown
        // up, so this is an observation window, kept short: one second is four blocks' worth of
        // one unheld transfer at the server's rate, and a new request would begin at once.
        usleep(Self.quietWindow)
        let during = try mount.statusSnapshot()
        let windowEnd = Date.epochNow
        print("pause: cached \(before.cachedBytes) B once held, \(during.cachedBytes) B \(String(format: "%.1f", windowEnd - windowStart)) s later (of \(files.reduce(0) { $0 + $1.size }))")
        #expect(during.paused, "status does not say paused:\n\(during)")
        #expect(during.cachedBytes == before.cachedBytes, "cached bytes grew while paused: \(before.cachedBytes) -> \(during.cachedBytes)\n\(during)")
        #expect(!during.allComplete, "everything completed before the pause took effect: the test proves nothing")

        // A foreground read while paused: fetched, and right.
        let firstRead = files.first { during.file($0.name)?.cachedBytes == 0 } ?? files[0]
        let fg = SHA256.of(mount.path(firstRead.name), timeout: 60)
        Check.succeeded(fg.result, "sha256sum \(firstRead.name) while paused", mount: mount)
        #expect(fg.hash == firstRead.sha256, "read of \(firstRead.name) while paused")
        print("pause: a foreground read of all of \(firstRead.name) (\(firstRead.size) B) while paused took \(String(format: "%.2f", fg.result.seconds)) s")

        // Unmount while paused; the remount is paused from its first moment.
        let u = mount.unmount()
        #expect(u.succeeded, "rangefs unmount while paused: \(u)")
        let remountAt = Date.epochNow
        let again = try fx.mount(entries, cacheDir: cacheDir, options: ["--max-downloads", "2"])
        let atRemount = try again.statusSnapshot()
        #expect(atRemount.paused, "the paused state was lost across the remount:\n\(atRemount)")
        #expect(again.log().contains("paused"), "the daemon log does not mention that it starts paused")
        // Unpaused, the prefetcher would start its first transfer the moment the mount starts (the
        // sizes are known from the cache): the same short window shows it does not.
        usleep(Self.quietWindow)
        let afterRemount = try again.statusSnapshot()
        let remountWindowEnd = Date.epochNow
        #expect(afterRemount.paused)
        #expect(afterRemount.cachedBytes == atRemount.cachedBytes,
                "cached bytes grew after a paused remount: \(atRemount.cachedBytes) -> \(afterRemount.cachedBytes)")
        #expect(!afterRemount.allComplete, "nothing left to do after the remount: the test proves less than intended")

        // A second foreground read, on the remounted paused mount.
        let secondRead = files.first { f in afterRemount.file(f.name).map { $0.cachedBytes < f.size } ?? false }
        if let secondRead {
            let offset = secondRead.size / 2
            let r = Check.ddRead(again.path(secondRead.name), offset: offset, length: 8192, timeout: 60)
            if Check.succeeded(r, "dd of \(secondRead.name) on the paused remount", mount: again) {
                #expect(r.stdoutData == (try secondRead.bytes(offset: offset, length: 8192)))
            }
        }

        // Resume: everything completes, with the right bytes.
        let resumed = again.rangefs("resume")
        try #require(Check.succeeded(resumed, "rangefs resume", mount: again))
        let resumedAt = Date()
        let (final, done) = try again.waitForStatus(timeout: 60) { $0.allComplete }
        print("pause: complete \(String(format: "%.2f", Date().timeIntervalSince(resumedAt))) s after resume (met: \(done))")
        #expect(done, "not complete within 60 s of resume:\n\(final)\n\(again.logTail())")
        #expect(!final.paused)
        for file in files {
            #expect(SHA256.of(again.path(file.name)).hash == file.sha256, "sha256 of \(file.name) after resume")
        }
        let last = again.unmount()
        #expect(last.succeeded, "rangefs unmount: \(last)")

        // Every request has ended by now, so every request is in the log: none may have begun
        // inside the two quiet windows (nginx logs a request when it ends, so this also
        // catches requests that began there and were held).
        log.waitUntilQuiet()
        let quiet1 = log.entries(startedBetween: windowStart, and: windowEnd)
        let quiet2 = log.entries(startedBetween: remountAt, and: remountWindowEnd)
        let all = log.entries().map { "\(String(format: "%.3f", $0.startedAt - pausedAt)) s: \($0)" }.joined(separator: "\n")
        print("pause: requests (start relative to the pause; quiet windows \(String(format: "%.1f", windowStart - pausedAt))-\(String(format: "%.1f", windowEnd - pausedAt)) s and \(String(format: "%.1f", remountAt - pausedAt))-\(String(format: "%.1f", remountWindowEnd - pausedAt)) s):\n\(all)")
        #expect(quiet1.isEmpty, "requests began while paused (once held, for \(String(format: "%.1f", windowEnd - windowStart)) s):\n\(quiet1.map(\.description).joined(separator: "\n"))\nall (start relative to pause):\n\(all)")
        #expect(quiet2.isEmpty, "requests began after the paused remount:\n\(quiet2.map(\.description).joined(separator: "\n"))\nall (start relative to pause):\n\(all)")
    }

    @Test("a file held open while the prefetcher completes and promotes it reads back byte-identical, through the old handle and a new one")
    func openFileSurvivesPromotion() throws {
        // 770 KiB at 256 KiB/s per request: about 3 s from first byte to promotion.
        let server = try NginxServer(serving: fx.data.dir, slowRate: "256k")
        defer { server.stop() }
        let tail = fx.data.file("tail.bin")
        let original = try Data(contentsOf: tail.url)
        let cacheDir = try fx.makeCacheDir()
        let mount = try fx.mount([ManifestLine(path: "p.bin", url: server.slowURL("tail.bin"))], cacheDir: cacheDir)
        let path = mount.path("p.bin")

        let fd = open(path, O_RDONLY | O_CLOEXEC)
        try #require(fd >= 0, "open \(path): errno \(errno)")
        var isOpen = true
        defer { if isOpen { close(fd) } }
        func pread(_ offset: Int, _ length: Int) -> Data? {
            var buffer = [UInt8](repeating: 0, count: length)
            let n = buffer.withUnsafeMutableBytes { Glibc.pread(fd, $0.baseAddress, length, off_t(offset)) }
            return n < 0 ? nil : Data(buffer.prefix(n))
        }
        let head = 65_536
        #expect(pread(0, head) == original.prefix(head), "the first 64 KiB through the open handle")
        let stateAfterHead = FileAttrs.value("user.rangefs.state", of: path)
        #expect(stateAfterHead != "complete", "already complete after the first read: the promotion was not watched")

        // Random small reads through the same handle until the file is complete.
        var rng = SeededRandom(seed: 3)
        var readsBefore = 0
        var mismatches: [Int] = []
        let deadline = Date().addingTimeInterval(60)
        var state = stateAfterHead
        while state != "complete", Date() < deadline {
            let offset = Int.random(in: 0..<(tail.size - 4096), using: &rng)
            let got = pread(offset, 4096)
            if got != original.subdata(in: offset..<(offset + 4096)) { mismatches.append(offset) }
            readsBefore += 1
            usleep(50_000)
            state = FileAttrs.value("user.rangefs.state", of: path)
        }
        print("promotion: \(readsBefore) random 4 KiB reads through the handle before the file was complete")
        try #require(state == "complete", "p.bin not complete within 60 s (state \(state ?? "?"))\n\(mount.logTail())")
        #expect(mismatches.isEmpty, "reads before promotion returned wrong bytes at offsets \(mismatches)")

        // The data file has its final name.
        let dataFiles = CacheDataFile.list(cacheDir: cacheDir.path)
        #expect(dataFiles.count == 1 && !dataFiles[0].isPartial && dataFiles[0].size == tail.size,
                "data/ after promotion: \(dataFiles.map { "\($0.name) \($0.size)" })")

        // The rest through the old handle, then all of it again through the old handle.
        var rest = Data()
        var offset = head
        while offset < tail.size {
            guard let chunk = pread(offset, 65_536), !chunk.isEmpty else {
                Issue.record("read through the old handle at \(offset) failed or ended early: errno \(errno)")
                break
            }
            rest.append(chunk)
            offset += chunk.count
        }
        #expect(rest == original.subdata(in: head..<tail.size), "the rest through the handle opened before promotion")
        // Again with this file's page cache dropped, so every byte comes from the promoted file.
        _ = posix_fadvise(fd, 0, 0, Int32(POSIX_FADV_DONTNEED))
        #expect(pread(0, tail.size + 10) == original, "the whole file again through the old handle")

        // And through new handles.
        close(fd)
        isOpen = false
        #expect(SHA256.of(path).hash == tail.sha256, "sha256sum through a new handle")
        #expect((try? Data(contentsOf: URL(fileURLWithPath: path))) == original, "a new handle in the test process")
        let r = mount.unmount()
        #expect(r.succeeded, "rangefs unmount: \(r)")
    }

    @Test("--prefetch none fetches nothing in the background (only size probes); --prefetch opened completes only the files opened")
    func prefetchPolicies() throws {
        let names = ["tail.bin", "block-plus-one.bin", "block.bin", "one.bin", TestData.mp3Name]
        let files = names.map { fx.data.file($0) }
        let entries = files.map { ManifestLine(path: $0.name, url: fx.nginx.url($0.name)) }
        let log = fx.nginx.accessLog

        // none: a listing probes sizes; nothing else reaches the server.
        let none = try fx.mount(entries, options: ["--prefetch", "none"])
        Check.succeeded(Command.run(["ls", "-l", none.mountpoint], timeout: 30), "ls -l", mount: none)
        // A prefetcher that ignored none would start a GET the moment a size is known, at
        // loopback speed; nothing marks the moment it would have, so this is a short
        // observation window. Unmounting then ends any request that began, so the log has them all.
        usleep(Self.quietWindow)
        let noneStatus = try none.statusSnapshot()
        #expect(noneStatus.prefetch == "none")
        #expect(noneStatus.cachedBytes == 0 && noneStatus.files.allSatisfy { $0.state == "remote" },
                "--prefetch none: something was cached:\n\(noneStatus)")
        #expect(FileAttrs.value("user.rangefs.progress", of: none.path("tail.bin")) == "0.0")
        none.unmount()
        log.waitUntilQuiet()
        let probes = log.entries()
        let notProbes = probes.filter { !($0.method == "HEAD" || $0.range == "bytes=0-0") }
        #expect(notProbes.isEmpty, "--prefetch none: requests other than size probes:\n\(notProbes.map(\.description).joined(separator: "\n"))")

        // opened: only what is opened is completed, each once opened.
        let mark = log.mark()
        let opened = try fx.mount(entries, options: ["--prefetch", "opened"])
        Check.succeeded(Command.run(["ls", "-l", opened.mountpoint], timeout: 30), "ls -l", mount: opened)
        var wanted: [String] = []
        for name in ["tail.bin", TestData.mp3Name] {
            let r = Command.run(["head", "-c", "1", opened.path(name)], timeout: 30)
            Check.succeeded(r, "head -c 1 \(name)", mount: opened)
            wanted.append(name)
            let (status, met) = try opened.waitForStatus(timeout: 30) { s in
                wanted.allSatisfy { s.file($0)?.state == "complete" }
            }
            #expect(met, "--prefetch opened: \(wanted) not complete within 30 s of opening:\n\(status)")
        }
        // No waiting for strays: every chunk of the opened files, as it ended, had the prefetcher
        // fill its free slots, so a file it should not touch would have been asked for before the opened ones
        // completed. The status shows what arrived; the log after unmounting, what was asked for.
        let status = try opened.statusSnapshot()
        #expect(status.prefetch == "opened")
        for file in files where !wanted.contains(file.name) {
            let s = status.file(file.name)
            #expect(s?.state == "remote" && s?.cachedBytes == 0, "--prefetch opened: \(file.name) was fetched without being opened:\n\(status)")
        }
        for name in wanted {
            #expect(SHA256.of(opened.path(name)).hash == fx.data.file(name).sha256, "sha256 of \(name)")
        }
        opened.unmount()
        log.waitUntilQuiet()
        let gets = log.entries(since: mark).filter { $0.method == "GET" && $0.range != "bytes=0-0" }
        let strays = gets.filter { entry in !wanted.contains { entry.path == "/" + $0 } }
        #expect(strays.isEmpty, "--prefetch opened: GETs for files never opened:\n\(strays.map(\.description).joined(separator: "\n"))")
    }
}

extension RangeFSIntegrationTests {
    /// How long the tests watch for background work that must not happen (µs): far longer than a
    /// transfer takes to start and to land a block on these loopback servers.
    static let quietWindow: UInt32 = 1_000_000
}

private extension Mount {
    /// Polls the status until two snapshots `apart` seconds apart report the same cached bytes,
    /// at most `timeout` seconds; returns the last snapshot and whether the bytes stood still.
    func waitUntilStill(timeout: Double, apart: Double) throws -> (status: StatusSnapshot, still: Bool) {
        let deadline = Date().addingTimeInterval(timeout)
        var last = try statusSnapshot()
        while Date() < deadline {
            usleep(UInt32(apart * 1_000_000))
            let next = try statusSnapshot()
            if next.cachedBytes == last.cachedBytes { return (next, true) }
            last = next
        }
        return (last, false)
    }
}
