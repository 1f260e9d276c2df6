import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The cache is private to its owner, URLs never show credentials, and other users get no
/// access to the mount unless asked for.
extension RangeFSIntegrationTests {
    @Test("security: the cache dir and its subdirectories are 0700 and every file in it 0600 (db, -wal, -shm, data, log, control socket)")
    func cachePermissions() throws {
        // The test creates the cache directory itself with 0755 (a directory made by someone
        // else, or by mkdir -p): the mount must tighten it.
        let cacheDir = try fx.makeCacheDir()
        _ = chmod(cacheDir.path, 0o755)
        let files = [fx.data.file("one.bin"), fx.data.file("tail.bin"), fx.data.file("block-plus-one.bin")]
        let mount = try fx.mount(files.map { ManifestLine(path: $0.name, url: fx.nginx.url($0.name)) },
                                 cacheDir: cacheDir, options: ["--prefetch", "all"])
        for file in files {
            #expect(SHA256.of(mount.path(file.name)).hash == file.sha256, "\(file.name)")
        }
        _ = mount.waitForStatus(timeout: 30) { $0.files.allSatisfy { $0.state == .complete } }
        _ = mount.statusText()   // the control socket has been used

        func check(_ moment: String, expectSocket: Bool) {
            let found = Self.walk(cacheDir.path)
            let names = Set(found.map { ($0.path as NSString).lastPathComponent })
            for wanted in ["metadata.sqlite", "rangefs.log", "data"] {
                #expect(names.contains(wanted), "\(moment): \(wanted) missing in the cache dir: \(names.sorted())")
            }
            if expectSocket {
                #expect(found.contains { $0.type == S_IFSOCK }, "\(moment): no control socket in \(names.sorted())")
                #expect(names.contains("metadata.sqlite-wal"), "\(moment): no -wal file to check in \(names.sorted())")
            }
            #expect(found.filter { $0.type == S_IFREG && $0.path.contains("/data/") }.count >= files.count,
                    "\(moment): data files missing: \(names.sorted())")
            for entry in found {
                let mode = entry.mode & 0o7777
                if entry.type == S_IFDIR {
                    #expect(mode == 0o700, "\(moment): directory \(entry.path) has mode \(String(mode, radix: 8))")
                } else {
                    #expect(mode == 0o600, "\(moment): \(entry.path) has mode \(String(mode, radix: 8)), expected 600")
                }
                #expect(entry.uid == getuid(), "\(moment): \(entry.path) belongs to uid \(entry.uid)")
            }
            print("\(moment): \(found.count) entries checked: \(found.map { "\(($0.path as NSString).lastPathComponent) \(String($0.mode & 0o7777, radix: 8))" }.joined(separator: ", "))")
        }
        check("while mounted", expectSocket: true)
        Check.succeeded(mount.unmount(), "unmount")
        check("after unmount", expectSocket: false)
    }

    @Test("security: user.rangefs.url never shows credentials; allow_other is absent unless asked for, present with -o allow_other")
    func urlRedactionAndAllowOther() throws {
        let secret = "pa55-w0rd-x"
        let file = fx.data.file("tail.bin")
        let base = fx.nginx.baseURL.replacingOccurrences(of: "http://", with: "http://carol:\(secret)@")
        let mount = try fx.mount([ManifestLine(path: "tail.bin", url: base + "/tail.bin")], options: Fixture.readsOnly)
        #expect(SHA256.of(mount.path("tail.bin")).hash == file.sha256)
        let url = XAttr.get(mount.path("tail.bin"), "user.rangefs.url")
        #expect(url != nil && url?.contains(secret) == false && url?.contains("/tail.bin") == true,
                "user.rangefs.url: \(url ?? "none")")
        let dump = Command.run(["getfattr", "-d", "-m", "-", mount.path("tail.bin")], timeout: 30)
        #expect(!dump.stdout.contains(secret), "getfattr -d shows the password: \(dump)")

        let options = Self.mountOptions(mount.mountpoint)
        #expect(options != nil, "\(mount.mountpoint) not in /proc/mounts")
        #expect(options?.contains("allow_other") == false, "allow_other without being asked: \(options ?? [])")
        #expect(options?.contains("ro") == true, "the mount is not read-only in /proc/mounts: \(options ?? [])")
        print("default mount options: \(options ?? [])")

        let shared = try fx.mount([ManifestLine(path: "tail.bin", url: fx.nginx.url("tail.bin"))],
                                  options: Fixture.readsOnly + ["-o", "allow_other"])
        let sharedOptions = Self.mountOptions(shared.mountpoint)
        #expect(sharedOptions?.contains("allow_other") == true, "-o allow_other was not applied: \(sharedOptions ?? [])")
    }

    /// The options field of `path` in /proc/mounts.
    static func mountOptions(_ path: String) -> [String]? {
        guard let text = try? String(contentsOfFile: "/proc/mounts", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n").reversed() {
            let fields = line.split(separator: " ")
            guard fields.count >= 4 else { continue }
            let point = String(fields[1]).replacingOccurrences(of: "\\040", with: " ")
            if point == path { return fields[3].split(separator: ",").map(String.init) }
        }
        return nil
    }

    struct CacheEntry {
        let path: String
        let type: mode_t
        let mode: mode_t
        let uid: uid_t
    }

    /// Everything under `root` (not `root` itself), by `lstat`.
    static func walk(_ root: String) -> [CacheEntry] {
        var result: [CacheEntry] = []
        var info = stat()
        if lstat(root, &info) == 0 {
            result.append(CacheEntry(path: root, type: info.st_mode & S_IFMT, mode: info.st_mode, uid: info.st_uid))
        }
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: root) else { return result }
        for name in names {
            let path = (root as NSString).appendingPathComponent(name)
            guard lstat(path, &info) == 0 else { continue }
            if info.st_mode & S_IFMT == S_IFDIR {
                result += walk(path)
            } else {
                result.append(CacheEntry(path: path, type: info.st_mode & S_IFMT, mode: info.st_mode, uid: info.st_uid))
            }
        }
        return result
    }
}

extension RangeFSIntegrationTests {
    @Test("security: TLS is verified by default (a certificate from an unknown CA → EIO, never data); --ca-file trusts that CA")
    func tlsVerifiedByDefault() throws {
        let file = fx.data.file("tail.bin")
        let server = try TLSNginx(serving: fx.data.dir)
        let url = server.baseURL + "/tail.bin"
        let curl = Command.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", server.caFile, url], timeout: 30)
        try #require(curl.stdout == "200", "the test server does not answer with its own CA: \(curl)")

        let untrusted = try fx.mount([ManifestLine(path: "tail.bin", url: url)], options: Fixture.readsOnly)
        let refused = Reading.whole(untrusted.path("tail.bin"), timeout: 90)
        #expect(refused.failedWithEIO && refused.bytes.isEmpty,
                "a certificate from an unknown CA must not be accepted: \(refused)\(Check.daemonLog(untrusted))")
        #expect(refused.result.seconds < 30, "took \(refused.result.seconds) s")
        let log = untrusted.log().lowercased()
        #expect(log.contains("certificate") || log.contains("ssl") || log.contains("tls"),
                "the log should say why: \(untrusted.logTail())")

        let trusted = try fx.mount([ManifestLine(path: "tail.bin", url: url)],
                                   options: Fixture.readsOnly + ["--ca-file", server.caFile])
        #expect(SHA256.of(trusted.path("tail.bin")).hash == file.sha256,
                "with --ca-file the file should read: \(Check.daemonLog(trusted))")
    }
}
