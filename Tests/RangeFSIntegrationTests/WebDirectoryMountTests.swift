import Foundation
import Testing

/// A web directory mounted by its URL: the real servers' own listings (nginx, Apache 2,
/// lighttpd, Python's http.server) over the tree of awkward names, used through a real mount
/// by `ls`, `find`, `cat` and `sha256sum`; then remembered across a remount with the server
/// gone, and listed again by `rangefs refresh`.
extension RangeFSIntegrationTests {
    /// Every file below `root` on disk, relative path → sha256.
    static func filesOnDisk(below root: URL) throws -> [String: String] {
        var files: [String: String] = [:]
        let enumerator = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey])
        while let url = enumerator?.nextObject() as? URL {
            guard try url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile == true else { continue }
            let relative = String(url.standardizedFileURL.path.dropFirst(root.standardizedFileURL.path.count + 1))
            files[relative] = SHA256.of(url.path).hash
        }
        return files
    }

    @Test("web directory: each server's listing mounts at once, every file reads byte-exact, `find` sees the whole tree",
          arguments: ListingServer.Kind.allCases)
    func webDirectoryMountsFromEachServer(kind: ListingServer.Kind) throws {
        let tree = try Scratch.makeDir("web-tree")
        try AwkwardTree.make(in: tree, big: false)
        let server = try ListingServer(kind, serving: tree)
        defer { server.stop() }
        let path = kind == .nginx ? "/html/" : kind == .apache ? "/fancy/" : "/"
        let mount = try fx.prepare(source: server.baseURL + path, options: ["--prefetch", "none"])
        try mount.mount()

        try Self.expectNamesShown(of: tree, in: mount, "\(kind)")
        try Self.expectBytesShown(of: tree, in: mount, "\(kind)")
        #expect(mount.unmount().succeeded)
    }

    /// `ls` of the top and `find` show every name of `tree`.
    static func expectNamesShown(of tree: URL, in mount: Mount, _ label: String) throws {
        let top = Command.run(["ls", "-1", "--", mount.mountpoint])
        let expectedTop = try FileManager.default.contentsOfDirectory(atPath: tree.path).sorted()
        #expect(Set(top.stdout.split(separator: "\n").map(String.init)) == Set(expectedTop), "\(label): ls\n\(top)\(Check.daemonLog(mount))")
        let found = Command.run(["find", mount.mountpoint, "-type", "f"])
        let foundPaths = Set(found.stdout.split(separator: "\n").map { String($0.dropFirst(mount.mountpoint.count + 1)) })
        #expect(foundPaths == Set(try filesOnDisk(below: tree).keys), "\(label): find\n\(found)\(Check.daemonLog(mount))")
    }

    /// Every file of `tree` reads byte-exact through the mount, and its `empty` directory lists empty.
    static func expectBytesShown(of tree: URL, in mount: Mount, _ label: String) throws {
        for (relative, hash) in try filesOnDisk(below: tree).sorted(by: { $0.key < $1.key }) {
            #expect(SHA256.of(mount.path(relative)).hash == hash, "\(label): sha256 of \(relative)\(Check.daemonLog(mount))")
        }
        let empty = Command.run(["ls", "-A", "--", mount.path("empty")])
        #expect(empty.succeeded && empty.stdout.isEmpty, "\(label): an empty directory lists empty\n\(empty)")
    }

    @Test("web directory: a remount with the server gone shows the last known tree and serves what was cached; refresh lists again")
    func webDirectoryIsRememberedAndRefreshed() throws {
        let tree = try Scratch.makeDir("web-tree")
        try AwkwardTree.make(in: tree, big: false)
        let cache = try fx.makeCacheDir()
        var server = try ListingServer(.nginx, serving: tree)
        let source = server.baseURL + "/json/"
        let first = try fx.prepare(source: source, cacheDir: cache, options: ["--prefetch", "none"])
        try first.mount()
        let inner = "sub dir/inner.txt"
        #expect(SHA256.of(first.path(inner)).hash != nil)
        let listedBefore = Command.run(["ls", "-1", "--", first.path("Case")])
        #expect(first.unmount().succeeded)
        server.stop()

        // Offline: the same tree, and what was read, from the cache.
        let offline = try fx.prepare(source: source, cacheDir: cache, options: ["--prefetch", "none"])
        try offline.mount()
        #expect(Command.run(["ls", "-1", "--", offline.path("Case")]).stdout == listedBefore.stdout,
                "the last known listing\(Check.daemonLog(offline))")
        let text = try? String(contentsOfFile: offline.path(inner), encoding: .utf8)
        #expect(text == "inner", "a file read before is served from the cache\(Check.daemonLog(offline))")
        let unread = Command.run(["cat", "--", offline.path("twenty-k.bin")])
        #expect(!unread.succeeded, "a file never read cannot be served offline")
        #expect(offline.unmount().succeeded)

        // Back online, on another port as a new server would be: a refresh shows what changed.
        server = try ListingServer(.nginx, serving: tree)
        defer { server.stop() }
        let online = try fx.prepare(source: server.baseURL + "/json/", cacheDir: cache, options: ["--prefetch", "none"])
        try online.mount()
        #expect(Command.run(["ls", "--", online.mountpoint]).succeeded)
        try Data("new".utf8).write(to: tree.appendingPathComponent("added.txt"))
        try FileManager.default.removeItem(at: tree.appendingPathComponent("plain.txt"))
        let refresh = Command.run([fx.binary, "refresh", online.mountpoint])
        #expect(refresh.succeeded, "\(refresh)\(Check.daemonLog(online))")
        #expect(Poll.until(seconds: 10) { FileManager.default.fileExists(atPath: online.path("added.txt")) },
                "a new file appears\(Check.daemonLog(online))")
        #expect(!FileManager.default.fileExists(atPath: online.path("plain.txt")), "a removed file vanishes")
        #expect(try String(contentsOfFile: online.path("added.txt"), encoding: .utf8) == "new")
        #expect(online.unmount().succeeded)
    }

    @Test("web directory: a file read whole and then changed on the server is read anew once its directory is listed again (refresh), not from the cache")
    func webDirectoryNoticesAChangedFileInItsListing() throws {
        let tree = try Scratch.makeDir("web-tree")
        let file = tree.appendingPathComponent("song.mp3")
        let first = Data(repeating: 0x61, count: 300_000), second = Data(repeating: 0x62, count: 200_000)
        // Each version's time set outright: nothing here races the clock the server reads.
        func write(_ data: Data, modified: TimeInterval) throws {
            try data.write(to: file)
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: modified)], ofItemAtPath: file.path)
        }
        try write(first, modified: 1_700_000_000)
        let server = try ListingServer(.nginx, serving: tree)
        defer { server.stop() }
        let mount = try fx.prepare(source: server.baseURL + "/json/", options: ["--prefetch", "none"])
        try mount.mount()
        #expect((try? Data(contentsOf: URL(fileURLWithPath: mount.path("song.mp3")))) == first, "\(Check.daemonLog(mount))")

        try write(second, modified: 1_700_086_400)
        let refresh = Command.run([fx.binary, "refresh", mount.mountpoint])
        #expect(refresh.succeeded, "\(refresh)\(Check.daemonLog(mount))")
        #expect(Poll.until(seconds: 20) { (try? Data(contentsOf: URL(fileURLWithPath: mount.path("song.mp3")))) == second },
                "the server's new version is read, not the cached one\(Check.daemonLog(mount))")
        #expect(mount.log().contains("changed on the server"), "the log says why the cached copy went")
        #expect(mount.unmount().succeeded)
    }

    @Test("web directory: a URL that is not a listing, or not there, is refused at mount with the reason")
    func webDirectoryErrorsAtMount() throws {
        let missing = try fx.prepare(source: fx.nginx.url("no-such-directory/"))
        let result = missing.tryMount()
        #expect(!result.succeeded && result.stderr.contains("404"), "\(result)")
        #expect(!missing.isMounted)
    }

    @Test("web directory: a protected listing mounts with --header Authorization, and status, pin and evict work on its files")
    func webDirectoryBehindAuthorization() throws {
        let tree = try Scratch.makeDir("web-tree")
        try AwkwardTree.make(in: tree, big: false)
        let server = try ListingServer(.nginx, serving: tree)
        defer { server.stop() }
        let source = server.baseURL + "/private/"
        let refused = try fx.prepare(source: source)
        let refusal = refused.tryMount()
        #expect(!refusal.succeeded && refusal.stderr.contains("401"), "without credentials: \(refusal)")

        let credentials = ListingServer.privateCredentials
        let token = Data("\(credentials.user):\(credentials.password)".utf8).base64EncodedString()
        let mount = try fx.prepare(source: source, options: ["--prefetch", "none", "--header", "Authorization: Basic \(token)"])
        try mount.mount()
        #expect(SHA256.of(mount.path("sub dir/inner.txt")).hash == SHA256.of(tree.appendingPathComponent("sub dir/inner.txt").path).hash,
                "a file of the protected tree reads right\(Check.daemonLog(mount))")
        // A directory never looked at: pin lists it first.
        let pinned = Command.run([fx.binary, "pin", mount.mountpoint, "Case"])
        #expect(pinned.succeeded && pinned.stdout.contains("pinned 1 file"), "\(pinned)")
        let binary = fx.binary
        let isComplete = {
            Command.run([binary, "status", mount.mountpoint]).stdout.split(separator: "\n")
                .contains { $0.hasPrefix("Case/inside.txt ") && $0.contains("complete") }
        }
        #expect(Poll.until(seconds: 20, isComplete),
                "the pinned directory's file completes: \(Command.run([fx.binary, "status", mount.mountpoint]).stdout)")
        let evicted = Command.run([fx.binary, "evict", mount.mountpoint])
        #expect(evicted.succeeded, "\(evicted)")
        let log = (try? String(contentsOfFile: mount.logPath, encoding: .utf8)) ?? ""
        #expect(!log.contains(credentials.password) && !log.contains(token), "the credentials never reach the log")
        #expect(mount.unmount().succeeded)
    }
}
