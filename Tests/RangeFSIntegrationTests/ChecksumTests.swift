import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The sha256 a manifest gives is checked before a file is promoted to complete.
extension RangeFSIntegrationTests {
    @Test("sha256: a match promotes; a mismatch fails the file with its reason (status, xattr, one log line), drops its data, fails open handles and new reads with EIO without fetching again; a refresh with the right sha256 completes it")
    func sha256CheckedAtPromotion() throws {
        let good = fx.data.file("tail.bin")
        let bad = fx.data.file("block-plus-one.bin")
        let wrong = fx.data.file("block.bin").sha256   // a real digest, of other bytes
        func manifest(badDigest: String) -> String {
            """
            [
              {"path": "good.bin", "url": "\(fx.nginx.url(good.name))", "sha256": "\(good.sha256.uppercased())"},
              {"path": "bad.bin", "url": "\(fx.nginx.url(bad.name))", "sha256": "\(badDigest)"}
            ]
            """
        }
        let mount = try fx.prepare(manifest: manifest(badDigest: wrong), name: "checked.json", options: Fixture.readsOnly)
        try mount.mount()

        // A reader opens the file and reads its start before anything is known against it.
        let handle = open(mount.path("bad.bin"), O_RDONLY)
        try #require(handle >= 0, "open bad.bin: errno \(errno)")
        defer { close(handle) }
        let head = Self.pread(handle, offset: 0, length: 65536)
        #expect(head.bytes == (try bad.bytes(offset: 0, length: 65536)), "the start of bad.bin before the check: \(head)")

        let pin = mount.rangefs("pin", ["good.bin", "bad.bin"])
        Check.succeeded(pin, "rangefs pin", mount: mount)
        let (settled, met) = try mount.waitForStatus(timeout: 60) { status in
            status.file("good.bin")?.state == "complete" && status.file("bad.bin")?.state == "failed"
        }
        try #require(met, "good.bin should complete and bad.bin fail:\n\(settled)\(Check.daemonLog(mount))")
        let reason = "sha256 mismatch: expected \(wrong), got \(bad.sha256)"
        #expect(settled.file("bad.bin")?.failure == reason, "status --json: \(settled)")
        #expect(settled.file("bad.bin")?.cachedBytes == 0, "the bad data still counts as cached: \(settled)")
        #expect(mount.statusText().stdout.contains(reason), "status: \(mount.statusText().stdout)")
        #expect(XAttr.get(mount.path("bad.bin"), "user.rangefs.state") == "failed")
        #expect(XAttr.get(mount.path("bad.bin"), "user.rangefs.error") == reason)
        #expect(XAttr.get(mount.path("good.bin"), "user.rangefs.error") == nil)
        #expect(SHA256.of(mount.path("good.bin")).hash == good.sha256)

        // The bad data is gone from disk: only good.bin's promoted file is left.
        let files = CacheDataFile.list(cacheDir: mount.cacheDir)
        #expect(files.count == 1 && files.first?.size == good.size && files.first?.isPartial == false,
                "cache data files: \(files.map { "\($0.name) \($0.size)" })")

        // Nobody gets those bytes any more, nor are they fetched again while the manifest
        // still promises other ones: the handle opened before (whose first pages the kernel
        // had cached) and a new reader both fail at once.
        let mark = fx.nginx.accessLog.mark()
        let again = Self.pread(handle, offset: 0, length: 65536)
        #expect(again.errno == EIO && again.bytes.isEmpty, "the handle opened before the failure: \(again)")
        let whole = Reading.whole(mount.path("bad.bin"), timeout: 30)
        #expect(whole.failedWithEIO && whole.bytes.isEmpty, "a new reader of the failed file: \(whole)")
        fx.nginx.accessLog.waitUntilQuiet()
        let refetched = fx.nginx.accessLog.entries(for: "/" + bad.name, since: mark)
        #expect(refetched.isEmpty, "the failed file was fetched again: \(refetched.map(\.description))")
        let verify = mount.rangefs("verify", timeout: 60)
        #expect(verify.stdout.contains("bad.bin: \(reason)"), "verify should report the failed file: \(verify)")
        let logged = mount.log().split(separator: "\n").filter { $0.contains("sha256 mismatch") }
        #expect(logged.count == 1, "the mismatch should be logged once: \(logged)")

        // The manifest is corrected: the next read fetches the file again, and it completes.
        try manifest(badDigest: bad.sha256).write(toFile: mount.manifestPath, atomically: true, encoding: .utf8)
        let refresh = mount.rangefs("refresh", timeout: 60)
        Check.succeeded(refresh, "rangefs refresh", mount: mount)
        #expect(SHA256.of(mount.path("bad.bin")).hash == bad.sha256, "bad.bin after the corrected manifest\(Check.daemonLog(mount))")
        let (fixed, completed) = try mount.waitForStatus(timeout: 30) { $0.file("bad.bin")?.state == "complete" }
        #expect(completed, "bad.bin should complete with the right sha256:\n\(fixed)\(Check.daemonLog(mount))")
        // The handle opened before fails, or (from the kernel's cache of the file) gives the
        // bytes that have just been verified; nothing else.
        let late = Self.pread(handle, offset: 0, length: 4096)
        let verified = try bad.bytes(offset: 0, length: 4096)
        #expect(late.errno == EIO || late.bytes == verified, "the old handle after the fix: \(late)")
    }

    /// `pread` on an open descriptor: the bytes, or the errno it failed with.
    static func pread(_ descriptor: Int32, offset: Int, length: Int) -> (bytes: Data, errno: Int32) {
        var buffer = [UInt8](repeating: 0, count: length)
        let count = buffer.withUnsafeMutableBytes { Glibc.pread(descriptor, $0.baseAddress, length, off_t(offset)) }
        return count < 0 ? (Data(), errno) : (Data(buffer.prefix(count)), 0)
    }
}
