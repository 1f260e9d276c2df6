import Foundation
import Testing

/// Go's file-system conformance test, `testing/fstest.TestFS`, over a real mount of a web
/// directory, then every file's bytes through the mount against the original
/// (`Tests/Conformance/fstest`). A read that races the fetch of its block can come back as
/// zeros only now and then, so each prefetch mode gets many fresh mounts, each with an empty
/// cache, and every run that fails is reported with the Go program's output and the daemon log.
extension RangeFSIntegrationTests {
    /// Fresh mounts per prefetch mode: one run takes about 6 s with a debug build on a 2-core
    /// machine, so the three modes together take 2 to 3 minutes.
    static let conformanceRunsPerMode = 8

    @Test("conformance: Go's fstest.TestFS and a byte comparison with the originals pass over fresh mounts of a web directory, run after run",
          arguments: ["none", "opened", "all"])
    func goFSConformanceOverFreshMounts(prefetch: String) throws {
        let checker = try ConformanceChecker.path
        let tree = try Scratch.makeDir("conformance-tree")
        try ConformanceTree.make(in: tree)
        let server = try ListingServer(.nginx, serving: tree)
        defer { server.stop() }

        let runs = Self.conformanceRunsPerMode
        for run in 1...runs {
            let mount = try fx.prepare(source: server.baseURL + "/html/", options: ["--prefetch", prefetch])
            try mount.mount()
            let result = Command.run([checker, mount.mountpoint, tree.path], timeout: 120)
            let passed = result.succeeded
            #expect(passed, """
                run \(run) of \(runs) with --prefetch \(prefetch): \(ConformanceChecker.describe(result))\
                \(Check.daemonLog(mount))
                """)
            #expect(mount.unmount().succeeded, "run \(run) of \(runs): unmount\(Check.daemonLog(mount))")
            // Each run's cache holds the whole tree by now: gone before the next is made.
            Scratch.remove(URL(fileURLWithPath: mount.mountpoint).deletingLastPathComponent())
            // A run that hung would only hang again: the report of this one is enough.
            if result.timedOut { break }
        }
    }
}

/// The tree the conformance test mounts: files of each size around the 4 KiB page and the
/// 256 KiB block (empty, one byte, a page less one, a page, a block and one byte, exactly four
/// blocks, eleven blocks and a part), of random bytes, in places whose names have spaces,
/// brackets, `%` and unicode; and an empty directory.
///
/// TestFS reads every file more than twice over in reads of 1 to 3 bytes, about a second of
/// CPU per megabyte: the two largest sizes are in one place each, so a run takes seconds and
/// many fresh mounts fit in the test's time.
enum ConformanceTree {
    static let places = [
        "100% done/deep er/50%41 SIZE.dat",
        "Album [2024]/CD 1/track SIZE [live].mp3",
        "size SIZE.bin",
        "ünïcødé dir/ünïcødé – SIZE.flac",
    ]

    /// Each size with the places it is in (indexes into `places`): 22 files, 5 MB.
    static let files: [(size: Int, places: [Int])] = [
        (0, [0, 1, 2, 3]), (1, [0, 1, 2, 3]), (4_095, [0, 1, 2, 3]), (4_096, [0, 1, 2, 3]),
        (262_145, [0, 1, 2, 3]), (1_048_576, [1]), (3_000_001, [3]),
    ]

    static let emptyDirectory = "empty dir"

    static func make(in root: URL) throws {
        let manager = FileManager.default
        try manager.createDirectory(at: root.appendingPathComponent(emptyDirectory), withIntermediateDirectories: true)
        var seed: UInt64 = 0xC0_4F_0A
        for (size, placeIndexes) in files {
            for index in placeIndexes {
                let file = root.appendingPathComponent(places[index].replacingOccurrences(of: "SIZE", with: String(size)))
                try manager.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
                seed += 1
                try Data(RandomBytes.make(count: size, seed: seed)).write(to: file)
            }
        }
    }
}

/// The Go program of `Tests/Conformance/fstest`, built once per test process into the scratch
/// directory. Go's caches and home go there too, so the build needs no home directory and
/// nothing from the network.
enum ConformanceChecker {
    static var path: String {
        get throws { try built.get() }
    }

    private static let built: Result<String, Error> = Result { try build() }

    static var source: URL {
        RangeFSBinary.packageRoot.appendingPathComponent("Tests/Conformance/fstest")
    }

    /// `go` on PATH, else where Debian's golang-go and the upstream archive put it.
    static func goBinary() -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let directories = path.split(separator: ":").map(String.init) + ["/usr/lib/go/bin", "/usr/local/go/bin"]
        return directories.map { ($0 as NSString).appendingPathComponent("go") }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    private static func build() throws -> String {
        guard let go = goBinary() else {
            throw HarnessError("""
                Go is not installed (no `go` on PATH): the conformance test builds its checker \
                (Tests/Conformance/fstest) with it. Run scripts/install-deps.sh, which installs golang-go.
                """)
        }
        let dir = try Scratch.makeDir("conformance-go")
        let output = dir.appendingPathComponent("rangefs-conformance").path
        var environment: [String] = []
        for (variable, name) in [("GOCACHE", "cache"), ("GOPATH", "path"), ("HOME", "home")] {
            let sub = dir.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
            environment.append("\(variable)=\(sub.path)")
        }
        // The standard library alone: no proxy, no toolchain download, no C compiler.
        environment += ["GOPROXY=off", "GOTOOLCHAIN=local", "CGO_ENABLED=0", "GOFLAGS="]
        let result = Command.run(["env", "-C", source.path] + environment + [go, "build", "-o", output, "."], timeout: 300)
        guard result.succeeded, FileManager.default.isExecutableFile(atPath: output) else {
            throw HarnessError("building the conformance checker failed:\n\(result)")
        }
        return output
    }

    /// The checker's whole output (its failure can run long), with how it ended.
    static func describe(_ result: CommandResult) -> String {
        let ending = result.timedOut ? "timed out (killed)" : "exit \(result.status)"
        let output = (result.stdout + result.stderr).trimmingCharacters(in: .whitespacesAndNewlines)
        return "\(ending) after \(String(format: "%.1f", result.seconds)) s\n\(String(output.prefix(12_000)))"
    }
}
