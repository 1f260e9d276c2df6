import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Everything one integration test uses: the test data, its own nginx, a work directory,
/// and the mounts it made. `teardown()` unmounts every mount, stops nginx and removes
/// the work directory; the suite calls it from `deinit`, so it runs when a test fails too.
final class Fixture {
    let data: TestData
    let binary: String
    let nginx: NginxServer
    let workDir: URL
    private var mounts: [Mount] = []
    private var tornDown = false

    static var hasFuse: Bool { FileManager.default.fileExists(atPath: "/dev/fuse") }

    /// Mount options for tests that measure what reads alone fetch: no background
    /// completion of files (the default, `--prefetch all`, fetches everything).
    static let readsOnly = ["--prefetch", "none"]

    init() throws {
        binary = try RangeFSBinary.path()
        data = try TestData.shared
        workDir = try Scratch.makeDir("test")
        do {
            nginx = try NginxServer(serving: data.dir)
        } catch {
            Scratch.remove(workDir)
            throw error
        }
    }

    /// A `Mount` of `entries` kept until teardown; mounted unless `mount` is false.
    func mount(_ entries: [ManifestLine], cacheDir: URL? = nil, options: [String] = [],
               mount doMount: Bool = true) throws -> Mount {
        let m = try Mount(binary: binary, entries: entries, workDir: try Scratch.makeDir("mount"),
                          cacheDir: cacheDir, options: options)
        mounts.append(m)
        if doMount { try m.mount() }
        return m
    }

    /// A `Mount` of a raw manifest text (for malformed manifests, or formats other than plain
    /// text), not mounted.
    func prepare(manifest: String, name: String, options: [String] = []) throws -> Mount {
        let m = try Mount(binary: binary, manifest: manifest, manifestName: name,
                          workDir: try Scratch.makeDir("mount"), options: options)
        mounts.append(m)
        return m
    }

    /// A mount of `source` (a URL, not written anywhere), unmounted at teardown.
    func prepare(source: String, cacheDir: URL? = nil, options: [String] = []) throws -> Mount {
        let m = try Mount(binary: binary, source: source, workDir: try Scratch.makeDir("mount"), cacheDir: cacheDir, options: options)
        mounts.append(m)
        return m
    }

    /// A fresh directory for a cache that outlives single mounts.
    func makeCacheDir() throws -> URL {
        let dir = workDir.appendingPathComponent("cache-\(UUID().uuidString.prefix(8).lowercased())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    /// The standard layout: every generated file once, nested paths included, plus one
    /// path-less line whose name must come from the percent-decoded URL.
    struct Placed {
        let path: String
        let file: TestFile
    }

    var standardLayout: [Placed] {
        [
            Placed(path: "empty.bin", file: data.file("empty.bin")),
            Placed(path: "one.bin", file: data.file("one.bin")),
            Placed(path: "blocks/block.bin", file: data.file("block.bin")),
            Placed(path: "blocks/block-plus-one.bin", file: data.file("block-plus-one.bin")),
            Placed(path: "blocks/deeper/tail.bin", file: data.file("tail.bin")),
            Placed(path: "big.bin", file: data.file("big.bin")),
            Placed(path: "podcast/episode.mp3", file: data.file(TestData.mp3Name)),
            Placed(path: TestData.spacedName, file: data.file(TestData.spacedName)),
        ]
    }

    var standardEntries: [ManifestLine] {
        standardLayout.map { placed in
            placed.path == TestData.spacedName
                ? ManifestLine(path: nil, url: nginx.url(placed.file.name))
                : ManifestLine(path: placed.path, url: nginx.url(placed.file.name))
        }
    }

    func teardown() {
        guard !tornDown else { return }
        tornDown = true
        for m in mounts.reversed() { m.teardown() }
        nginx.stop()
        for m in mounts { Scratch.remove(URL(fileURLWithPath: m.manifestPath).deletingLastPathComponent()) }
        mounts.removeAll()
        Scratch.remove(workDir)
    }

    deinit { teardown() }
}

/// Assertions that attach the command and daemon log to a failure.
enum Check {
    /// Expects `r` to have exited 0 in time.
    @discardableResult
    static func succeeded(_ r: CommandResult, _ what: String, mount: Mount? = nil,
                          sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        if r.succeeded { return true }
        Issue.record("\(what) failed:\n\(r)\(daemonLog(mount))", sourceLocation: sourceLocation)
        return false
    }

    static func daemonLog(_ mount: Mount?) -> String {
        guard let mount else { return "" }
        return "\n--- daemon log (tail) ---\n\(mount.logTail())"
    }

    /// Runs `dd` for `[offset, offset+length)` of `path`; returns the bytes read.
    static func ddRead(_ path: String, offset: Int, length: Int, timeout: Double = 60) -> CommandResult {
        Command.run(["dd", "if=\(path)", "iflag=skip_bytes,count_bytes", "bs=65536",
                     "skip=\(offset)", "count=\(length)", "status=none"], timeout: timeout)
    }
}
