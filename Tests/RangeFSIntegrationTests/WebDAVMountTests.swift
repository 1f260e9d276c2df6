import Foundation
import Testing

/// A WebDAV collection mounted by its `dav://` or `davs://` address, from real servers (WsgiDAV,
/// Apache `mod_dav`) serving the tree of awkward names, used through a real mount by `ls`,
/// `find` and `sha256sum`; remembered across a remount with the server gone; over TLS behind
/// HTTP Basic; and refused with the reason where the address is no WebDAV collection.
extension RangeFSIntegrationTests {
    @Test("WebDAV: each server's collections mount, every file reads byte-exact, sizes come from PROPFIND without a request per file",
          arguments: WebDAVServer.Kind.allCases)
    func webDAVMountsFromEachServer(kind: WebDAVServer.Kind) throws {
        let tree = try Scratch.makeDir("dav-tree")
        try AwkwardTree.make(in: tree, big: false)
        let server = try WebDAVServer(kind, serving: tree)
        defer { server.stop() }
        let mount = try fx.prepare(source: server.address, options: ["--prefetch", "none"])
        try mount.mount()

        try Self.expectNamesShown(of: tree, in: mount, "\(kind)")
        let onDisk = try Self.filesOnDisk(below: tree)
        // Every size as the server's disk has it, before any file is read.
        for relative in onDisk.keys.sorted() {
            let mounted = try FileManager.default.attributesOfItem(atPath: mount.path(relative))[.size] as? NSNumber
            let original = try FileManager.default.attributesOfItem(atPath: tree.appendingPathComponent(relative).path)[.size] as? NSNumber
            #expect(mounted == original, "\(kind): size of \(relative)")
        }
        let beforeReads = server.requests()
        #expect(beforeReads.contains { $0.hasPrefix("PROPFIND ") }, "\(kind): the server logs what it answers: \(beforeReads)")
        #expect(beforeReads.allSatisfy { $0.hasPrefix("PROPFIND ") },
                "\(kind): listing the tree and stat of every file ask PROPFIND alone: \(beforeReads)")
        try Self.expectBytesShown(of: tree, in: mount, "\(kind)")
        let requests = server.requests()
        #expect(requests.contains { $0.hasPrefix("GET ") } && !requests.contains { $0.hasPrefix("HEAD ") },
                "\(kind): files are read with GETs, and no size was probed: \(requests)")
        #expect(mount.unmount().succeeded)
    }

    @Test("WebDAV: a remount with the server gone shows the last known tree and serves what was cached")
    func webDAVIsRememberedOffline() throws {
        let tree = try Scratch.makeDir("dav-tree")
        try AwkwardTree.make(in: tree, big: false)
        let cache = try fx.makeCacheDir()
        let server = try WebDAVServer(.wsgidav, serving: tree)
        let first = try fx.prepare(source: server.address, cacheDir: cache, options: ["--prefetch", "none"])
        try first.mount()
        let inner = "sub dir/inner.txt"
        #expect(SHA256.of(first.path(inner)).hash != nil, "\(Check.daemonLog(first))")
        let listedBefore = Command.run(["ls", "-l", "--", first.path("Case")])
        #expect(listedBefore.succeeded && listedBefore.stdout.contains("inside.txt"), "\(listedBefore)")
        #expect(first.unmount().succeeded)
        server.stop()

        let offline = try fx.prepare(source: server.address, cacheDir: cache, options: ["--prefetch", "none"])
        try offline.mount()
        #expect(Command.run(["ls", "-l", "--", offline.path("Case")]).stdout == listedBefore.stdout,
                "the last known listing, sizes and dates\(Check.daemonLog(offline))")
        #expect((try? String(contentsOfFile: offline.path(inner), encoding: .utf8)) == "inner",
                "a file read before is served from the cache\(Check.daemonLog(offline))")
        #expect(!Command.run(["cat", "--", offline.path("twenty-k.bin")]).succeeded, "a file never read cannot be served offline")
        #expect(offline.unmount().succeeded)
    }

    @Test("WebDAV: a file changed on the server between reads: a new reader reads the new version, never a mix; the change is logged once")
    func webDAVFileChangesBetweenReads() throws {
        let tree = try Scratch.makeDir("dav-tree")
        let size = 4 << 20
        let v1 = RandomBytes.make(count: size, seed: 0xD1)
        let v2 = RandomBytes.make(count: size, seed: 0xD2)   // same size: only the version tells
        let file = tree.appendingPathComponent("changing.bin")
        try Data(v1).write(to: file)
        // Dated an hour back, then an hour on: the server's validator moves whatever the clock does.
        let written = Date().addingTimeInterval(-3600)
        try FileManager.default.setAttributes([.modificationDate: written], ofItemAtPath: file.path)
        let server = try WebDAVServer(.wsgidav, serving: tree)
        defer { server.stop() }
        let mount = try fx.prepare(source: server.address, options: ["--prefetch", "none"])
        try mount.mount()
        let path = mount.path("changing.bin")
        let head = Reading.range(path, offset: 0, length: 65536)
        #expect(head.succeeded && head.bytes == Data(v1[0..<65536]), "first read: \(head)\(Check.daemonLog(mount))")
        #expect(mount.transfersEnded(), "the first read's transfers never ended\(Check.daemonLog(mount))")
        // A reader that holds bytes of the first version when the file changes.
        let holder = try PausedReader(path, flags: try Scratch.makeDir("dav-flags"))
        #expect(holder.waitForFirstPart(), "the reader never read its first part")
        #expect(mount.transfersEnded(), "the reader's transfers never ended\(Check.daemonLog(mount))")

        try Data(v2).write(to: file, options: .atomic)
        try FileManager.default.setAttributes([.modificationDate: written.addingTimeInterval(7200)], ofItemAtPath: file.path)
        let offset = 3 << 20
        let changed = Reading.range(path, offset: offset, length: 65536)
        #expect(changed.succeeded && changed.bytes == Data(v2[offset..<(offset + 65536)]),
                "a new reader that meets a changed file reads the new version: \(changed)\(Check.daemonLog(mount))")
        let held = holder.finish()
        // It read on from what was cached of the first version, or failed: never a byte of the second.
        #expect(Reading.isPrefix(held.bytes, of: v1) && (held.succeeded ? held.bytes.count == size : held.failedWithEIO),
                "a reader holding the old version gets it whole or EIO: \(held.bytes.count) bytes, \(held.succeeded ? "succeeded" : "failed")")
        let reopened = Reading.whole(path)
        #expect(reopened.succeeded && reopened.bytes == Data(v2),
                "reopened, the whole file is the new version: \(reopened.bytes.count) bytes\(Check.daemonLog(mount))")
        let logged = mount.logLines(containing: "changed on the server")
        #expect(logged.count == 1, "the change is logged once: \(logged)\(Check.daemonLog(mount))")
        #expect(mount.unmount().succeeded)
    }

    @Test("WebDAV over TLS behind HTTP Basic: refused without credentials, mounted and read byte-exact with --user and --password-file, which reach neither ps nor the log")
    func webDAVOverTLSWithCredentials() throws {
        let tree = try Scratch.makeDir("dav-tree")
        try AwkwardTree.make(in: tree, big: false)
        let server = try WebDAVServer(.wsgidav, serving: tree, tls: true, requiresCredentials: true)
        defer { server.stop() }
        let caFile = try #require(server.caFile)
        let refused = try fx.prepare(source: server.address, options: ["--ca-file", caFile])
        let refusal = refused.tryMount()
        #expect(!refusal.succeeded && refusal.stderr.contains("401") && refusal.stderr.contains("--user"), "without credentials, told how to give them: \(refusal)")
        #expect(!refused.isMounted)

        let credentials = WebDAVServer.credentials
        let token = Data("\(credentials.user):\(credentials.password)".utf8).base64EncodedString()
        let authorization = "Authorization: Basic \(token)"
        // The password from a file, handed to the mount in the background through its pipe.
        let passwordFile = try Scratch.makeDir("dav-password").appendingPathComponent("password")
        try Data("\(credentials.password)\n".utf8).write(to: passwordFile)
        let mount = try fx.prepare(source: server.address, options: ["--prefetch", "none", "--ca-file", caFile,
                                                                   "--user", credentials.user, "--password-file", passwordFile.path])
        try mount.mount()
        for relative in ["sub dir/inner.txt", "one-and-half-m.bin", "hash#name.txt"] {
            #expect(SHA256.of(mount.path(relative)).hash == SHA256.of(tree.appendingPathComponent(relative).path).hash,
                    "\(relative) reads byte-exact over https\(Check.daemonLog(mount))")
        }
        let pids = mount.daemonPids()
        #expect(!pids.isEmpty, "the mount runs in the background")
        for pid in pids {
            let commandLine = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline"))).map { String(decoding: $0, as: UTF8.self) } ?? ""
            #expect(!commandLine.isEmpty && !commandLine.contains(credentials.password) && !commandLine.contains(token),
                    "the background mount's command line holds no credential")
        }
        #expect(mount.unmount().succeeded)
        let log = (try? String(contentsOfFile: mount.logPath, encoding: .utf8)) ?? ""
        #expect(!log.contains(credentials.password) && !log.contains(token), "the credentials never reach the log")

        // A netrc file's entry for the host signs in as well, in the background mount too (-o netrc_file=).
        let netrc = passwordFile.deletingLastPathComponent().appendingPathComponent("netrc")
        try Data("machine 127.0.0.1 login \(credentials.user) password \(credentials.password)\n".utf8).write(to: netrc)
        let byNetrc = try fx.prepare(source: server.address, options: ["--prefetch", "none", "--ca-file", caFile, "-o", "netrc_file=\(netrc.path)"])
        try byNetrc.mount()
        #expect(SHA256.of(byNetrc.path("sub dir/inner.txt")).hash == SHA256.of(tree.appendingPathComponent("sub dir/inner.txt").path).hash,
                "signed in by the netrc file\(Check.daemonLog(byNetrc))")
        #expect(byNetrc.unmount().succeeded)

        // `rangefs manifest` lists the same tree, as https URLs a mount reads unchanged.
        let listed = Command.run([fx.binary, "manifest", "--ca-file", caFile, "--header", authorization, server.address])
        #expect(listed.succeeded, "\(listed)")
        #expect(listed.stdout.contains("sub dir/inner.txt\t\(server.httpURL)sub%20dir/inner.txt"), "\(listed.stdout)")
        #expect(!listed.stdout.contains(token), "headers are never written into the manifest")
    }

    @Test("WebDAV: a server that takes no PROPFIND, a missing collection and a format that contradicts the address are refused at mount with the reason")
    func webDAVRefusals() throws {
        let plainWeb = try fx.prepare(source: fx.nginx.baseURL.replacingOccurrences(of: "http://", with: "dav://") + "/")
        let notDAV = plainWeb.tryMount()
        #expect(!notDAV.succeeded && notDAV.stderr.contains("not a WebDAV server"), "nginx: \(notDAV)")
        #expect(!plainWeb.isMounted)

        let tree = try Scratch.makeDir("dav-tree")
        try AwkwardTree.make(in: tree, big: false)
        let server = try WebDAVServer(.wsgidav, serving: tree)
        defer { server.stop() }
        let missing = try fx.prepare(source: server.address + "no-such-collection/")
        let gone = missing.tryMount()
        #expect(!gone.succeeded && gone.stderr.contains("404"), "\(gone)")

        let contradicted = try fx.prepare(source: server.address, options: ["--format", "m3u"])
        let both = contradicted.tryMount()
        #expect(!both.succeeded && both.stderr.contains("does not go with a WebDAV address"), "\(both)")

        // An http URL with --format webdav is the same collection.
        let byFormat = try fx.prepare(source: server.httpURL, options: ["--prefetch", "none", "--format", "webdav"])
        try byFormat.mount()
        #expect(try String(contentsOfFile: byFormat.path("sub dir/inner.txt"), encoding: .utf8) == "inner", "\(Check.daemonLog(byFormat))")
        #expect(byFormat.unmount().succeeded)
    }
}
