import FaultServer
import Foundation
import Testing

/// Manifests as people have them: a JSON export and an M3U playlist from disk, and a
/// playlist fetched by URL (with headers that reach the server but never `ps`).
extension RangeFSIntegrationTests {
    @Test("a JSON and an M3U manifest mount, name their files as the format says, and read byte-exact")
    func jsonAndM3UManifestsMount() throws {
        let tail = fx.data.file("tail.bin")
        let block = fx.data.file("block.bin")
        let mp3 = fx.data.file(TestData.mp3Name)
        let json = """
        {
          "entries": [
            {"path": "data/tail.bin", "url": "\(fx.nginx.url(tail.name))", "size": \(tail.size)},
            {"url": "\(fx.nginx.url(block.name))", "sha256": "\(block.sha256)"}
          ]
        }
        """
        let m3u = """
        #EXTM3U
        #EXTINF:300,Test Artist - A Tone
        \(fx.nginx.url(mp3.name))
        \(fx.nginx.url(tail.name))

        """
        let cases: [(name: String, text: String, expected: [String: TestFile])] = [
            ("collection.json", json, ["data/tail.bin": tail, "block.bin": block]),
            ("playlist.m3u8", m3u, ["Test Artist - A Tone.mp3": mp3, "tail.bin": tail]),
        ]
        for (name, text, expected) in cases {
            let mount = try fx.prepare(manifest: text, name: name)
            Check.succeeded(mount.tryMount(), "rangefs mount \(name)", mount: mount)
            guard mount.isMounted else { continue }
            for (path, file) in expected.sorted(by: { $0.key < $1.key }) {
                #expect(SHA256.of(mount.path(path)).hash == file.sha256, "\(name): sha256 of \(path)\(Check.daemonLog(mount))")
            }
            #expect(mount.unmount().succeeded, "\(name): rangefs unmount")
        }
    }

    @Test("-o format= overrides detection: a playlist named .txt mounts as M3U only when asked")
    func formatFlagOverridesDetection() throws {
        let mp3 = fx.data.file(TestData.mp3Name)
        let text = "#EXTM3U\n#EXTINF:1,Named By Title\n\(fx.nginx.url(mp3.name))\n"
        let plain = try fx.prepare(manifest: text, name: "list.txt")
        Check.succeeded(plain.tryMount(), "rangefs mount list.txt", mount: plain)
        #expect(FileManager.default.fileExists(atPath: plain.path(mp3.name)),
                "a .txt manifest is plain text (#EXTINF is a comment), named after the URL: \(Command.run(["ls", plain.mountpoint]).stdout)")
        #expect(plain.unmount().succeeded)

        let mount = try fx.prepare(manifest: text, name: "list.txt")
        let mounted = Command.run([fx.binary, "mount", mount.manifestPath, mount.mountpoint, "--cache-dir", mount.cacheDir,
                                   "--prefetch", "none", "-o", "format=m3u"], timeout: 60)
        try #require(mounted.succeeded, "rangefs mount -o format=m3u: \(mounted)")
        #expect(SHA256.of(mount.path("Named By Title.mp3")).hash == mp3.sha256,
                "the #EXTINF title did not name the file: \(Command.run(["ls", mount.mountpoint]).stdout)")
        #expect(mount.unmount().succeeded)
    }

    @Test("a manifest by URL: relative entries resolve against it, --header and the URL's credentials and query reach the server but not ps, refresh fetches it again, mtime from the manifest")
    func manifestByURL() throws {
        let server = try FaultServer()
        let first = fx.data.file("tail.bin")
        let second = fx.data.file("block-plus-one.bin")
        let dated = fx.data.file("block.bin")
        server.publish("media/first.bin", bytes: Self.bytes(first))
        server.publish("media/second.bin", bytes: Self.bytes(second))
        // No Last-Modified: the manifest's date becomes the file's mtime.
        server.configure("media/dated.bin", PathOptions(sendLastModified: false))
        server.publish("media/dated.bin", bytes: Self.bytes(dated))
        server.publish("lists/list.m3u", bytes: Array("""
            #EXTM3U
            #EXTINF:10,First
            ../media/first.bin
            /media/second.bin

            """.utf8))
        let secret = "token-\(UUID().uuidString)"
        let mount = try fx.prepare(manifest: "unused\n", name: "unused.txt")
        let listURL = server.url("lists/list.m3u").absoluteString
        let mounted = Command.run([fx.binary, "mount", listURL, mount.mountpoint, "--cache-dir", mount.cacheDir,
                                   "--prefetch", "none", "--header", "X-Token: \(secret)"], timeout: 60)
        try #require(mounted.succeeded, "rangefs mount \(listURL): \(mounted)\(Check.daemonLog(mount))")

        #expect(SHA256.of(mount.path("First.bin")).hash == first.sha256, "sha256 of First.bin\(Check.daemonLog(mount))")
        #expect(SHA256.of(mount.path("second.bin")).hash == second.sha256, "sha256 of second.bin")

        let daemons = mount.daemonPids()
        #expect(!daemons.isEmpty, "no mount process found")
        for pid in daemons {
            let commandLine = ProcessInfo.commandLine(of: pid)
            #expect(!commandLine.contains(secret), "the header's value is on the mount process's command line: \(commandLine)")
            #expect(commandLine.contains(listURL), "the mount process does not name its manifest: \(commandLine)")
        }
        _ = server.waitUntilQuiet()
        let requests = server.requests
        let withoutHeader = requests.filter { $0.headers.value(of: "X-Token") != secret }
        #expect(withoutHeader.isEmpty, "requests without the --header: \(withoutHeader)")
        #expect(requests.contains { $0.path == "/lists/list.m3u" } && requests.contains { $0.path == "/media/first.bin" },
                "\(requests)")
        #expect(!mount.log().contains(secret), "the header's value is in the log")

        // The manifest changes on the server: refresh fetches it again, with its date this time.
        server.publish("lists/list.m3u", bytes: Array("""
            #EXTM3U
            ../media/first.bin
            ../media/dated.bin

            """.utf8))
        let refresh = Command.run([fx.binary, "refresh", mount.mountpoint], timeout: 60)
        Check.succeeded(refresh, "rangefs refresh", mount: mount)
        let listing = Set((try? FileManager.default.contentsOfDirectory(atPath: mount.mountpoint)) ?? [])
        #expect(listing == ["first.bin", "dated.bin"], "after refresh: \(listing) \(refresh)")
        #expect(SHA256.of(mount.path("dated.bin")).hash == dated.sha256, "sha256 of dated.bin after refresh")
        #expect(mount.unmount().succeeded)

        // A JSON manifest by URL, without an extension: detected from its content; mtime from it.
        server.publish("export", bytes: Array("""
            [{"path": "dated.bin", "url": "\(server.url("media/dated.bin").absoluteString)", "mtime": "2021-03-04T05:06:07Z"}]
            """.utf8))
        // Its URL carries a token in the query and credentials: neither may show in `ps`.
        let jsonMount = try fx.prepare(manifest: "unused\n", name: "unused.txt")
        let queryToken = "qtoken-\(UUID().uuidString)"
        var exportURL = URLComponents(url: server.url("export"), resolvingAgainstBaseURL: false)!
        exportURL.user = "reader"
        exportURL.password = "pw-\(queryToken)"
        exportURL.query = "key=\(queryToken)"
        let jsonMounted = Command.run([fx.binary, "mount", exportURL.url!.absoluteString, jsonMount.mountpoint,
                                       "--cache-dir", jsonMount.cacheDir, "--prefetch", "none"], timeout: 60)
        try #require(jsonMounted.succeeded, "\(jsonMounted)\(Check.daemonLog(jsonMount))")
        for pid in jsonMount.daemonPids() {
            let commandLine = ProcessInfo.commandLine(of: pid)
            #expect(!commandLine.contains(queryToken), "the manifest URL's token is on the command line: \(commandLine)")
            #expect(commandLine.contains("/export?***"), "the command line does not name the manifest: \(commandLine)")
        }
        #expect(server.requests.contains { $0.path == "/export" && $0.target.contains(queryToken) },
                "the manifest was not fetched with its query")
        let attributes = try FileManager.default.attributesOfItem(atPath: jsonMount.path("dated.bin"))
        let modified = try #require(attributes[.modificationDate] as? Date)
        #expect(modified == Date(timeIntervalSince1970: 1_614_834_367), "mtime of dated.bin: \(modified)")
        #expect(jsonMount.unmount().succeeded)
    }

    @Test("a manifest URL that is missing or not text is refused with a clear error and mounts nothing")
    func badManifestURLs() throws {
        let server = try FaultServer()
        server.publish("song.mp3", bytes: [0x49, 0x44, 0x33, 0x04, 0x00, 0x00, 0x00, 0x00, 0xff, 0xfb])
        let mount = try fx.prepare(manifest: "unused\n", name: "unused.txt")
        let cases: [(url: String, expected: String)] = [
            (server.url("missing.m3u").absoluteString, "HTTP status 404"),
            (server.url("song.mp3").absoluteString, "not text"),
        ]
        for (url, expected) in cases {
            let result = Command.run([fx.binary, "mount", url, mount.mountpoint, "--cache-dir", mount.cacheDir], timeout: 60)
            #expect(!result.succeeded && result.stderr.contains(url) && result.stderr.contains(expected),
                    "mount \(url) should fail saying '\(expected)': \(result)")
            #expect(!mount.isMounted, "\(url) left a mount behind")
        }
    }

    static func bytes(_ file: TestFile) -> [UInt8] {
        (try? [UInt8](Data(contentsOf: file.url))) ?? []
    }
}
