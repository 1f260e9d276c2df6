import FaultServer
import Foundation
import RangeFSCore
import Testing

/// Servers stating sizes no file has: each such file is refused alone, with a reason, and
/// nothing of it is kept that could crash this mount or the next.
extension RangeFSIntegrationTests {
    @Test("sizes: files stated over 1 PiB (to 2^64-1 and past) fail with a reason; ls -l works, a sibling reads exact, a remount with the server gone lives")
    func absurdStatedSizesAreRefusedPerFile() throws {
        let server = try FaultServer()
        let data = RandomBytes.make(count: 256 << 10, seed: 0x5125)
        server.publish("ok.bin", bytes: data)
        // Each states its size in its HEAD's Content-Length and its 206s' Content-Range totals.
        let claims = ["over-limit.bin": "1125899906842625", "int64-max.bin": "9223372036854775807",
                      "uint64-max.bin": "18446744073709551615", "past-uint64.bin": "18446744073709551616"]
        for (name, claim) in claims {
            server.publish(name, bytes: Array(data.prefix(4096)))
            server.configure(name, PathOptions(statedSize: claim))
        }
        let cacheDir = try fx.makeCacheDir()
        let names = ["ok.bin"] + claims.keys.sorted()
        let mount = try fx.mount(server: server, names: names, cacheDir: cacheDir)

        let listing = Command.run(["ls", "-l", mount.mountpoint], timeout: 60)
        #expect(listing.stdout.contains("ok.bin"), "ls -l shows the sibling: \(listing)\(Check.daemonLog(mount))")
        for (name, claim) in claims.sorted(by: { $0.key < $1.key }) {
            let out = Reading.range(mount.path(name), offset: 0, length: 4096)
            #expect(!out.succeeded && !out.result.timedOut, "\(name) (stated \(claim)) must fail at once: \(out)")
            if UInt64(claim) != nil {
                #expect(out.result.stderr.contains("File too large"), "\(name) (stated \(claim)) fails with EFBIG: \(out)")
            }
        }
        let sibling = Reading.whole(mount.path("ok.bin"))
        #expect(sibling.succeeded && sibling.bytes == Data(data), "the sibling reads byte-exact: \(sibling)\(Check.daemonLog(mount))")
        #expect(mount.isMounted, "the mount lives on")

        let status = try #require(mount.status().status, "status answers")
        let refused = status.files.first { $0.path == "int64-max.bin" }
        #expect(refused?.failure?.contains("largest file a mount accepts") == true, "status says why: \(String(describing: refused))")
        #expect(mount.log().contains("largest file a mount accepts"), "the log says why\(Check.daemonLog(mount))")
        #expect(mount.unmount().succeeded)

        // What the cache kept of this mount, with the server gone, mounts again and reads the sibling.
        #expect(server.stop())
        let again = try fx.mount(server: server, names: names, cacheDir: cacheDir)
        let relisted = Command.run(["ls", "-l", again.mountpoint], timeout: 60)
        #expect(relisted.stdout.contains("ok.bin"), "ls -l after the remount: \(relisted)\(Check.daemonLog(again))")
        let kept = Reading.whole(again.path("ok.bin"))
        #expect(kept.succeeded && kept.bytes == Data(data), "the sibling from the cache: \(kept)\(Check.daemonLog(again))")
        #expect(again.isMounted, "the remount lives on")
    }

    @Test("sizes: a cache database record stating 2^62 bytes is not used; the remount lives and asks the server again")
    func anAbsurdRecordInTheCacheDatabaseIsNotUsed() throws {
        let server = try FaultServer()
        let data = RandomBytes.make(count: 64 << 10, seed: 0x5126)
        server.publish("ok.bin", bytes: data)
        let cacheDir = try fx.makeCacheDir()
        let first = try fx.mount(server: server, names: ["ok.bin"], cacheDir: cacheDir)
        #expect(Reading.range(first.path("ok.bin"), offset: 0, length: 4096).succeeded)
        #expect(first.unmount().succeeded)

        let database = cacheDir.appendingPathComponent("metadata.sqlite").path
        let edit = Command.run(["sqlite3", database, "UPDATE cached_file SET size = 4611686018427387904, blockSize = 0"])
        #expect(edit.succeeded, "the record is edited: \(edit)")

        let again = try fx.mount(server: server, names: ["ok.bin"], cacheDir: cacheDir)
        let listing = Command.run(["ls", "-l", again.mountpoint], timeout: 60)
        #expect(listing.succeeded && listing.stdout.contains("65536"), "the size is asked again: \(listing)\(Check.daemonLog(again))")
        let out = Reading.whole(again.path("ok.bin"))
        #expect(out.succeeded && out.bytes == Data(data), "read byte-exact: \(out)\(Check.daemonLog(again))")
        #expect(again.unmount().succeeded)
        let kept = Command.run(["sqlite3", database, "SELECT size, blockSize FROM cached_file"])
        #expect(kept.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "65536|262144",
                "the record is replaced by what the server said: \(kept)")
    }

    @Test("sizes: a web listing stating 2^63-1 bytes: that file fails with EFBIG, ls -l works, a sibling reads exact; the kept listing remounts with the server gone")
    func anAbsurdListedSizeIsRefusedAndItsKeptListingRemounts() throws {
        let server = try FaultServer()
        let data = RandomBytes.make(count: 64 << 10, seed: 0x5127)
        server.publish("d/ok.bin", bytes: data)
        server.publish("d/big.bin", bytes: Array(data.prefix(4096)))
        let listing = """
        [
        { "name":"big.bin", "type":"file", "mtime":"Tue, 24 Nov 2026 10:12:45 GMT", "size":9223372036854775807 },
        { "name":"ok.bin", "type":"file", "mtime":"Tue, 24 Nov 2026 10:12:45 GMT", "size":\(data.count) }
        ]
        """
        server.publish("d/", bytes: Array(listing.utf8))
        server.configure("d/", PathOptions(contentType: "application/json"))
        let cacheDir = try fx.makeCacheDir()
        let mount = try fx.prepare(source: server.url("d/").absoluteString, cacheDir: cacheDir, options: Fixture.readsOnly)
        try mount.mount()

        let shown = Command.run(["ls", "-l", mount.mountpoint], timeout: 60)
        #expect(shown.stdout.contains("ok.bin"), "ls -l shows the sibling: \(shown)\(Check.daemonLog(mount))")
        let refused = Reading.range(mount.path("big.bin"), offset: 0, length: 4096)
        #expect(!refused.succeeded && refused.result.stderr.contains("File too large"), "big.bin fails with EFBIG: \(refused)")
        #expect(server.requests(for: "d/big.bin").isEmpty, "nothing asked for a refused size")
        let sibling = Reading.whole(mount.path("ok.bin"))
        #expect(sibling.succeeded && sibling.bytes == Data(data), "the sibling reads byte-exact: \(sibling)\(Check.daemonLog(mount))")
        #expect(mount.unmount().succeeded)

        #expect(server.stop())
        let again = try fx.prepare(source: server.url("d/").absoluteString, cacheDir: cacheDir, options: Fixture.readsOnly)
        try again.mount()
        let kept = Command.run(["ls", "-l", again.mountpoint], timeout: 60)
        #expect(kept.stdout.contains("ok.bin"), "the kept listing is shown: \(kept)\(Check.daemonLog(again))")
        let cached = Reading.whole(again.path("ok.bin"))
        #expect(cached.succeeded && cached.bytes == Data(data), "the sibling from the cache: \(cached)\(Check.daemonLog(again))")
        let stillRefused = Reading.range(again.path("big.bin"), offset: 0, length: 4096)
        #expect(stillRefused.result.stderr.contains("File too large"), "big.bin is refused again: \(stillRefused)")
        #expect(again.isMounted, "the remount lives on")
    }
}
