import Foundation
import Testing

/// A directory on a real OpenSSH server (sshd on 127.0.0.1 with keys made for the run) mounted
/// by its `sftp://` address: exact sizes and dates from the listing with no request per file,
/// byte-exact reads of awkward names, ranged reads, symbolic links, a file changed between
/// reads, a remount with the server gone; and the mount refused with the reason for an unknown
/// or changed host key, a key the server does not take, and addresses that are no directory.
extension RangeFSIntegrationTests {
    /// The awkward tree with a date set on each file, as the mount must show it.
    private static func datedTree() throws -> URL {
        let tree = try Scratch.makeDir("sftp-tree")
        try AwkwardTree.make(in: tree, big: false)
        var date = 1_700_000_000
        for relative in try filesOnDisk(below: tree).keys.sorted() {
            date += 3_601
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: TimeInterval(date))],
                                                  ofItemAtPath: tree.appendingPathComponent(relative).path)
        }
        return tree
    }

    @Test("SFTP: a directory mounts, ls shows every size and mtime exactly before any file is opened, every file reads byte-exact")
    func sftpMountsAndReadsByteExact() throws {
        let tree = try Self.datedTree()
        let server = try SSHServer()
        defer { server.stop() }
        let mount = try fx.prepare(source: server.address(tree.path + "/"), options: ["--prefetch", "none"] + server.signInOptions)
        try mount.mount()

        try Self.expectNamesShown(of: tree, in: mount, "sftp")
        for relative in try Self.filesOnDisk(below: tree).keys.sorted() {
            let mounted = try FileManager.default.attributesOfItem(atPath: mount.path(relative))
            let original = try FileManager.default.attributesOfItem(atPath: tree.appendingPathComponent(relative).path)
            #expect(mounted[.size] as? NSNumber == original[.size] as? NSNumber, "size of \(relative)")
            #expect(mounted[.modificationDate] as? Date == original[.modificationDate] as? Date, "mtime of \(relative)")
        }
        let counters = try mount.metricsCounters()
        let requests = counters.filter { $0.key.hasPrefix("rangefs_http_requests_total") }.values.reduce(0, +)
        #expect(requests == 0, "listing the tree and stat of every file read no file: \(counters)")
        try Self.expectBytesShown(of: tree, in: mount, "sftp")
        #expect(mount.unmount().succeeded)

        // `rangefs manifest` lists the same tree, as sftp:// URLs a mount reads unchanged.
        let listed = Command.run([fx.binary, "manifest"] + server.signInOptions + [server.address(tree.path + "/")])
        #expect(listed.succeeded && listed.stdout.contains("sub dir/inner.txt\t\(server.address(tree.path + "/"))sub%20dir/inner.txt"),
                "\(listed)")
    }

    @Test("SFTP: kill -9 of the mount while it fetches, remount on the same cache: the file completes byte-exact")
    func sftpSurvivesKillNine() throws {
        let tree = try Scratch.makeDir("sftp-tree")
        let bytes = RandomBytes.make(count: 24 << 20, seed: 0x99)
        try Data(bytes).write(to: tree.appendingPathComponent("file.bin"))
        let server = try SSHServer()
        defer { server.stop() }
        let cache = try fx.makeCacheDir()
        let first = try fx.prepare(source: server.address(tree.path + "/"), cacheDir: cache, options: ["--max-rate", "4M"] + server.signInOptions)
        try first.mount()
        let head = Reading.range(first.path("file.bin"), offset: 0, length: 65536)
        #expect(head.succeeded && head.bytes == Data(bytes[0..<65536]), "\(head)\(Check.daemonLog(first))")
        // Killed once background completion has brought part of the file, not all of it.
        #expect(Poll.until(seconds: 30, every: 0.05) { ((try? first.metricsCounters())?["rangefs_cached_bytes"] ?? 0) >= Double(2 << 20) },
                "background completion never started\(Check.daemonLog(first))")
        let pid = try #require(first.daemonPid())
        kill(pid, SIGKILL)
        #expect(ProcessInfo.waitForExit(pid, seconds: 10), "pid \(pid) survived SIGKILL")

        let again = try fx.prepare(source: server.address(tree.path + "/"), cacheDir: cache, options: ["--prefetch", "none"] + server.signInOptions)
        try again.mount()
        let whole = Reading.whole(again.path("file.bin"))
        #expect(whole.succeeded && whole.bytes == Data(bytes), "\(whole.bytes.count) bytes\(Check.daemonLog(again))")
        #expect(again.unmount().succeeded)
    }

    /// A tree holding one file of 16 MiB of random bytes, `big.bin`, and its bytes.
    private static func treeWithABigFile(seed: UInt64) throws -> (tree: URL, bytes: [UInt8]) {
        let tree = try Scratch.makeDir("sftp-tree")
        let bytes = RandomBytes.make(count: 16 << 20, seed: seed)
        try Data(bytes).write(to: tree.appendingPathComponent("big.bin"))
        return (tree, bytes)
    }

    @Test("SFTP: a read of 4 KiB at an offset of a file of 16 MiB brings a range, not the file")
    func sftpReadsARange() throws {
        let (tree, bytes) = try Self.treeWithABigFile(seed: 0x5F)
        let server = try SSHServer()
        defer { server.stop() }
        let mount = try fx.prepare(source: server.address(tree.path + "/"), options: ["--prefetch", "none"] + server.signInOptions)
        try mount.mount()
        let offset = 11 << 20
        let read = Reading.range(mount.path("big.bin"), offset: offset, length: 4096)
        #expect(read.succeeded && read.bytes == Data(bytes[offset..<(offset + 4096)]), "\(read)\(Check.daemonLog(mount))")
        #expect(mount.transfersEnded(), "the read's transfers never ended\(Check.daemonLog(mount))")
        let counters = try mount.metricsCounters()
        let fetched = counters.filter { $0.key.hasPrefix("rangefs_fetched_bytes_total") }.values.reduce(0, +)
        print("sftp: 4 KiB read at 11 MiB of a 16 MiB file fetched \(Int(fetched)) bytes")
        #expect(fetched >= 4096 && fetched <= Double(4 << 20), "\(fetched) bytes fetched for 4 KiB of 16 MiB: \(counters)")
        #expect(mount.unmount().succeeded)
    }

    @Test("SFTP: a file read whole costs the server about its size in reads, not the reads libssh2 sends past each range's end")
    func sftpReadsLittlePastEachRange() throws {
        let (tree, bytes) = try Self.treeWithABigFile(seed: 0x6A)
        let size = bytes.count
        let server = try SSHServer(logsReads: true)
        defer { server.stop() }
        let mount = try fx.prepare(source: server.address(tree.path + "/"), options: ["--prefetch", "none"] + server.signInOptions)
        try mount.mount()
        let whole = Reading.whole(mount.path("big.bin"))
        #expect(whole.succeeded && whole.bytes == Data(bytes), "\(whole.bytes.count) bytes\(Check.daemonLog(mount))")
        #expect(mount.unmount().succeeded)
        // Each handle is logged as it closes: wait for the file's bytes, then for the log to settle
        // (the sessions end with the mount).
        #expect(Poll.until(seconds: 30, every: 0.05) { server.bytesRead >= size },
                "the server logged \(server.bytesRead) bytes read:\n\(server.readsLogText.suffix(3000))")
        var last = -1
        _ = Poll.until(seconds: 10, every: 0.25) {
            defer { last = server.bytesRead }
            return server.bytesRead == last
        }
        let read = server.bytesRead
        print("sftp: reading 16 MiB whole made the server read \(read) bytes")
        // Before, libcurl's 512 KiB buffer had libssh2 keep 2 MiB of reads in flight past each
        // range's end: the server read about twice the file.
        #expect(read >= size && read <= size + size / 4, "the server read \(read) bytes for \(size)")
    }

    @Test("SFTP: a symbolic link inside the tree shows what it points to; one pointing outside is left out, and the log says why")
    func sftpFollowsLinksInsideTheTreeOnly() throws {
        let tree = try Scratch.makeDir("sftp-tree")
        let outside = try Scratch.makeDir("sftp-outside")
        try Data("target".utf8).write(to: tree.appendingPathComponent("target.txt"))
        try FileManager.default.createDirectory(at: tree.appendingPathComponent("real dir"), withIntermediateDirectories: true)
        try Data("deep".utf8).write(to: tree.appendingPathComponent("real dir/deep.txt"))
        try Data("secret".utf8).write(to: outside.appendingPathComponent("secret.txt"))
        try FileManager.default.createSymbolicLink(atPath: tree.appendingPathComponent("link.txt").path, withDestinationPath: "target.txt")
        try FileManager.default.createSymbolicLink(atPath: tree.appendingPathComponent("dir link").path, withDestinationPath: "real dir")
        try FileManager.default.createSymbolicLink(atPath: tree.appendingPathComponent("escape.txt").path,
                                                   withDestinationPath: outside.appendingPathComponent("secret.txt").path)
        try FileManager.default.createSymbolicLink(atPath: tree.appendingPathComponent("escape dir").path, withDestinationPath: outside.path)
        try FileManager.default.createSymbolicLink(atPath: tree.appendingPathComponent("real dir/up").path, withDestinationPath: "..")
        // Two directories linking to each other: x/l is y, in which m (x again) is left out.
        for directory in ["x", "y"] {
            try FileManager.default.createDirectory(at: tree.appendingPathComponent(directory), withIntermediateDirectories: true)
        }
        try Data("y".utf8).write(to: tree.appendingPathComponent("y/file.txt"))
        try FileManager.default.createSymbolicLink(atPath: tree.appendingPathComponent("x/l").path, withDestinationPath: "../y")
        try FileManager.default.createSymbolicLink(atPath: tree.appendingPathComponent("y/m").path, withDestinationPath: "../x")
        let server = try SSHServer()
        defer { server.stop() }
        let mount = try fx.prepare(source: server.address(tree.path + "/"), options: ["--prefetch", "none"] + server.signInOptions)
        try mount.mount()
        let top = Command.run(["ls", "-1", "--", mount.mountpoint])
        #expect(Set(top.stdout.split(separator: "\n").map(String.init)) == ["target.txt", "real dir", "link.txt", "dir link", "x", "y"],
                "\(top)\(Check.daemonLog(mount))")
        let link = try FileManager.default.attributesOfItem(atPath: mount.path("link.txt"))
        #expect(link[.type] as? FileAttributeType == .typeRegular && (link[.size] as? NSNumber)?.intValue == 6, "\(link)")
        #expect((try? String(contentsOfFile: mount.path("link.txt"), encoding: .utf8)) == "target")
        #expect((try? String(contentsOfFile: mount.path("dir link/deep.txt"), encoding: .utf8)) == "deep", "\(Check.daemonLog(mount))")
        let inner = Command.run(["ls", "-1", "--", mount.path("real dir")])
        #expect(inner.succeeded && inner.stdout == "deep.txt\n", "a link up the tree is left out: \(inner)\(Check.daemonLog(mount))")
        #expect(!mount.logLines(containing: "/up: a symbolic link to a directory above it is left out").isEmpty, "\(Check.daemonLog(mount))")
        let cycle = Command.run(["ls", "-1", "--", mount.path("x/l")])
        #expect(cycle.succeeded && cycle.stdout == "file.txt\n", "x/l is y without m, which leads back: \(cycle)\(Check.daemonLog(mount))")
        #expect(Command.run(["ls", "-1", "--", mount.path("y")]).stdout == "file.txt\nm\n", "y shows m, which is x")
        // The top is listed before the mount runs in the background: its notes reach the terminal.
        let noted = (mount.log() + (mount.mountResults.last?.stderr ?? "")).split(separator: "\n")
            .filter { $0.contains("symbolic link out of the mounted tree") }
        #expect(noted.contains { $0.hasSuffix("/escape.txt: a symbolic link out of the mounted tree (or to nothing) is left out") }
                && noted.contains { $0.contains("/escape dir: a symbolic link out") }, "\(noted)\(Check.daemonLog(mount))")
        #expect(mount.unmount().succeeded)
    }

    @Test("SFTP: an unknown or changed host key, a key the server does not take, no server, no such path, a file and a directory past --max-listed-entries are refused at mount with the reason")
    func sftpRefusals() throws {
        let tree = try Scratch.makeDir("sftp-tree")
        try Data("x".utf8).write(to: tree.appendingPathComponent("file.txt"))
        let server = try SSHServer()
        defer { server.stop() }
        let root = server.address(tree.path + "/")
        func refusal(_ source: String, _ options: [String]) throws -> CommandResult {
            let mount = try fx.prepare(source: source, options: options)
            let result = mount.tryMount()
            #expect(!result.succeeded && !mount.isMounted, "\(source) must not mount: \(result)")
            return result
        }
        let unknown = try refusal(root, ["--identity", server.userKey, "--known-hosts", server.unknownHosts])
        #expect(unknown.stderr.contains("is not in \(server.unknownHosts)")
                && unknown.stderr.contains("ssh-keyscan -p \(server.port) 127.0.0.1 >> \(server.unknownHosts)"), "\(unknown)")
        let changed = try refusal(root, ["--identity", server.userKey, "--known-hosts", server.otherHostsKey])
        #expect(changed.stderr.contains("NOT the one in") && changed.stderr.contains("man-in-the-middle"), "\(changed)")
        let stranger = try refusal(root, ["--identity", server.strangerKey, "--known-hosts", server.knownHosts])
        #expect(stranger.stderr.contains("authentication failed") && stranger.stderr.contains("the key \(server.strangerKey) was refused"),
                "\(stranger)")
        let nobody = try refusal("sftp://\(server.user)@127.0.0.1:\(try FreePort.pick())/srv/", server.signInOptions)
        #expect(nobody.stderr.contains("Connection refused"), "\(nobody)")
        let missing = try refusal(server.address(tree.path + "/no-such-dir/"), server.signInOptions)
        #expect(missing.stderr.contains("no such file or directory"), "\(missing)")
        let file = try refusal(server.address(tree.path + "/file.txt"), server.signInOptions)
        #expect(file.stderr.contains("is not a directory"), "\(file)")
        for index in 0..<20 { try Data().write(to: tree.appendingPathComponent("more-\(index).txt")) }
        let crowded = try refusal(root, server.signInOptions + ["--max-listed-entries", "10"])
        #expect(crowded.stderr.contains("more than 10 entries") && crowded.stderr.contains("--max-listed-entries"), "\(crowded)")
    }

    @Test("SFTP: a server that takes the connection and never answers fails the mount within the mount's timeout, with the reason")
    func sftpSilentServerTimesOut() throws {
        let port = try FreePort.pick()
        // Accepts every connection and says nothing: no SSH banner, no handshake.
        let silent = try BackgroundCommand(["python3", "-c", """
            import socket, sys, time
            s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8); held = []
            while True: held.append(s.accept()[0])
            """, String(port)])
        defer { silent.kill() }
        #expect(Poll.until(seconds: 10, every: 0.05) { FreePort.answers(port) }, "the silent server did not listen")
        let mount = try fx.prepare(source: "sftp://nobody@127.0.0.1:\(port)/srv/", options: ["--known-hosts", "/dev/null"])
        let started = Date()
        let result = mount.tryMount(timeout: 90)
        let took = Date().timeIntervalSince(started)
        #expect(!result.succeeded && !result.timedOut && result.stderr.contains("the SSH handshake failed"), "\(result)")
        print("sftp: a silent server refused the mount after \(String(format: "%.1f", took)) s")
        #expect(took < 60, "refused after \(took) s")
        #expect(!mount.isMounted)
    }

    @Test("SFTP: the reads check the host key as well: from a kept listing, with a known-hosts file holding another key or none, a read gives EIO and no byte")
    func sftpReadsCheckTheHostKey() throws {
        let tree = try Scratch.makeDir("sftp-tree")
        try Data(RandomBytes.make(count: 1 << 20, seed: 0x4B)).write(to: tree.appendingPathComponent("file.bin"))
        let server = try SSHServer()
        defer { server.stop() }
        let cache = try fx.makeCacheDir()
        let listed = try fx.prepare(source: server.address(tree.path + "/"), cacheDir: cache, options: ["--prefetch", "none"] + server.signInOptions)
        try listed.mount()
        #expect(Command.run(["ls", "-l", listed.mountpoint]).stdout.contains("file.bin"))
        #expect(listed.unmount().succeeded)
        for knownHosts in [server.otherHostsKey, server.unknownHosts] {
            // The listing is kept: the mount starts without the listing session, and only the read reaches the server.
            let mount = try fx.prepare(source: server.address(tree.path + "/"), cacheDir: cache,
                                       options: ["--prefetch", "none", "--identity", server.userKey, "--known-hosts", knownHosts])
            try mount.mount()
            let read = Reading.range(mount.path("file.bin"), offset: 0, length: 4096, timeout: 120)
            #expect(!read.succeeded && read.failedWithEIO && read.bytes.isEmpty, "\(knownHosts): \(read)\(Check.daemonLog(mount))")
            #expect(!mount.logLines(containing: "host key is not in the known-hosts file").isEmpty, "\(Check.daemonLog(mount))")
            #expect(mount.unmount().succeeded)
        }
    }

    @Test("SFTP: a file changed between reads (its mtime, then its size): a new reader reads the new version, never a mix; each change is logged")
    func sftpFileChangesBetweenReads() throws {
        let tree = try Scratch.makeDir("sftp-tree")
        let size = 4 << 20
        let v1 = RandomBytes.make(count: size, seed: 0xE1)
        let v2 = RandomBytes.make(count: size, seed: 0xE2)   // same size: only the mtime tells
        let file = tree.appendingPathComponent("changing.bin")
        try Data(v1).write(to: file)
        let written = Date(timeIntervalSince1970: 1_700_000_000)
        try FileManager.default.setAttributes([.modificationDate: written], ofItemAtPath: file.path)
        let server = try SSHServer()
        defer { server.stop() }
        let mount = try fx.prepare(source: server.address(tree.path + "/"), options: ["--prefetch", "none"] + server.signInOptions)
        try mount.mount()
        let path = mount.path("changing.bin")
        let head = Reading.range(path, offset: 0, length: 65536)
        #expect(head.succeeded && head.bytes == Data(v1[0..<65536]), "first read: \(head)\(Check.daemonLog(mount))")
        #expect(mount.transfersEnded(), "the first read's transfers never ended\(Check.daemonLog(mount))")

        try Data(v2).write(to: file)
        try FileManager.default.setAttributes([.modificationDate: written.addingTimeInterval(60)], ofItemAtPath: file.path)
        let offset = 3 << 20
        let changed = Reading.range(path, offset: offset, length: 65536)
        #expect(changed.succeeded && changed.bytes == Data(v2[offset..<(offset + 65536)]),
                "a new reader that meets a changed file reads the new version: \(changed)\(Check.daemonLog(mount))")
        #expect(mount.logLines(containing: "changed on the server", "modified time").count == 1, "\(Check.daemonLog(mount))")
        #expect(mount.transfersEnded(), "\(Check.daemonLog(mount))")

        // Longer now with the same mtime (a second write within the second): a read reaching
        // the end of the file as held sees it.
        let growing = tree.appendingPathComponent("growing.bin")
        let short = RandomBytes.make(count: 16 << 20, seed: 0xE3)
        try Data(short).write(to: growing)
        try FileManager.default.setAttributes([.modificationDate: written], ofItemAtPath: growing.path)
        #expect(Command.run([fx.binary, "refresh", mount.mountpoint]).succeeded)
        let start = Reading.range(mount.path("growing.bin"), offset: 0, length: 4096)
        #expect(start.succeeded && start.bytes == Data(short[0..<4096]), "\(start)\(Check.daemonLog(mount))")
        #expect(mount.transfersEnded(), "\(Check.daemonLog(mount))")
        let longer = short + RandomBytes.make(count: 4096, seed: 0xE4)
        try Data(longer).write(to: growing)
        try FileManager.default.setAttributes([.modificationDate: written], ofItemAtPath: growing.path)
        let end = short.count - 4096
        let tail = Reading.range(mount.path("growing.bin"), offset: end, length: 4096)
        #expect(tail.succeeded ? tail.bytes == Data(longer[end..<(end + 4096)]) : tail.failedWithEIO, "never a mix: \(tail)")
        #expect(mount.logLines(containing: "changed on the server", "now more").count == 1, "the longer file is a change\(Check.daemonLog(mount))")
        #expect(mount.unmount().succeeded)
    }

    @Test("SFTP: sshd stopped while mounted: a read of bytes not cached fails with EIO in bounded time, cached bytes still read; sshd back, the same read succeeds")
    func sftpServerGoneAndBack() throws {
        let tree = try Scratch.makeDir("sftp-tree")
        let size = 32 << 20
        let bytes = RandomBytes.make(count: size, seed: 0x90)
        try Data(bytes).write(to: tree.appendingPathComponent("file.bin"))
        let server = try SSHServer()
        defer { server.stop() }
        let mount = try fx.prepare(source: server.address(tree.path + "/"), options: ["--prefetch", "none"] + server.signInOptions)
        try mount.mount()
        let path = mount.path("file.bin")
        let head = Reading.range(path, offset: 0, length: 65536)
        #expect(head.succeeded && head.bytes == Data(bytes[0..<65536]), "\(head)\(Check.daemonLog(mount))")
        #expect(mount.transfersEnded(), "\(Check.daemonLog(mount))")
        server.stop()

        let offset = 27 << 20
        let started = Date()
        let gone = Reading.range(path, offset: offset, length: 4096, timeout: 180)
        let took = Date().timeIntervalSince(started)
        print("sftp: a read with sshd stopped failed after \(String(format: "%.1f", took)) s")
        #expect(!gone.succeeded && gone.failedWithEIO, "bytes not cached, no server: EIO, never zeros: \(gone)\(Check.daemonLog(mount))")
        #expect(took < 150, "it failed after \(took) s")
        let cached = Reading.range(path, offset: 0, length: 65536)
        #expect(cached.succeeded && cached.bytes == Data(bytes[0..<65536]), "cached bytes still read: \(cached)")

        try server.start()
        let back = Reading.range(path, offset: offset, length: 4096)
        #expect(back.succeeded && back.bytes == Data(bytes[offset..<(offset + 4096)]), "sshd back: \(back)\(Check.daemonLog(mount))")
        #expect(mount.unmount().succeeded)
    }

    @Test("SFTP: a remount with sshd stopped shows the last known tree and serves a file read before from the cache")
    func sftpIsRememberedOffline() throws {
        let tree = try Self.datedTree()
        let cache = try fx.makeCacheDir()
        let server = try SSHServer()
        let first = try fx.prepare(source: server.address(tree.path + "/"), cacheDir: cache, options: ["--prefetch", "none"] + server.signInOptions)
        try first.mount()
        let inner = "sub dir/inner.txt"
        #expect(SHA256.of(first.path("one-and-half-m.bin")).hash == SHA256.of(tree.appendingPathComponent("one-and-half-m.bin").path).hash)
        #expect(SHA256.of(first.path(inner)).hash != nil, "\(Check.daemonLog(first))")
        let listedBefore = Command.run(["ls", "-l", "--", first.path("Case")])
        #expect(listedBefore.succeeded && listedBefore.stdout.contains("inside.txt"), "\(listedBefore)")
        #expect(first.unmount().succeeded)
        server.stop()

        let offline = try fx.prepare(source: server.address(tree.path + "/"), cacheDir: cache, options: ["--prefetch", "none"] + server.signInOptions)
        try offline.mount()
        #expect(Command.run(["ls", "-l", "--", offline.path("Case")]).stdout == listedBefore.stdout,
                "the last known listing, sizes and dates\(Check.daemonLog(offline))")
        #expect((try? String(contentsOfFile: offline.path(inner), encoding: .utf8)) == "inner",
                "a file read before is served from the cache\(Check.daemonLog(offline))")
        #expect(SHA256.of(offline.path("one-and-half-m.bin")).hash == SHA256.of(tree.appendingPathComponent("one-and-half-m.bin").path).hash)
        #expect(!Command.run(["cat", "--", offline.path("twenty-k.bin")]).succeeded, "a file never read cannot be served offline")
        #expect(offline.unmount().succeeded)
    }
}
