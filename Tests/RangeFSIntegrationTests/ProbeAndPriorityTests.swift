import Foundation
import Testing

/// Size probes that scale with the directory being listed, not the manifest, and foreground
/// reads that never wait for background transfers to give up a connection.
extension RangeFSIntegrationTests {
    /// A manifest with one directory too large to probe when listed (`FileCatalog.eagerListingLimit`
    /// is 256) and one small one; every name is a distinct URL of a file of known size.
    private func probeManifest() -> (entries: [ManifestLine], sizes: [String: Int]) {
        let sources = ["tail.bin", "block-plus-one.bin", "one.bin"]
        var entries: [ManifestLine] = []
        var sizes: [String: Int] = [:]
        for i in 0..<400 {
            let source = sources[i % sources.count]
            let path = String(format: "large/f%03d.bin", i)
            entries.append(ManifestLine(path: path, url: fx.nginx.url(source) + "?n=\(i)"))
            sizes[path] = fx.data.file(source).size
        }
        for i in 0..<5 {
            let source = sources[i % sources.count]
            let path = "small/s\(i).bin"
            entries.append(ManifestLine(path: path, url: fx.nginx.url(source) + "?s=\(i)"))
            sizes[path] = fx.data.file(source).size
        }
        return (entries, sizes)
    }

    @Test("listing a large directory's names sends no request; stat of one of its files probes it and shows its true size; ls -l of a small directory shows true sizes")
    func sizesAreProbedLazily() throws {
        let (entries, sizes) = probeManifest()
        let mount = try fx.mount(entries, options: Fixture.readsOnly)
        let log = fx.nginx.accessLog

        var mark = log.mark()
        let names = Command.run(["ls", "-1", "--color=never", mount.path("large")], timeout: 30)
        if Check.succeeded(names, "ls large", mount: mount) {
            #expect(names.stdout.split(separator: "\n").count == 400, "ls large listed:\n\(names.stdout.prefix(300))")
        }
        log.waitUntilQuiet()
        let listingRequests = log.entries(since: mark)
        #expect(listingRequests.isEmpty, "listing 400 names sent \(listingRequests.count) requests:\n\(listingRequests.prefix(10).map(\.description).joined(separator: "\n"))")

        mark = log.mark()
        let statted = "large/f123.bin"
        let stat = Command.run(["stat", "-c", "%s", mount.path(statted)], timeout: 30)
        if Check.succeeded(stat, "stat \(statted)", mount: mount) {
            #expect(Int(stat.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) == sizes[statted], "stat size: \(stat.stdout)")
        }
        log.waitUntilQuiet()
        let statRequests = log.entries(since: mark)
        #expect(statRequests.contains { $0.uri.hasSuffix("?n=123") }, "the stat did not probe its file:\n\(statRequests.map(\.description).joined(separator: "\n"))")
        // The file itself plus a few names after it (look-ahead for `ls -l`), never the directory.
        #expect(statRequests.count <= 1 + 8, "one stat sent \(statRequests.count) requests")
        #expect(statRequests.allSatisfy { $0.method == "HEAD" || $0.range == "bytes=0-0" }, "a stat fetched data")

        let small = Command.run(["ls", "-la", "--time-style=+%s", mount.path("small")], timeout: 30)
        if Check.succeeded(small, "ls -l small", mount: mount) {
            let listed = LsListing.parse(small.stdout).filter { !$0.isDirectory }
            #expect(listed.count == 5, "ls -l small:\n\(small.stdout)")
            for item in listed {
                #expect(item.size == sizes["small/\(item.name)"], "ls -l small: size of \(item.name)\n\(small.stdout)")
            }
        }

        // ls -l of the large directory: every size right, found by look-ups (with look-ahead).
        let large = Command.run(["ls", "-la", "--time-style=+%s", mount.path("large")], timeout: 120)
        if Check.succeeded(large, "ls -l large", mount: mount) {
            let listed = LsListing.parse(large.stdout).filter { !$0.isDirectory }
            #expect(listed.count == 400, "ls -l large listed \(listed.count) files")
            let wrong = listed.filter { $0.size != sizes["large/\($0.name)"] }
            #expect(wrong.isEmpty, "ls -l large: wrong sizes for \(wrong.prefix(5).map(\.name))")
        }
        print("lazy probes: ls of 400 names \(formatMillis(names.seconds)), stat \(formatMillis(stat.seconds)), ls -l of 5 \(formatMillis(small.seconds)), ls -l of 400 \(formatMillis(large.seconds))")
    }

    @Test("sizes found by probes are kept in the cache database: after a remount, stat and ls -l send no request")
    func probedSizesSurviveRemount() throws {
        let (entries, sizes) = probeManifest()
        let cache = try fx.makeCacheDir()
        let first = try fx.mount(entries, cacheDir: cache, options: Fixture.readsOnly)
        let probed = ["large/f007.bin", "large/f300.bin", "small/s2.bin"]
        for path in probed {
            Check.succeeded(Command.run(["stat", first.path(path)], timeout: 30), "stat \(path)", mount: first)
        }
        Check.succeeded(Command.run(["ls", "-l", first.path("small")], timeout: 30), "ls -l small", mount: first)
        #expect(first.unmount().succeeded, "unmount")

        let log = fx.nginx.accessLog
        let mark = log.mark()
        let again = try fx.mount(entries, cacheDir: cache, options: Fixture.readsOnly)
        for path in probed {
            let r = Command.run(["stat", "-c", "%s", again.path(path)], timeout: 30)
            if Check.succeeded(r, "stat \(path) after remount", mount: again) {
                #expect(Int(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) == sizes[path], "\(path): \(r.stdout)")
            }
        }
        let small = Command.run(["ls", "-l", again.path("small")], timeout: 30)
        Check.succeeded(small, "ls -l small after remount", mount: again)
        log.waitUntilQuiet()
        let requests = log.entries(since: mark)
        #expect(requests.isEmpty, "after a remount, sizes probed before were asked again (\(requests.count) requests):\n\(requests.prefix(10).map(\.description).joined(separator: "\n"))")
    }

    @Test("with --max-downloads 12 (more than the 8 connections per host) and every background transfer busy, a cold 4 KiB read of another file returns within 5 s")
    func foregroundReadFindsAConnection() throws {
        // Twelve names for the 100 MiB file behind the 64 KiB/s location: each background
        // chunk of 4 MiB takes about a minute, so background work would fill every connection.
        let tail = fx.data.file("tail.bin")
        let entries = (1...12).map { ManifestLine(path: "big-\($0).bin", url: fx.nginx.slowURL("big.bin") + "?copy=\($0)") }
            + [ManifestLine(path: "other.bin", url: fx.nginx.slowURL("tail.bin"))]
        let mount = try fx.mount(entries, options: ["--max-downloads", "12"])

        // The prefetcher stays on one file until all of it is on its way: several chunks of
        // big-1 move at once, 64 KiB/s each.
        let perTransfer = 65_536
        let (busy, met) = try mount.waitForStatus(timeout: 30, interval: 0.5) { status in
            status.files.filter { $0.path.hasPrefix("big-") }.reduce(0) { $0 + $1.bytesPerSecond } >= 4 * perTransfer
        }
        try #require(met, "the prefetcher did not get busy within 30 s:\n\(busy)\n\(mount.logTail())")
        let r = Command.run(["dd", "if=\(mount.path("other.bin"))", "iflag=skip_bytes,count_bytes", "bs=4096",
                             "skip=8192", "count=4096", "status=none"], timeout: 90)
        print("connection reserve: cold 4 KiB read during 12 background transfers took \(formatMillis(r.seconds))")
        if Check.succeeded(r, "dd other.bin", mount: mount) {
            #expect(r.stdoutData == (try tail.bytes(offset: 8192, length: 4096)), "bytes of other.bin")
        }
        #expect(r.seconds < 5, "a cold 4 KiB read took \(r.seconds) s while the background held the connections (bound 5 s)\n\(mount.logTail())")
        // Background transfers beyond the per-host limit less the foreground reserve wait their
        // turn: 6 at 64 KiB/s, not 12 (or 8).
        let rate = busy.files.filter { $0.path.hasPrefix("big-") }.reduce(0) { $0 + $1.bytesPerSecond }
        #expect(rate < 7 * perTransfer, "background moved \(rate) B/s: more than 6 transfers of 64 KiB/s at once\n\(busy)")
    }
}
