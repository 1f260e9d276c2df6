import Foundation
import RangeFSCore
import Testing

/// The samples in examples/formats, mounted as they are (only their server moved) and read.
extension RangeFSIntegrationTests {
    static let sampleDemoServer = "http://127.0.0.1:8089"

    @Test("examples/formats: the playlist, the podcast feed, the JSON and YAML collections and the Metalink mount against a server of the demo's files, name every file as documented, and read byte-exact")
    func formatSamplesMountAndRead() throws {
        // The demo's paths, with small random stand-ins for its media; big.bin has the size
        // the collections state for it, and pattern.bin the bytes scripts/demo.sh writes.
        let root = try Scratch.makeDir("demo-media")
        defer { Scratch.remove(root) }
        let media = ["podcast/episode-01.mp3": 300_000, "podcast/episode-02.mp3": 200_001, "big.bin": 64 << 20]
        var sums: [String: String] = [:]
        for (path, size) in media {
            let file = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            Check.succeeded(Command.run(["sh", "-c", "head -c \(size) /dev/urandom > \"$0\" && chmod -R a+rX \"$1\"", file.path, root.path],
                                        timeout: 60), "make \(path)")
            sums[path] = SHA256.of(file.path).hash
        }
        let pattern = root.appendingPathComponent("pattern.bin").path
        Check.succeeded(Command.run(["sh", "-c", "{ yes 'RangeFS Metalink sample' || true; } | head -c 1000000 > \"$0\" && chmod a+r \"$0\"", pattern],
                                    timeout: 60), "make pattern.bin")
        sums["pattern.bin"] = SHA256.of(pattern).hash
        // The Metalink's second source for every file, as the demo serves it.
        try FileManager.default.createSymbolicLink(atPath: root.appendingPathComponent("mirror").path, withDestinationPath: ".")
        let server = try NginxServer(serving: root)
        defer { server.stop() }
        try checkMetalinkSampleDescribesTheDemo(pattern: pattern, server: server, sums: sums)

        let samples: [(file: String, expected: [String: String])] = [
            ("playlist.m3u8", ["RangeFS demo - Episode 1: a tone.mp3": "podcast/episode-01.mp3",
                               "RangeFS demo - Episode 2: another tone.mp3": "podcast/episode-02.mp3"]),
            ("podcast.rss", ["2024-10-08 Episode 2: another tone.mp3": "podcast/episode-02.mp3",
                             "2024-10-01 Episode 1: a tone.mp3": "podcast/episode-01.mp3"]),
            ("collection.json", ["podcast/episode-01.mp3": "podcast/episode-01.mp3",
                                 "podcast/episode-02.mp3": "podcast/episode-02.mp3", "big.bin": "big.bin"]),
            ("collection.yaml", ["podcast/episode-01.mp3": "podcast/episode-01.mp3",
                                 "podcast/episode-02.mp3": "podcast/episode-02.mp3", "big.bin": "big.bin"]),
            ("collection.meta4", ["podcast/episode-01.mp3": "podcast/episode-01.mp3",
                                  "podcast/episode-02.mp3": "podcast/episode-02.mp3", "big.bin": "big.bin", "pattern.bin": "pattern.bin"]),
        ]
        let examples = RangeFSBinary.packageRoot.appendingPathComponent("examples/formats")
        for (file, expected) in samples {
            let text = try String(contentsOf: examples.appendingPathComponent(file), encoding: .utf8)
            try #require(text.contains(Self.sampleDemoServer), "\(file) no longer points at the demo server")
            let mount = try fx.prepare(manifest: text.replacingOccurrences(of: Self.sampleDemoServer, with: server.baseURL),
                                       name: file, options: Fixture.readsOnly)
            Check.succeeded(mount.tryMount(), "rangefs mount \(file)", mount: mount)
            guard mount.isMounted else { continue }
            let listed = Command.run(["sh", "-c", "cd \"$0\" && find . -type f", mount.mountpoint], timeout: 30).stdout
                .split(separator: "\n").map { String($0.dropFirst(2)) }.sorted()
            #expect(listed == expected.keys.sorted(), "\(file): files in the mount")
            for (name, served) in expected.sorted(by: { $0.key < $1.key }) {
                #expect(SHA256.of(mount.path(name)).hash == sums[served], "\(file): sha256 of \(name)\(Check.daemonLog(mount))")
            }
            if file == "collection.meta4" {
                // Read whole, pattern.bin is promoted only if the sample's sha-256 matches.
                let (status, met) = try mount.waitForStatus(timeout: 60) { $0.file("pattern.bin")?.state == "complete" }
                #expect(met, "pattern.bin is not complete:\n\(status)\(Check.daemonLog(mount))")
            }
            #expect(mount.unmount().succeeded, "\(file): rangefs unmount")
        }
    }

    /// The Metalink sample's hashes are those of the bytes scripts/demo.sh writes, and every URL
    /// it lists (mirrors included, though only the first is fetched today) serves the file.
    private func checkMetalinkSampleDescribesTheDemo(pattern: String, server: NginxServer, sums: [String: String]) throws {
        let sample = RangeFSBinary.packageRoot.appendingPathComponent("examples/formats/collection.meta4").path
        let manifest = try Manifest.load(path: sample)
        let entry = try #require(manifest.entries.first { $0.path.description == "pattern.bin" })
        #expect(entry.sha256 == sums["pattern.bin"], "the sample's sha-256 of pattern.bin")
        let pieces = try #require(entry.pieces)
        for index in 0..<pieces.count {
            let range = pieces.range(ofPiece: index, fileSize: 1_000_000)
            let piece = Command.run(["sh", "-c", "tail -c +\(range.lowerBound + 1) \"$0\" | head -c \(range.count) | sha256sum", pattern], timeout: 60)
            #expect(piece.stdout.hasPrefix(pieces.hexDigest(ofPiece: index)), "the sample's hash of piece \(index): \(piece)")
        }
        for entry in manifest.entries {
            for url in entry.urls {
                let served = url.absoluteString.replacingOccurrences(of: Self.sampleDemoServer, with: server.baseURL)
                let fetched = Command.run(["sh", "-c", "curl -sf \"$0\" | sha256sum", served], timeout: 120)
                #expect(fetched.stdout.hasPrefix(sums[entry.path.description] ?? "?"), "\(served) serves \(entry.path)")
            }
        }
    }
}
