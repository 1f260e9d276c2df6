import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A cache directory someone else controls is refused, and nothing in the cache is reached
/// through a symbolic link. Run as root: the other user is `nobody`.
extension RangeFSIntegrationTests {
    static let nobody: uid_t = 65534

    @Test("cache dir: one owned by another user, or writable by others, is refused at mount with the reason; nothing is created in it")
    func cacheDirectoryOthersControlIsRefused() throws {
        let file = fx.data.file("tail.bin")
        let entries = [ManifestLine(path: "tail.bin", url: fx.nginx.url(file.name))]

        let owned = try fx.makeCacheDir()
        #expect(chown(owned.path, Self.nobody, gid_t(Self.nobody)) == 0, "chown: \(String(cString: strerror(errno)))")
        let refusedOwned = try fx.mount(entries, cacheDir: owned, options: Fixture.readsOnly, mount: false)
        let ownedResult = refusedOwned.tryMount()
        #expect(!ownedResult.succeeded && ownedResult.stderr.contains("belongs to user 65534"), "\(ownedResult)")
        #expect(!refusedOwned.isMounted)
        let planted = (try? FileManager.default.contentsOfDirectory(atPath: owned.path)) ?? []
        #expect(!planted.contains("lock") && !planted.contains("metadata.sqlite"), "created in a refused directory: \(planted)")

        let open = try fx.makeCacheDir()
        _ = chmod(open.path, 0o777)
        let refusedOpen = try fx.mount(entries, cacheDir: open, options: Fixture.readsOnly, mount: false)
        let openResult = refusedOpen.tryMount()
        #expect(!openResult.succeeded && openResult.stderr.contains("writable by its group and others (mode 777)"), "\(openResult)")
        #expect(!refusedOpen.isMounted)
    }

    @Test("cache dir: a data file replaced by a symbolic link is not followed: the read fails or fetches again, never serving the link's bytes")
    func cacheDataFileSymlinkIsNotFollowed() throws {
        let file = fx.data.file("tail.bin")
        let original = try Data(contentsOf: URL(fileURLWithPath: fx.data.dir.appendingPathComponent(file.name).path))
        let cache = try fx.makeCacheDir()
        let entries = [ManifestLine(path: "tail.bin", url: fx.nginx.url(file.name))]
        let first = try fx.mount(entries, cacheDir: cache, options: Fixture.readsOnly)
        #expect(SHA256.of(first.path("tail.bin")).hash == file.sha256)
        #expect(first.unmount().succeeded)

        let data = cache.appendingPathComponent("data")
        let names = try FileManager.default.contentsOfDirectory(atPath: data.path)
        try #require(names.count == 1, "one data file: \(names)")
        let plantedPath = fx.workDir.appendingPathComponent("planted.bin").path
        let planted = Data(repeating: 0x41, count: original.count)
        try planted.write(to: URL(fileURLWithPath: plantedPath))
        let dataFile = data.appendingPathComponent(names[0]).path
        try FileManager.default.removeItem(atPath: dataFile)
        try FileManager.default.createSymbolicLink(atPath: dataFile, withDestinationPath: plantedPath)

        let again = try fx.mount(entries, cacheDir: cache, options: Fixture.readsOnly)
        let out = Reading.whole(again.path("tail.bin"))
        #expect(out.bytes != planted || planted.isEmpty, "the symbolic link's bytes were served")
        #expect(out.failedWithEIO || (out.succeeded && out.bytes == original), "\(out)\(Check.daemonLog(again))")
        let log = (try? String(contentsOfFile: again.logPath, encoding: .utf8)) ?? ""
        #expect(out.succeeded || log.contains("is a symbolic link; it is not followed"), "the log names the link\(Check.daemonLog(again))")
        #expect((try? Data(contentsOf: URL(fileURLWithPath: plantedPath))) == planted, "the link's target was written to")
        #expect(again.unmount().succeeded)
    }

    @Test("cache dir: the default one (under XDG_CACHE_HOME) is created private and mounts")
    func defaultCacheDirectoryMounts() throws {
        let file = fx.data.file("tail.bin")
        let xdg = fx.workDir.appendingPathComponent("xdg-cache")
        try FileManager.default.createDirectory(at: xdg, withIntermediateDirectories: true)
        let mount = try fx.mount([ManifestLine(path: "tail.bin", url: fx.nginx.url(file.name))], options: Fixture.readsOnly, mount: false)
        let argv = Mount.withEnvironment(["XDG_CACHE_HOME": xdg.path], [fx.binary, "mount", mount.manifestPath, mount.mountpoint] + Fixture.readsOnly)
        let started = Command.run(argv, timeout: 60)
        defer { _ = Command.run([fx.binary, "unmount", mount.mountpoint]); mount.teardown() }
        #expect(started.succeeded, "\(started)")
        #expect(Poll.until(seconds: 30) { mount.isMounted }, "mounted")
        #expect(SHA256.of(mount.path("tail.bin")).hash == file.sha256)
        let made = try FileManager.default.contentsOfDirectory(atPath: xdg.appendingPathComponent("rangefs").path)
        #expect(made.count == 1, "one cache directory under XDG_CACHE_HOME/rangefs: \(made)")
        var info = stat()
        #expect(stat(xdg.appendingPathComponent("rangefs/" + (made.first ?? "")).path, &info) == 0 && info.st_mode & 0o777 == 0o700)
    }
}
