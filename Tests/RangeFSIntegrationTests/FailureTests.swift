import Foundation
import RangeFSCore
import Testing

/// Writes, broken servers and broken manifests.
extension RangeFSIntegrationTests {
    @Test("writes, creates, deletes, renames and mkdir fail with 'Read-only file system'")
    func mountIsReadOnly() throws {
        let mount = try fx.mount(fx.standardEntries)
        let file = mount.path("one.bin")
        let attempts: [(String, [String])] = [
            ("overwrite", ["sh", "-c", "echo x > \"$0\"", file]),
            ("append", ["sh", "-c", "echo x >> \"$0\"", file]),
            ("truncate", ["truncate", "-s", "0", file]),
            ("touch new", ["touch", mount.path("new-file")]),
            ("rm", ["rm", "-f", file]),
            ("mv", ["mv", file, mount.path("renamed.bin")]),
            ("mkdir", ["mkdir", mount.path("new-dir")]),
            ("ln -s", ["ln", "-s", "one.bin", mount.path("link")]),
        ]
        for (what, argv) in attempts {
            let r = Command.run(argv, timeout: 30)
            #expect(!r.succeeded && r.stderr.contains("Read-only file system"), "\(what) should fail with EROFS: \(r)")
        }
        #expect(SHA256.of(file).hash == fx.data.file("one.bin").sha256, "one.bin changed")
        let ls = Command.run(["ls", "-a", mount.mountpoint], timeout: 30)
        for name in ["new-file", "renamed.bin", "new-dir", "link"] {
            #expect(!ls.stdout.split(separator: "\n").contains(Substring(name)), "\(name) appeared in the mount")
        }
    }

    @Test("404, 500 and a closed port fail the read with EIO in bounded time; other files still read")
    func brokenServersGiveEIO() throws {
        let closedPort = try FreePort.pick()   // nothing listens there
        let bad: [(path: String, url: String, status: String?)] = [
            ("errors/missing.bin", fx.nginx.statusURL(404, "missing.bin"), "404"),
            ("errors/broken.bin", fx.nginx.statusURL(500, "broken.bin"), "500"),
            ("errors/unreachable.bin", "http://127.0.0.1:\(closedPort)/unreachable.bin", nil),
        ]
        let good = [fx.data.file("one.bin"), fx.data.file("tail.bin")]
        let entries = bad.map { ManifestLine(path: $0.path, url: $0.url) }
            + good.map { ManifestLine(path: $0.name, url: fx.nginx.url($0.name)) }
        let mount = try fx.mount(entries)

        for entry in bad {
            for attempt in 1...2 {   // a failure is not cached as data
                let r = Command.run(["cat", mount.path(entry.path)], timeout: 90)
                #expect(!r.timedOut, "cat \(entry.path) hung: \(r)")
                #expect(r.status != 0 && r.stderr.contains("Input/output error"),
                        "cat \(entry.path) (attempt \(attempt)) should fail with EIO: \(r)\(Check.daemonLog(mount))")
                #expect(r.stdoutData.isEmpty, "cat \(entry.path) printed bytes of a file that cannot be fetched")
                #expect(r.seconds < 30, "cat \(entry.path) took \(r.seconds) s")
                print("cat \(entry.path) (attempt \(attempt)): exit \(r.status) after \(String(format: "%.2f", r.seconds)) s")
            }
            #expect(mount.isMounted, "the mount went away after reading \(entry.path)")
        }
        for file in good {
            #expect(SHA256.of(mount.path(file.name)).hash == file.sha256, "\(file.name) after the failures")
        }
        let ls = Command.run(["ls", "-la", mount.mountpoint], timeout: 30)
        Check.succeeded(ls, "ls -la after the failures", mount: mount)

        let log = mount.log()
        for entry in bad {
            let path = URL(string: entry.url)!.path
            #expect(log.contains(path) || log.contains(entry.url), "the daemon log does not name \(entry.url)\(Check.daemonLog(mount))")
            if let status = entry.status {
                // The status must be in the log apart from the URL, which contains it too.
                let withoutURLs = log.replacingOccurrences(of: "/status/\(status)/", with: "/status/-/")
                #expect(withoutURLs.contains(status), "the daemon log does not give status \(status) for \(entry.url)\(Check.daemonLog(mount))")
            }
        }
    }

    @Test("a file that vanishes after lookup, then a server that goes away: uncached reads fail with EIO, cached blocks still read")
    func serverChangesAfterLookup() throws {
        // A server of its own, whose doc root this test may change; big.bin is large
        // enough that read-ahead leaves most of it unfetched.
        let big = fx.data.file("big.bin")
        let block = TestData.blockSize
        let root = try Scratch.makeDir("docroot")
        defer { Scratch.remove(root) }
        let served = root.appendingPathComponent("big.bin")
        do { try FileManager.default.linkItem(at: big.url, to: served) } catch {
            try FileManager.default.copyItem(at: big.url, to: served)
        }
        let server = try NginxServer(serving: root)
        try withExtendedLifetime(server) {
            let mount = try fx.mount([ManifestLine(path: "big.bin", url: server.url("big.bin"))],
                                     options: Fixture.readsOnly)
            let path = mount.path("big.bin")
            let head = Check.ddRead(path, offset: 0, length: 4096)
            if Check.succeeded(head, "first read", mount: mount) {
                #expect(head.stdoutData == (try big.bytes(offset: 0, length: 4096)))
            }
            let vanishAt = 200 * block + 10, downAt = 300 * block + 10
            server.accessLog.waitUntilQuiet()
            let fetched = server.accessLog.entries().compactMap { $0.servedRange(fileSize: big.size) }
            for offset in [vanishAt, downAt] where fetched.contains(where: { $0.contains(offset) }) {
                Issue.record("offset \(offset) was fetched before it was read (prefetch?): this test cannot show the failure there")
            }

            // The file disappears from the server (404 from now on).
            try FileManager.default.removeItem(at: served)
            let gone = Check.ddRead(path, offset: vanishAt, length: 1000, timeout: 90)
            #expect(!gone.timedOut && gone.status != 0 && gone.stderr.contains("Input/output error"),
                    "read of an uncached block of a file gone from the server (404) should fail with EIO: \(gone)\(Check.daemonLog(mount))")
            #expect(gone.stdoutData.isEmpty, "got \(gone.stdoutData.count) bytes for a block the server no longer has")
            #expect(gone.seconds < 30, "the failing read took \(gone.seconds) s")

            // The server goes away (connection refused from now on).
            server.stop()
            let down = Check.ddRead(path, offset: downAt, length: 1000, timeout: 90)
            #expect(!down.timedOut && down.status != 0 && down.stderr.contains("Input/output error"),
                    "read of an uncached block with the server down should fail with EIO: \(down)\(Check.daemonLog(mount))")
            #expect(down.stdoutData.isEmpty, "got \(down.stdoutData.count) bytes with the server down")
            #expect(down.seconds < 30, "the failing read took \(down.seconds) s")

            // What was fetched before is still there, and the mount is still up.
            let again = Check.ddRead(path, offset: 100, length: 3000)
            if Check.succeeded(again, "read of the cached block 0 with the server down", mount: mount) {
                #expect(again.stdoutData == (try big.bytes(offset: 100, length: 3000)))
            }
            #expect(mount.isMounted)
            print("vanished file: read failed after \(String(format: "%.2f", gone.seconds)) s; server down: after \(String(format: "%.2f", down.seconds)) s")
        }
    }

    @Test("a bad manifest: rangefs mount exits non-zero naming file and line, and mounts nothing",
          arguments: BadManifest.cases)
    func badManifestMountsNothing(_ bad: BadManifest) throws {
        let text = bad.lines.map { $0.replacingOccurrences(of: "BASE", with: fx.nginx.baseURL) }
            .joined(separator: "\n") + "\n"
        let mount = try fx.prepare(manifest: text, name: "bad.txt")
        let r = mount.tryMount(timeout: 60)
        #expect(!r.timedOut && r.status != 0, "\(bad.name): rangefs mount should fail: \(r)")
        #expect(r.stderr.contains("bad.txt:\(bad.line):"), "\(bad.name): stderr should name bad.txt:\(bad.line): \(r)")
        if let word = bad.mentions {
            #expect(r.stderr.contains(word), "\(bad.name): stderr should mention \(word): \(r)")
        }
        #expect(!mount.isMounted, "\(bad.name): something was mounted at \(mount.mountpoint)")
        #expect(mount.daemonPids().isEmpty, "\(bad.name): a daemon is running")
    }

    @Test("rangefs unmount of a mount a program holds open says which command names the program, and unmounts once it lets go")
    func unmountWhileAFileIsOpen() throws {
        let mount = try fx.mount(fx.standardEntries)
        let held = try #require(FileHandle(forReadingAtPath: mount.path("one.bin")))
        let busy = Command.run([fx.binary, "unmount", mount.mountpoint], timeout: 60)
        #expect(!busy.succeeded && busy.stderr.contains("fuser -vm \(mount.mountpoint)"), "\(busy)")
        #expect(mount.isMounted, "still mounted while the file is open")
        try held.close()
        let done = Command.run([fx.binary, "unmount", mount.mountpoint], timeout: 60)
        #expect(done.succeeded && !mount.isMounted, "\(done)")
    }

    @Test("rangefs mount onto a missing directory fails with a message and mounts nothing")
    func mountOntoMissingDirectoryFails() throws {
        let mount = try fx.mount([ManifestLine(path: "one.bin", url: fx.nginx.url("one.bin"))], mount: false)
        let missing = mount.mountpoint + "-missing"
        let r = Command.run([fx.binary, "mount", mount.manifestPath, missing, "--cache-dir", mount.cacheDir], timeout: 60)
        #expect(!r.timedOut && r.status != 0, "mount onto \(missing) should fail: \(r)")
        #expect(!r.stderr.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "no message on stderr: \(r)")
        #expect(!MountTable.isMounted(missing))
    }

    @Test("rangefs --version prints the version and the commit, or that the build recorded none")
    func versionFlag() throws {
        let r = Command.run([fx.binary, "--version"], timeout: 30)
        #expect(r.succeeded, "\(r)")
        let line = r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(line.hasPrefix("\(RangeFSVersion.current) (commit "), "not the version with a commit: \(line)")
    }
}

/// A manifest that must be rejected, with the line the error must name.
struct BadManifest: Sendable, CustomTestStringConvertible {
    let name: String
    /// Lines of the manifest; "BASE" becomes the nginx base URL.
    let lines: [String]
    let line: Int
    let mentions: String?

    var testDescription: String { name }

    static let cases: [BadManifest] = [
        BadManifest(name: "ftp scheme", lines: ["BASE/one.bin", "ftp://127.0.0.1/one.bin"], line: 2, mentions: "ftp"),
        BadManifest(name: "path with ..", lines: ["# files", "a.bin\tBASE/one.bin", "../escape.bin\tBASE/one.bin"],
                    line: 3, mentions: nil),
        BadManifest(name: "duplicate path", lines: ["x.bin\tBASE/one.bin", "", "x.bin\tBASE/tail.bin"],
                    line: 3, mentions: nil),
        BadManifest(name: "malformed URL", lines: ["BASE/one.bin", "http://"], line: 2, mentions: nil),
    ]
}
