import Foundation
import Testing

/// A slow transfer must not hold up anything else, nor background work a cold read.
extension RangeFSIntegrationTests {
    @Test("during a slow read, ls -la and reads of other files return quickly")
    func slowReadBlocksNothingElse() throws {
        let tail = fx.data.file("tail.bin")      // 770 KiB at 64 KiB/s: about 12 s
        let block = fx.data.file("block.bin")
        let one = fx.data.file("one.bin")
        let mount = try fx.mount([
            ManifestLine(path: "slow/tail.bin", url: fx.nginx.slowURL("tail.bin")),
            ManifestLine(path: "block.bin", url: fx.nginx.url("block.bin")),
            ManifestLine(path: "one.bin", url: fx.nginx.url("one.bin")),
        ])
        Check.succeeded(Command.run(["stat", mount.path("slow/tail.bin")], timeout: 30), "stat slow/tail.bin", mount: mount)
        #expect(SHA256.of(mount.path("block.bin")).hash == block.sha256, "block.bin (now cached)")

        let slow = try BackgroundCommand(["sha256sum", mount.path("slow/tail.bin")])
        // The checks start once the slow read's bytes are arriving from the throttled server.
        let (flowing, arriving) = try mount.waitForStatus(timeout: 30, interval: 0.1) { status in
            (status.file("slow/tail.bin")?.bytesPerSecond ?? 0) > 0
        }
        try #require(arriving, "the slow read's transfer never got going:\n\(flowing)")
        #expect(slow.isRunning, "the throttled read has already finished: the test cannot show anything")

        let checks: [(String, [String], Double)] = [
            ("ls -la of the root", ["ls", "-la", mount.mountpoint], 2),
            ("ls -la of the slow file's directory", ["ls", "-la", mount.path("slow")], 2),
            ("read of the cached block.bin", ["sh", "-c", "cat \"$0\" > /dev/null", mount.path("block.bin")], 2),
            ("cold stat + read of one.bin", ["sha256sum", mount.path("one.bin")], 5),
        ]
        for (what, argv, bound) in checks {
            let r = Command.run(argv, timeout: 30)
            Check.succeeded(r, what, mount: mount)
            print("during the slow read: \(what) took \(String(format: "%.3f", r.seconds)) s")
            #expect(r.seconds < bound, "\(what) took \(r.seconds) s while a slow read was in progress (bound \(bound) s)")
        }
        #expect(slow.isRunning, "the slow read ended before the checks did: they proved less than intended")

        let r = slow.wait(timeout: 90)
        if Check.succeeded(r, "the slow sha256sum", mount: mount) {
            #expect(r.stdout.hasPrefix(tail.sha256), "slow read returned wrong bytes")
        }
        #expect(SHA256.of(mount.path("one.bin")).hash == one.sha256)
    }

    @Test("a cold read of the 100 MiB file returns the right bytes without waiting for background transfers of other files (timing printed)")
    func coldReadTiming() throws {
        let big = fx.data.file("big.bin")
        let url = fx.nginx.url("big.bin")
        // Three names for the 100 MiB file on the throttled location (64 KiB/s) keep every
        // background slot busy: a 4 MiB background chunk there takes about a minute.
        let busyNames = (1...3).map { "busy-\($0).bin" }
        let entries = busyNames.enumerated().map { index, name in
            ManifestLine(path: name, url: fx.nginx.slowURL("big.bin") + "?copy=\(index + 1)")
        } + [ManifestLine(path: "big.bin", url: url)]
        let mount = try fx.mount(entries, options: ["--max-downloads", "3"])
        func busy(_ status: StatusSnapshot) -> [StatusSnapshot.File] {
            status.files.filter { busyNames.contains($0.path) }
        }
        let (before, met) = try mount.waitForStatus(timeout: 30, interval: 0.2) { status in
            busy(status).reduce(0) { $0 + $1.bytesPerSecond } >= 120_000
        }
        try #require(met, "the background did not get busy on the throttled files within 30 s:\n\(before)\n\(mount.logTail())")
        // The heads walk may have fetched big.bin's head and tail (a few hundred KiB) before the
        // throttled files got busy; the read below still fetches more than 99 % of it.
        let headAndTail = 1 << 20
        try #require((before.file("big.bin")?.cachedBytes ?? .max) < headAndTail, "big.bin is not cold:\n\(before)")

        let cold = SHA256.of(mount.path("big.bin"), timeout: 600)
        let afterRead = try mount.statusSnapshot()
        Check.succeeded(cold.result, "cold sha256sum big.bin", mount: mount)
        #expect(cold.hash == big.sha256, "the cold read returned wrong bytes")
        // Had the read waited for any background chunk to end, that chunk (4 MiB) would be cached.
        let chunk = 4 << 20
        #expect(busy(afterRead).allSatisfy { $0.cachedBytes < chunk && $0.state != "complete" },
                "a background chunk ended during the cold read, so the read may have waited for it:\n\(afterRead)")

        let curl = Command.run(["curl", "-sS", "-o", "/dev/null", url], timeout: 600)
        Check.succeeded(curl, "curl big.bin")
        let warm = SHA256.of(mount.path("big.bin"), timeout: 600)
        Check.succeeded(warm.result, "warm sha256sum big.bin", mount: mount)
        #expect(warm.hash == big.sha256, "the warm read returned wrong bytes")
        func rate(_ seconds: Double) -> String {
            String(format: "%.2f s (%.0f MiB/s)", seconds, Double(big.size) / 1_048_576 / max(seconds, 0.001))
        }
        print("""
            timing, 100 MiB over loopback, three background transfers held:
              cold sha256sum through rangefs: \(rate(cold.result.seconds))
              warm sha256sum through rangefs: \(rate(warm.result.seconds))
              curl -o /dev/null:              \(rate(curl.seconds))
              background cached when the cold read ended: \(busy(afterRead).map { "\($0.path) \($0.cachedBytes) B" }.joined(separator: ", "))
            """)
        let requests = fx.nginx.accessLog.entries(for: "/big.bin").filter { $0.method == "GET" }
        print("  rangefs made \(requests.count) GET requests for big.bin (curl's is one of them)")
    }
}
