import Foundation
import Testing

/// Wrong bytes hunted by many readers at once. The Go program in `Tests/Conformance/stress`
/// opens files of a web directory from 8 workers, reads them at random (small, large, across
/// block edges, at the end, whole, in sequential runs), compares every byte with the original,
/// closes them and often opens the same file again at once: a handle opened right after another
/// closed, while its file was completed and promoted, once served zeros. On loopback the readers
/// alone complete every file within a second, so the files nobody has open are evicted about once
/// a second: they are fetched, completed and promoted again and again while the readers run. Each
/// prefetch policy completes them at other moments: with `none` only the readers' own reads do,
/// with `opened` the background completes what was opened, with `all` it completes everything,
/// and files are opened again as complete files. Once every file is complete the readers run again.
/// Where the kernel offers FUSE passthrough (Linux 6.9 or later, as root), complete files are
/// handed to it, so both phases also mix passed-through handles with page-cache ones; elsewhere
/// every read goes through the daemon and the test holds all the same.
extension RangeFSIntegrationTests {
    @Test("read race stress: 8 readers open, read at random, close and reopen files while they are evicted, completed and promoted again and again, then once all are complete; every byte is right",
          arguments: ["none", "opened", "all"])
    func noWrongByteUnderReadRaceStress(prefetch: String) throws {
        let program = try ReadRaceStress.program.get()
        let tree = try ReadRaceStress.tree.get()
        let server = try ListingServer(.nginx, serving: tree.dir)
        defer { server.stop() }
        let mount = try fx.prepare(source: server.baseURL + "/html/", options: ["--prefetch", prefetch])
        try mount.mount()
        defer { mount.teardown() }

        let (whileCompleting, evictions) = try ReadRaceStress.run(program, mount: mount, originals: tree.dir,
                                                                  seconds: ReadRaceStress.racingSeconds, evicting: true)
        try #require(whileCompleting.succeeded, "--prefetch \(prefetch), while files complete:\n\(whileCompleting)\(Check.daemonLog(mount))")
        let completions = mount.completionLines().count

        // With --prefetch none only reads complete a file: read whole what the readers left.
        let settling = Date()
        for file in try mount.statusSnapshot().files where file.state != "complete" {
            let sum = SHA256.of(mount.path(file.path)).hash
            #expect(sum == tree.sha256[file.path], "--prefetch \(prefetch): sha256 of \(file.path) read whole\(Check.daemonLog(mount))")
        }
        let (status, complete) = try mount.waitForStatus(timeout: 90) { $0.allComplete }
        try #require(complete, "--prefetch \(prefetch): not every file complete:\n\(status)\(Check.daemonLog(mount))")
        #expect(status.files.count == tree.sha256.count, "--prefetch \(prefetch): status lists \(status.files.count) files:\n\(status)")
        let settled = Date().timeIntervalSince(settling)

        let (onceComplete, _) = try ReadRaceStress.run(program, mount: mount, originals: tree.dir,
                                                       seconds: ReadRaceStress.completeSeconds, evicting: false)
        #expect(onceComplete.succeeded, "--prefetch \(prefetch), every file complete:\n\(onceComplete)\(Check.daemonLog(mount))")

        let passedThrough = Self.kernelPassesThrough && !mount.log().contains("not passed through by the kernel")
        print("""
            read race stress, --prefetch \(prefetch) (passthrough \(passedThrough ? "offered" : "not offered")): \
            racing \(String(format: "%.1f", whileCompleting.seconds)) s (\(evictions) evictions, \(completions) completions), \
            completing the rest \(String(format: "%.1f", settled)) s, complete \(String(format: "%.1f", onceComplete.seconds)) s
            \(whileCompleting.stdout)\(onceComplete.stdout)
            """)
        Check.succeeded(mount.unmount(), "rangefs unmount", mount: mount)
    }
}

/// The stress program, built once, and the tree it reads, made once per test process.
enum ReadRaceStress {
    static let racingSeconds = 28
    static let completeSeconds = 10
    static let workers = 8

    /// Sizes around the 256 KiB block and the page: empty, one byte, either side of each edge,
    /// an odd size, small files that complete (and so are promoted) often, and files of several MiB.
    static let sizes: [String: Int] = [
        "empty.bin": 0, "one.bin": 1, "page-less-one.bin": 4_095, "page.bin": 4_096, "three-pages.bin": 12_288,
        "quarter-block.bin": 65_536, "half-block-plus-one.bin": 131_073,
        "block-less-one.bin": 262_143, "block.bin": 262_144, "block-plus-one.bin": 262_145,
        "odd.bin": 777_777,
        "blocks/two-less-one.bin": 524_287, "blocks/two.bin": 524_288, "blocks/one-mib-less-one.bin": 1_048_575,
        "blocks/one-mib.bin": 1_048_576, "blocks/one-mib-plus-one.bin": 1_048_577,
        "blocks/three-million-one.bin": 3_000_001,
        "big/four-mib.bin": 4 << 20, "big/four-mib-plus-one.bin": (4 << 20) + 1,
        "big/five-mib-odd.bin": (5 << 20) + 12_345, "big/six-mib-less-one.bin": (6 << 20) - 1,
        "big/eight-mib.bin": 8 << 20,
    ]

    struct Tree {
        let dir: URL
        /// Relative path → sha256.
        let sha256: [String: String]
    }

    static let tree: Result<Tree, Error> = Result {
        let dir = try Scratch.makeDir("stress-tree")
        for (path, size) in sizes {
            let url = dir.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            let r = Command.run(["sh", "-c", "head -c \(size) /dev/urandom > \"$0\"", url.path], timeout: 60)
            guard r.succeeded else { throw HarnessError("could not write \(path):\n\(r)") }
        }
        _ = Command.run(["chmod", "-R", "a+rX", dir.path], timeout: 30)
        return Tree(dir: dir, sha256: try RangeFSIntegrationTests.filesOnDisk(below: dir))
    }

    static let program: Result<String, Error> = Result {
        try GoProgram.build("Tests/Conformance/stress", named: "rangefs-stress")
    }

    /// The program over `mount` for `seconds`, with a fresh seed (it prints it to run again);
    /// `evicting`: meanwhile `rangefs evict`, half a second after the last one ended. Returns its
    /// result and the evictions.
    static func run(_ program: String, mount: Mount, originals: URL, seconds: Int,
                    evicting: Bool) throws -> (CommandResult, evictions: Int) {
        let seed = Int.random(in: 1...999_999)
        let readers = try BackgroundCommand([program, mount.mountpoint, originals.path, String(seconds), String(workers), String(seed)])
        // The program ends itself after a read stuck for 60 s; this bound is for a program that cannot.
        let deadline = Date().addingTimeInterval(Double(seconds) + 120)
        var evictions = 0
        while evicting, Date() < deadline, !Poll.until(seconds: 0.5, every: 0.05, { !readers.isRunning }) {
            let evicted = mount.rangefs("evict")
            guard evicted.succeeded else {
                Issue.record("rangefs evict failed:\n\(evicted)\(Check.daemonLog(mount))")
                break
            }
            evictions += 1
        }
        return (readers.wait(timeout: max(0, deadline.timeIntervalSinceNow)), evictions)
    }
}
