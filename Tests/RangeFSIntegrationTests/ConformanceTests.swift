import Foundation
import Testing

/// Go's file-system conformance test, `testing/fstest.TestFS`, over a real mount of a web
/// directory, then every file's bytes through the mount against the original
/// (`Tests/Conformance/fstest`). A read that races the cache's own work (a fetch, a commit, the
/// move of a finished file) may come back as zeros only now and then, so each prefetch mode gets
/// many fresh mounts, each with an empty cache, and every run that fails is reported with the
/// Go program's output and the daemon log.
extension RangeFSIntegrationTests {
    /// Fresh mounts per prefetch mode: a race that shows in one run of 20 shows in the 24 runs
    /// of the three modes about two times in three.
    static let conformanceRunsPerMode = 8
    /// Mounts checked at the same time, each by its own checker: a run is mostly the checker's
    /// own CPU (TestFS reads each file over twice in steps of 1 to 3 bytes), so two at once
    /// use both cores of a small machine.
    static let conformanceMountsAtOnce = 2

    @Test("conformance: Go's fstest.TestFS and a byte comparison with the originals pass over fresh mounts of a web directory, run after run",
          arguments: ["none", "opened", "all"])
    func goFSConformanceOverFreshMounts(prefetch: String) throws {
        let checker = try ConformanceChecker.path
        let tree = try Scratch.makeDir("conformance-tree")
        try ConformanceTree.make(in: tree)
        let server = try ListingServer(.nginx, serving: tree)
        defer { server.stop() }

        let runs = Self.conformanceRunsPerMode
        var run = 0
        while run < runs {
            let mounts = try (0..<min(Self.conformanceMountsAtOnce, runs - run)).map { _ in
                let mount = try fx.prepare(source: server.baseURL + "/html/", options: ["--prefetch", prefetch])
                try mount.mount()
                return mount
            }
            let checkers = try mounts.map { try BackgroundCommand([checker, $0.mountpoint, tree.path]) }
            let results = checkers.map { $0.wait(timeout: 240) }
            for (mount, result) in zip(mounts, results) {
                run += 1
                let passed = result.succeeded
                #expect(passed, """
                    run \(run) of \(runs) with --prefetch \(prefetch): \(ConformanceChecker.describe(result))\
                    \(Check.daemonLog(mount))
                    """)
                #expect(mount.unmount().succeeded, "run \(run) of \(runs): unmount\(Check.daemonLog(mount))")
                // Each run's cache holds the whole tree by now: gone before the next is made.
                Scratch.remove(URL(fileURLWithPath: mount.mountpoint).deletingLastPathComponent())
            }
            // A run that hung would only hang again: the report of this one is enough.
            if results.contains(where: \.timedOut) { break }
        }
    }
}

/// The tree the conformance test mounts: 28 files, each size around the 4 KiB page and the
/// 256 KiB block (empty, one byte, a page less one, a page, a block and one byte, exactly four
/// blocks, eleven blocks and a part) in each of four places whose names have spaces, brackets,
/// `%` and unicode, of random bytes; and an empty directory.
enum ConformanceTree {
    static let sizes = [0, 1, 4_095, 4_096, 262_145, 1_048_576, 3_000_001]

    static let places = [
        "100% done/deep er/50%41 SIZE.dat",
        "Album [2024]/CD 1/track SIZE [live].mp3",
        "size SIZE.bin",
        "ünïcødé dir/ünïcødé – SIZE.flac",
    ]

    static let emptyDirectory = "empty dir"

    static func make(in root: URL) throws {
        let manager = FileManager.default
        try manager.createDirectory(at: root.appendingPathComponent(emptyDirectory), withIntermediateDirectories: true)
        var seed: UInt64 = 0xC0_4F_0A
        for size in sizes {
            for place in places {
                let file = root.appendingPathComponent(place.replacingOccurrences(of: "SIZE", with: String(size)))
                try manager.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
                seed += 1
                try Data(RandomBytes.make(count: size, seed: seed)).write(to: file)
            }
        }
    }
}

/// The Go program of `Tests/Conformance/fstest`, built once per test process.
enum ConformanceChecker {
    static var path: String {
        get throws { try built.get() }
    }

    private static let built: Result<String, Error> = Result {
        try GoProgram.build("Tests/Conformance/fstest", named: "rangefs-conformance")
    }

    /// The checker's whole output (its failure can run long), with how it ended.
    static func describe(_ result: CommandResult) -> String {
        let ending = result.timedOut ? "timed out (killed)" : "exit \(result.status)"
        let output = (result.stdout + result.stderr).trimmingCharacters(in: .whitespacesAndNewlines)
        return "\(ending) after \(String(format: "%.1f", result.seconds)) s\n\(String(output.prefix(12_000)))"
    }
}
