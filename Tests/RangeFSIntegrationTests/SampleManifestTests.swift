import Foundation
import Testing

/// The samples in examples/formats, mounted as they are (only their server moved) and read.
extension RangeFSIntegrationTests {
    static let sampleDemoServer = "http://127.0.0.1:8089"

    @Test("examples/formats: the playlist, the podcast feed and the JSON and YAML collections mount against a server of the demo's files, name every file as documented, and read byte-exact")
    func formatSamplesMountAndRead() throws {
        // The demo's paths, with small random stand-ins for its media; big.bin has the size
        // the collections state for it.
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
        let server = try NginxServer(serving: root)
        defer { server.stop() }

        let samples: [(file: String, expected: [String: String])] = [
            ("playlist.m3u8", ["RangeFS demo - Episode 1: a tone.mp3": "podcast/episode-01.mp3",
                               "RangeFS demo - Episode 2: another tone.mp3": "podcast/episode-02.mp3"]),
            ("podcast.rss", ["2024-10-08 Episode 2: another tone.mp3": "podcast/episode-02.mp3",
                             "2024-10-01 Episode 1: a tone.mp3": "podcast/episode-01.mp3"]),
            ("collection.json", ["podcast/episode-01.mp3": "podcast/episode-01.mp3",
                                 "podcast/episode-02.mp3": "podcast/episode-02.mp3", "big.bin": "big.bin"]),
            ("collection.yaml", ["podcast/episode-01.mp3": "podcast/episode-01.mp3",
                                 "podcast/episode-02.mp3": "podcast/episode-02.mp3", "big.bin": "big.bin"]),
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
            #expect(mount.unmount().succeeded, "\(file): rangefs unmount")
        }
    }
}
