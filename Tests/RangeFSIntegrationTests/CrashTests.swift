import FaultServer
import Foundation
import RangeFSCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `kill -9` of the mount process at random moments while it fetches, again and again:
/// afterwards every file is byte-identical, and no block that had been committed before a
/// kill is ever asked for again.
extension RangeFSIntegrationTests {
    @Test("crash loop: 24 × kill -9 at a random moment of heavy fetching, remount at the same place; files identical, committed blocks never re-fetched")
    func crashLoop() throws {
        let rounds = 24
        let fileSize = 64 << 20
        let names = ["crash-a.bin", "crash-b.bin", "crash-c.bin"]
        let root = try Scratch.makeDir("crash-docroot")
        defer { Scratch.remove(root) }
        var originals: [String: String] = [:]
        for name in names {
            let path = root.appendingPathComponent(name).path
            let r = Command.run(["sh", "-c", "head -c \(fileSize) /dev/urandom > \"$0\"", path], timeout: 60)
            try #require(r.succeeded, "cannot generate \(name): \(r)")
            guard let hash = SHA256.of(path).hash else { throw HarnessError("cannot hash \(path)") }
            originals[name] = hash
        }
        // Throttled per request, so that a round of a second or two ends mid-transfer.
        let server = try NginxServer(serving: root, slowRate: "4m")
        let log = server.accessLog
        let entries = names.map { ManifestLine(path: $0, url: server.slowURL($0)) }
        let cacheDir = try fx.makeCacheDir()
        let mount = try fx.mount(entries, cacheDir: cacheDir, options: ["--prefetch", "all"], mount: false)
        let argv = [fx.binary, "mount", mount.manifestPath, mount.mountpoint, "--cache-dir", cacheDir.path,
                    "--prefetch", "all"]
        var random = SeededRandom(seed: UInt64(Date().timeIntervalSince1970))
        let started = Date()

        var durable: [String: DurableBlocks] = [:]      // what was committed before the current round
        var servedPerFile: [String: Int] = Dictionary(uniqueKeysWithValues: names.map { ($0, 0) })
        var refetchedBytes = 0
        var killsMidTransfer = 0
        var staleCleared = 0, staleNotCleared = 0
        var lostBlocks = 0
        var committedBefore = 0, roundsThatCommitted = 0

        for round in 1...rounds {
            let mark = log.mark()
            if round > 1 {
                // The previous daemon was killed: its mount is still in the table, but dead
                // (statfs always reaches the daemon; stat may be answered from cached attributes).
                #expect(mount.isMounted, "round \(round): the killed mount vanished from the mount table by itself")
                var info = statvfs()
                let probe = statvfs(mount.mountpoint, &info) == 0 ? 0 : errno
                #expect(probe == ENOTCONN, "round \(round): statfs of the stale mount gave errno \(probe), expected ENOTCONN")
            }
            // rangefs itself must clear the stale mount (no fusermount3 from the test) ...
            var r = Command.run(argv, timeout: 60)
            if round > 1 {
                if r.succeeded {
                    staleCleared += 1
                } else {
                    staleNotCleared += 1
                    if staleNotCleared == 1 {
                        Issue.record("round \(round): rangefs mount did not clear the stale mount left by kill -9: \(r)")
                    }
                    // ... but one such bug must not hide what the rest of the loop can show.
                    mount.clearStaleMount()
                    r = Command.run(argv, timeout: 60)
                }
            }
            guard r.succeeded, mount.isMounted else {
                Issue.record("round \(round): rangefs mount failed: \(r)\(Check.daemonLog(mount))")
                break
            }
            // Background transfers stand still for the mount grace (250 ms) after the mount: the
            // kill comes during the fetching that follows it, before or after the first commits
            // (due once the oldest uncommitted blocks are `commitInterval` old).
            let wait = FetchPolicy().mountGrace / .seconds(1) + Double(Int.random(in: 50...2000, using: &random)) / 1000
            Thread.sleep(forTimeInterval: wait)
            guard let pid = mount.daemonPid() else {
                Issue.record("round \(round): no daemon pid (root xattr user.rangefs.pid)")
                break
            }
            kill(pid, SIGKILL)
            #expect(ProcessInfo.waitForExit(pid, seconds: 10), "round \(round): pid \(pid) survived SIGKILL")

            // What this round asked for must not include blocks committed before it.
            log.waitUntilQuiet(quiet: 0.3, timeout: 5)
            let requests = log.entries(since: mark)
            var aborted = false
            for name in names {
                let mine = requests.filter { $0.path == "/slow/\(name)" }
                servedPerFile[name, default: 0] += mine.reduce(0) { $0 + $1.bodyBytesSent }
                for entry in mine where entry.method == "GET" {
                    let asked = entry.requestedRanges(fileSize: fileSize)
                    if let first = asked.first, entry.status == 206, entry.bodyBytesSent < first.count { aborted = true }
                    guard let blocks = durable[server.slowURL(name)] else { continue }
                    for range in asked {
                        let overlap = blocks.bytesCommitted(in: range)
                        if overlap > 0 {
                            refetchedBytes += overlap
                            Issue.record("round \(round): \(name) asked for \(range) although \(overlap) bytes of it were committed before the kill: \(entry)")
                        }
                    }
                }
            }
            if aborted { killsMidTransfer += 1 }

            // The committed blocks after the kill: never fewer than before.
            let after = try DurableBlocks.read(cacheDir: cacheDir)
            for (url, blocks) in durable {
                let lost = blocks.blocks.subtracting(after[url]?.blocks ?? [])
                if !lost.isEmpty {
                    lostBlocks += lost.count
                    Issue.record("round \(round): \(lost.count) committed blocks of \(url) are no longer committed")
                }
            }
            durable = after
            let committed = after.values.reduce(0) { $0 + $1.committedBytes }
            if committed > committedBefore { roundsThatCommitted += 1 }
            committedBefore = committed
            print("round \(round): killed after \(Int(wait * 1000)) ms, \(requests.count) requests\(aborted ? " (mid-transfer)" : ""), committed \(committed >> 20) MiB of \(names.count * fileSize >> 20) MiB")
        }
        let loopSeconds = Date().timeIntervalSince(started)

        // Now let it finish: the stale mount is cleared once more by rangefs itself.
        let mark = log.mark()
        var last = Command.run(argv, timeout: 60)
        if !last.succeeded {
            staleNotCleared += 1
            mount.clearStaleMount()
            last = Command.run(argv, timeout: 60)
        } else {
            staleCleared += 1
        }
        try #require(last.succeeded && mount.isMounted, "final mount: \(last)\(Check.daemonLog(mount))")
        let done = mount.waitForStatus(timeout: 120) { status in status.files.allSatisfy { $0.state == .complete } }
        #expect(done?.files.allSatisfy { $0.state == .complete } == true,
                "not complete after 120 s: \(String(describing: done?.files))\(Check.daemonLog(mount))")
        for name in names {
            #expect(SHA256.of(mount.path(name)).hash == originals[name], "\(name) through the mount differs from the original")
        }
        log.waitUntilQuiet()
        for entry in log.entries(since: mark) {
            let name = String(entry.path.dropFirst("/slow/".count))
            servedPerFile[name, default: 0] += entry.bodyBytesSent
            if let blocks = durable[server.slowURL(name)] {
                for range in entry.requestedRanges(fileSize: fileSize) where blocks.bytesCommitted(in: range) > 0 {
                    refetchedBytes += blocks.bytesCommitted(in: range)
                    Issue.record("final mount: \(name) asked for committed bytes in \(range): \(entry)")
                }
            }
        }
        Check.succeeded(mount.unmount(), "rangefs unmount")

        // The cache's own data files are the originals, byte for byte.
        let records = try DurableBlocks.records(cacheDir: cacheDir)
        for name in names {
            guard let record = records[server.slowURL(name)] else {
                Issue.record("no cache record for \(name)")
                continue
            }
            let dataPath = cacheDir.appendingPathComponent("data/\(record.dataName)").path
            #expect(record.state == .complete, "\(name): record state \(record.state)")
            #expect(SHA256.of(dataPath).hash == originals[name], "\(name): the cache data file \(dataPath) differs from the original")
        }

        // Bytes served: each file once, plus at most what can be in flight or not yet committed
        // per kill: what the downloads bring in a commit interval at 4 MiB/s each.
        let totalSize = names.count * fileSize
        let totalServed = servedPerFile.values.reduce(0, +)
        let chunk = 4 << 20, downloads = 3
        let uncommitted = Int(Double(downloads * 4 << 20) * (FetchPolicy().commitInterval / .seconds(1)))
        let perKill = downloads * chunk + uncommitted
        let bound = totalSize + rounds * perKill
        print("""
            crash loop: \(rounds) kills in \(String(format: "%.1f", loopSeconds)) s (\(killsMidTransfer) mid-transfer), \
            stale mount cleared by rangefs \(staleCleared) times, not cleared \(staleNotCleared) times
            bytes served: \(totalServed) (\(totalServed >> 20) MiB) for \(totalSize) (\(totalSize >> 20) MiB) of files, \
            i.e. \(String(format: "%.2f", Double(totalServed) / Double(totalSize)))×; per file: \
            \(names.map { "\($0) \(servedPerFile[$0, default: 0] >> 20) MiB" }.joined(separator: ", "))
            bound: size + rounds × (\(downloads) × \(chunk >> 20) MiB in flight + \(uncommitted >> 20) MiB uncommitted) = \(bound >> 20) MiB
            rounds whose kill found more committed than the round before: \(roundsThatCommitted) of \(rounds)
            committed bytes asked for again after a restart: \(refetchedBytes); committed blocks lost: \(lostBlocks)
            bytes verified: \(totalSize) through the mount and \(totalSize) in the cache's data files
            """)
        #expect(staleNotCleared == 0, "rangefs mount failed to clear the stale mount \(staleNotCleared) of \(rounds) times")
        #expect(refetchedBytes == 0)
        #expect(lostBlocks == 0)
        #expect(totalServed <= bound, "served \(totalServed) bytes, more than the bound \(bound)")
        #expect(roundsThatCommitted >= rounds / 6, "only \(roundsThatCommitted) of \(rounds) rounds committed anything before their kill: the loop did not test kills after commits")
        #expect(killsMidTransfer >= rounds / 2, "only \(killsMidTransfer) of \(rounds) kills landed during a transfer: the loop did not test crashes mid-fetch")
        #expect(loopSeconds < 150, "the kill loop took \(loopSeconds) s")
    }
}

/// The committed (durable) blocks of one file, as the cache database holds them.
struct DurableBlocks {
    let blockSize: Int
    let fileSize: Int
    let blocks: Set<Int>

    var committedBytes: Int {
        blocks.reduce(0) { total, block in total + min(blockSize, fileSize - block * blockSize) }
    }

    /// Bytes of `range` that lie in committed blocks.
    func bytesCommitted(in range: Range<Int>) -> Int {
        guard !range.isEmpty, blockSize > 0 else { return 0 }
        var total = 0
        for block in (range.lowerBound / blockSize)...((range.upperBound - 1) / blockSize) where blocks.contains(block) {
            let bytes = (block * blockSize)..<min((block + 1) * blockSize, fileSize)
            total += bytes.clamped(to: range).count
        }
        return total
    }

    /// Every record of the cache database at `cacheDir` (no mount may be using it).
    static func records(cacheDir: URL) throws -> [String: CachedFileRecord] {
        let store = try MetadataStore(path: cacheDir.appendingPathComponent("metadata.sqlite").path)
        return try store.allRecords()
    }

    static func read(cacheDir: URL) throws -> [String: DurableBlocks] {
        var result: [String: DurableBlocks] = [:]
        for (url, record) in try records(cacheDir: cacheDir) {
            let layout = BlockLayout(fileSize: record.size, blockSize: record.blockSize)
            guard let bitmap = BlockBitmap(blockCount: layout.blockCount, serialized: [UInt8](record.bitmap)) else {
                Issue.record("the bitmap of \(url) in the database is malformed")
                continue
            }
            let present = (0..<layout.blockCount).filter { bitmap.contains($0) }
            result[url] = DurableBlocks(blockSize: Int(record.blockSize), fileSize: Int(record.size), blocks: Set(present))
        }
        return result
    }
}

/// `kill -9` at the two moments between durable writes that the random loop above rarely
/// hits: the daemon stops itself there (`RANGEFS_STOP_AT`), the test kills it, and a remount
/// must read every file right without asking again for anything that was complete.
extension RangeFSIntegrationTests {
    @Test("crash points: kill -9 between promotion's rename and its commit, and between eviction's unlink and its commit; files read right after remount, complete files are not fetched again")
    func crashPoints() throws {
        let server = try FaultServer()
        let size = 3 << 20
        let files = ["done.bin", "promoted.bin", "evicted.bin"]
        let data = Dictionary(uniqueKeysWithValues: files.enumerated().map { index, name in
            (name, RandomBytes.make(count: size, seed: 0xC7A5 + UInt64(index)))
        })
        for name in files { server.publish(name, bytes: data[name]!) }
        let cacheDir = try fx.makeCacheDir()
        let mount = try fx.mount(server: server, names: files, cacheDir: cacheDir)

        // done.bin and evicted.bin complete before any crash.
        for name in ["done.bin", "evicted.bin"] {
            let out = Reading.whole(mount.path(name))
            #expect(out.succeeded && out.bytes == Data(data[name]!), "\(name): \(out)")
        }
        let complete = mount.waitForStatus(timeout: 30) { status in
            status.files.filter { $0.path != "promoted.bin" }.allSatisfy { $0.state == .complete }
        }
        try #require(complete != nil, "done.bin and evicted.bin did not complete\(Check.daemonLog(mount))")
        Check.succeeded(mount.unmount(), "unmount")

        // Promotion: the last commit of promoted.bin stops after the rename.
        // (The reader may be left waiting for its last bytes: the whole daemon stops there.)
        try killAtCrashPoint("promotion", mount: mount) {
            try BackgroundCommand(["cat", mount.path("promoted.bin")])
        }
        let promotedRecord = try #require(try DurableBlocks.records(cacheDir: cacheDir)[server.url("promoted.bin").absoluteString])
        #expect(promotedRecord.state != .complete, "the kill landed after the commit, not between rename and commit")

        // Eviction: `rangefs evict` of the complete evicted.bin stops after the unlink.
        try killAtCrashPoint("eviction", mount: mount) {
            try BackgroundCommand([fx.binary, "evict", mount.mountpoint, "evicted.bin"])
        }
        let evictedRecord = try #require(try DurableBlocks.records(cacheDir: cacheDir)[server.url("evicted.bin").absoluteString])
        #expect(evictedRecord.state == .complete, "the kill landed after the eviction's commit, not between unlink and commit")

        // After a remount: every file reads right, and done.bin is not asked for at all.
        server.resetLog()
        try mount.mount()
        let evictedState = XAttr.get(mount.path("evicted.bin"), "user.rangefs.state")
        #expect(evictedState != "complete", "evicted.bin passes for complete although its data is gone")
        for name in files {
            let out = Reading.whole(mount.path(name))
            #expect(out.succeeded && out.bytes == Data(data[name]!), "\(name) after the kill: \(out)\(Check.daemonLog(mount))")
        }
        let settled = mount.waitForStatus(timeout: 30) { $0.files.allSatisfy { $0.state == .complete } }
        #expect(settled != nil, "not every file completed after the remount\(Check.daemonLog(mount))")
        server.waitUntilQuiet()
        #expect(server.gets("done.bin").isEmpty, "a file complete before the kills was fetched again: \(server.gets("done.bin"))")
        #expect(!server.gets("evicted.bin").isEmpty, "evicted.bin was read without fetching its evicted data")
        for name in ["promoted.bin", "evicted.bin"] {
            let cached = XAttr.get(mount.path(name), "user.rangefs.state")
            #expect(cached == "complete", "\(name) state after the remount: \(cached ?? "none")")
        }
    }

    /// Mounts with `RANGEFS_STOP_AT=point`, runs `action` (which may start a command that
    /// blocks on the daemon), waits until the daemon stops itself there, kills it with
    /// SIGKILL and clears the stale mount.
    private func killAtCrashPoint(_ point: String, mount: Mount, _ action: () throws -> BackgroundCommand?) throws {
        let argv = ["env", "RANGEFS_STOP_AT=\(point)", mount.binary, "mount", mount.manifestPath, mount.mountpoint,
                    "--cache-dir", mount.cacheDir] + mount.options
        let mounted = Command.run(argv, timeout: 60)
        try #require(mounted.succeeded, "mount with RANGEFS_STOP_AT=\(point): \(mounted)")
        let pid = try #require(mount.daemonPid(), "no daemon pid")
        let command = try action()
        let stopped = Poll.until(seconds: 30) { ProcessInfo.isStopped(pid) }
        #expect(stopped, "the daemon never reached the \(point) crash point\(Check.daemonLog(mount))")
        kill(pid, SIGKILL)
        #expect(ProcessInfo.waitForExit(pid, seconds: 10), "pid \(pid) survived SIGKILL")
        if let command {
            let result = command.wait(timeout: 30)
            #expect(!result.timedOut, "\(command.argv.joined(separator: " ")) hung after the daemon died")
        }
        mount.clearStaleMount()
    }
}
