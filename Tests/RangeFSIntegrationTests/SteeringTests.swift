import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Steering a running mount's cache: `rangefs pin`, `unpin`, `evict` and `verify`.
extension RangeFSIntegrationTests {
    @Test("rangefs pin fetches now and survives eviction under --cache-max-size; unpin; evict of one path and of everything drops the data and a later read fetches it again, byte-exact")
    func pinUnpinAndEvict() throws {
        let site = try ServedFiles(names: ["a.bin", "b.bin", "c.bin"], size: 2 << 20)
        defer { site.remove() }
        let mount = try fx.mount(site.names.map { ManifestLine(path: $0, url: site.server.url($0)) },
                                 options: ["--prefetch", "none", "--cache-max-size", "3M"])
        let log = site.server.accessLog

        Check.succeeded(mount.rangefs("pin", ["a.bin"]), "rangefs pin", mount: mount)
        let (pinned, fetched) = try mount.waitForStatus(timeout: 60) { $0.file("a.bin")?.state == "complete" }
        try #require(fetched, "a pinned file is fetched without being read:\n\(pinned)\(Check.daemonLog(mount))")

        // Reading two more files puts the cache over its limit: the others go, the pinned one stays.
        let afterPin = log.mark()
        for name in ["b.bin", "c.bin"] {
            #expect(SHA256.of(mount.path(name)).hash == site.sha256[name], "sha256 of \(name)")
        }
        let (held, kept) = try mount.waitForStatus(timeout: 10) { status in
            status.file("a.bin")?.state == "complete" && status.file("b.bin")?.cachedBytes == 0
        }
        #expect(kept, "a.bin should be kept and b.bin evicted:\n\(held)\(Check.daemonLog(mount))")
        #expect(mount.log().contains("evicted"), "nothing was evicted\(Check.daemonLog(mount))")
        #expect(SHA256.of(mount.path("a.bin")).hash == site.sha256["a.bin"])
        log.waitUntilQuiet()
        #expect(log.entries(for: "/a.bin", since: afterPin).isEmpty, "the pinned file was fetched again")

        // Unpinned, it can be evicted like any other file, and comes back on the next read.
        Check.succeeded(mount.rangefs("unpin", ["a.bin"]), "rangefs unpin", mount: mount)
        let before = try mount.statusSnapshot().cachedBytes
        let evictOne = Self.evictWhenClosed(mount, [mount.path("a.bin")])
        Check.succeeded(evictOne, "rangefs evict a.bin", mount: mount)
        #expect(!evictOne.stdout.contains("except"), "nothing was in use: \(evictOne)")
        let afterOne = try mount.statusSnapshot()
        #expect(afterOne.file("a.bin")?.cachedBytes == 0 && afterOne.cachedBytes == before - (2 << 20),
                "cached bytes \(before) before evicting a.bin:\n\(afterOne)")
        let beforeRead = log.mark()
        #expect(SHA256.of(mount.path("a.bin")).hash == site.sha256["a.bin"], "a.bin after its eviction")
        log.waitUntilQuiet()
        #expect(!log.entries(for: "/a.bin", since: beforeRead).isEmpty, "an evicted file was read without a request")

        // Evicting everything leaves nothing cached; every file still reads right.
        Check.succeeded(Self.evictWhenClosed(mount, []), "rangefs evict", mount: mount)
        let emptied = try mount.statusSnapshot()
        #expect(emptied.cachedBytes == 0, "after rangefs evict:\n\(emptied)")
        #expect(CacheDataFile.list(cacheDir: mount.cacheDir).isEmpty, "data files left after rangefs evict")
        let beforeRereads = log.mark()
        for name in site.names {
            #expect(SHA256.of(mount.path(name)).hash == site.sha256[name], "sha256 of \(name) after rangefs evict")
        }
        log.waitUntilQuiet()
        for name in site.names {
            #expect(!log.entries(for: "/" + name, since: beforeRereads).isEmpty, "\(name) was not fetched again")
        }
    }

    /// `rangefs evict`, again for a moment while it finds a file in use: the kernel tells the
    /// mount that a reader closed its file a little after the reader has exited.
    static func evictWhenClosed(_ mount: Mount, _ paths: [String]) -> CommandResult {
        var result = mount.rangefs("evict", paths)
        Poll.until(seconds: 2, every: 0.2) {
            guard result.succeeded && result.stdout.contains("except") else { return true }
            result = mount.rangefs("evict", paths)
            return false
        }
        return result
    }

    @Test("rangefs verify: a file rewritten on the server (new bytes, new ETag) is reported, completed again by the prefetcher and read new; an unchanged one is reported fine and not fetched")
    func verifyFindsAChangedFile() throws {
        let site = try ServedFiles(names: ["same.bin", "changing.bin"], size: 1 << 20)
        defer { site.remove() }
        let mount = try fx.mount(site.names.map { ManifestLine(path: $0, url: site.server.url($0)) })
        let (done, complete) = try mount.waitForStatus(timeout: 60) { $0.allComplete }
        try #require(complete, "the prefetcher should complete both files:\n\(done)\(Check.daemonLog(mount))")
        #expect(SHA256.of(mount.path("changing.bin")).hash == site.sha256["changing.bin"])

        let unchanged = mount.rangefs("verify", timeout: 60)
        Check.succeeded(unchanged, "rangefs verify", mount: mount)
        #expect(unchanged.stdout.contains("verified 2 cached file(s): all unchanged"), "\(unchanged)")

        let oldETag = Self.etag(of: site.server.url("changing.bin"))
        let newSum = try site.rewrite("changing.bin")
        let newETag = Self.etag(of: site.server.url("changing.bin"))
        try #require(oldETag != nil && oldETag != newETag, "the rewrite should change the ETag: \(String(describing: oldETag)) → \(String(describing: newETag))")

        let mark = site.server.accessLog.mark()
        let changed = mount.rangefs("verify", timeout: 60)
        #expect(changed.status == 1 && !changed.timedOut, "verify exits 1 when a file changed: \(changed)")
        #expect(changed.stdout.contains("changing.bin: changed (ETag was"), "verify should name the changed file: \(changed)")
        #expect(!changed.stdout.contains("same.bin"), "the unchanged file is fine: \(changed)")

        // With --prefetch all the new version is completed in the background, without a read.
        let (again, refilled) = try mount.waitForStatus(timeout: 60) { $0.allComplete }
        #expect(refilled, "the changed file should be completed again:\n\(again)\(Check.daemonLog(mount))")
        site.server.accessLog.waitUntilQuiet()
        #expect(!site.server.accessLog.entries(for: "/changing.bin", since: mark).filter { $0.method == "GET" }.isEmpty,
                "the new version was not fetched")
        #expect(SHA256.of(mount.path("changing.bin")).hash == newSum, "the read after verify gives the new bytes")
        #expect(SHA256.of(mount.path("same.bin")).hash == site.sha256["same.bin"])
        let sameRequests = site.server.accessLog.entries(for: "/same.bin", since: mark).filter { $0.method == "GET" }
        #expect(sameRequests.isEmpty, "the unchanged file was fetched again: \(sameRequests.map(\.description))")
    }
}

/// Random files in a doc root of their own, served by their own nginx, so a test may rewrite them.
struct ServedFiles {
    let dir: URL
    let names: [String]
    let size: Int
    let server: NginxServer
    let sha256: [String: String]

    init(names: [String], size: Int) throws {
        let dir = try Scratch.makeDir("served")
        var sums: [String: String] = [:]
        for name in names {
            sums[name] = try Self.write(name, size: size, in: dir)
        }
        self.dir = dir
        self.names = names
        self.size = size
        sha256 = sums
        server = try NginxServer(serving: dir)
    }

    /// Gives `name` new random bytes of the same size and a later mtime (so a new ETag);
    /// returns their sha256.
    func rewrite(_ name: String) throws -> String {
        let sum = try Self.write(name, size: size, in: dir)
        let later = Int(Date().timeIntervalSince1970) + 3600
        let touch = Command.run(["touch", "-d", "@\(later)", dir.appendingPathComponent(name).path], timeout: 15)
        guard touch.succeeded else { throw HarnessError("touch failed:\n\(touch)") }
        return sum
    }

    func remove() {
        server.stop()
        Scratch.remove(dir)
    }

    private static func write(_ name: String, size: Int, in dir: URL) throws -> String {
        let path = dir.appendingPathComponent(name).path
        // Written beside and renamed: nginx never serves half a file.
        let made = Command.run(["sh", "-c", "head -c \(size) /dev/urandom > \"$0.tmp\" && chmod a+r \"$0.tmp\" && mv \"$0.tmp\" \"$0\"", path],
                               timeout: 60)
        guard made.succeeded, let sum = SHA256.of(path).hash else { throw HarnessError("cannot make \(name):\n\(made)") }
        return sum
    }
}
