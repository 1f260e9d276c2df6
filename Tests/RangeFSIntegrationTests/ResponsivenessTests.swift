import Foundation
import Testing

/// A slow transfer must not hold up anything else; and how fast a cold read is.
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
        usleep(1_000_000)
        #expect(slow.isRunning, "the throttled read finished within 1 s: the test cannot show anything")

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

    @Test("cold cat of the 100 MiB file through the mount vs curl of the same URL (timing printed)")
    func coldReadTiming() throws {
        let big = fx.data.file("big.bin")
        let url = fx.nginx.url("big.bin")
        let mount = try fx.mount([ManifestLine(path: "big.bin", url: url)])
        let cat = Command.run(["sh", "-c", "cat \"$0\" > /dev/null", mount.path("big.bin")], timeout: 600)
        Check.succeeded(cat, "cold cat big.bin", mount: mount)
        let curl = Command.run(["curl", "-sS", "-o", "/dev/null", url], timeout: 600)
        Check.succeeded(curl, "curl big.bin")
        let warm = Command.run(["sh", "-c", "cat \"$0\" > /dev/null", mount.path("big.bin")], timeout: 600)
        Check.succeeded(warm, "warm cat big.bin", mount: mount)
        func rate(_ seconds: Double) -> String {
            String(format: "%.2f s (%.0f MiB/s)", seconds, Double(big.size) / 1_048_576 / max(seconds, 0.001))
        }
        print("""
            timing, 100 MiB over loopback:
              cold cat through rangefs: \(rate(cat.seconds))
              warm cat through rangefs: \(rate(warm.seconds))
              curl -o /dev/null:        \(rate(curl.seconds))
            """)
        let requests = fx.nginx.accessLog.entries(for: "/big.bin").filter { $0.method == "GET" }
        print("  rangefs made \(requests.count) GET requests for big.bin (curl's is one of them)")
    }
}
