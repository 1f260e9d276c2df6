import Foundation
import Testing

/// A Subsonic music server mounted by its `subsonic+http://USER@HOST/` address, from a real
/// Supysonic serving a library of tagged MP3 and FLAC files: the ID3 layout and the folder
/// layout through a real mount (`find`, `stat`, `sha256sum`, `ffprobe`), a wrong password
/// refused with the server's reason, the library remembered across a remount with the server
/// gone, a new album shown after `rangefs refresh`, and the credentials nowhere on disk, in the
/// log or on a command line.
extension RangeFSIntegrationTests {
    /// A file holding the library's password, for `--password-file`.
    private static func subsonicPasswordFile(_ password: String = SubsonicServer.password) throws -> String {
        let file = try Scratch.makeDir("subsonic-password").appendingPathComponent("password")
        try Data("\(password)\n".utf8).write(to: file)
        return file.path
    }

    /// `server`'s library mounted with the password from a file (`--prefetch none` unless
    /// `options` say otherwise), every track of it shown.
    private func mountedLibrary(of server: SubsonicServer, cacheDir: URL? = nil, options: [String] = []) throws -> Mount {
        let mount = try fx.prepare(source: server.address, cacheDir: cacheDir,
                                   options: ["--prefetch", "none", "--password-file", try Self.subsonicPasswordFile()] + options)
        try mount.mount()
        #expect(Self.filesBelow(mount.mountpoint).count == SubsonicServer.library.count, "every track shown\(Check.daemonLog(mount))")
        return mount
    }

    /// The files below `root`, relative, sorted.
    private static func filesBelow(_ root: String) -> [String] {
        let found = Command.run(["find", root, "-type", "f"])
        return found.stdout.split(separator: "\n").map { String($0.dropFirst(root.count + 1)) }.sorted()
    }

    /// The tree below `root` as a listing keeps it: every directory's path, and every file's path,
    /// size and mtime, sorted. Directories are left without dates, which are the mount's own time.
    /// Empty when `find` fails.
    private static func libraryListing(_ root: String) -> String {
        let found = Command.run(["find", root, "-mindepth", "1", "(", "-type", "d", "-printf", "%P/\\n", ")",
                                 "-o", "(", "-type", "f", "-printf", "%P %s %T@\\n", ")"])
        guard found.succeeded else { return "" }
        return found.stdout.split(separator: "\n").sorted().joined(separator: "\n")
    }

    /// What ffprobe reads of a file's tags and duration (its JSON, without the file's name).
    private static func probed(_ path: String) -> String {
        Command.run(["ffprobe", "-v", "error", "-show_entries", "format=duration:format_tags=artist,album,title,track,date",
                     "-of", "json", path]).stdout
    }

    @Test("Subsonic: the ID3 layout shows Artist/Album (Year)/NN Title.ext with the API's sizes; every track reads byte-exact, and ffprobe reads the same tags and duration")
    func subsonicID3LayoutMountsAndReads() throws {
        let server = try SubsonicServer()
        defer { server.stop() }
        let mount = try mountedLibrary(of: server)
        let shown = Self.filesBelow(mount.mountpoint)
        #expect(shown == SubsonicServer.library.map(\.shownPath).sorted(), "the tree shown\(Check.daemonLog(mount))")
        // Sizes from the listing, before any track is read.
        for track in SubsonicServer.library {
            let mounted = try? FileManager.default.attributesOfItem(atPath: mount.path(track.shownPath))[.size] as? NSNumber
            let original = try FileManager.default.attributesOfItem(atPath: server.original(track))[.size] as? NSNumber
            #expect(mounted == original, "size of \(track.shownPath)")
        }
        // The two tracks of one name are told apart by their bytes alone: compare the album as a whole.
        var mountedHashes: [String: [String]] = [:], originalHashes: [String: [String]] = [:]
        for track in SubsonicServer.library {
            let album = (track.shownPath as NSString).deletingLastPathComponent
            mountedHashes[album, default: []].append(SHA256.of(mount.path(track.shownPath)).hash ?? "unreadable")
            originalHashes[album, default: []].append(SHA256.of(server.original(track)).hash ?? "missing")
        }
        #expect(mountedHashes.mapValues { $0.sorted() } == originalHashes.mapValues { $0.sorted() },
                "every track byte-exact\(Check.daemonLog(mount))")
        for track in SubsonicServer.library where !track.shownPath.contains("(2)") && track.title != "Army of Me" {
            let through = Self.probed(mount.path(track.shownPath))
            #expect(!through.isEmpty && through == Self.probed(server.original(track)), "ffprobe of \(track.shownPath): \(through)")
        }
        #expect(mount.unmount().succeeded)
    }

    @Test("Subsonic: a wrong password is refused before anything is mounted, with the server's reason; the password from RANGEFS_PASSWORD, the user from --user")
    func subsonicWrongPasswordIsRefused() throws {
        let server = try SubsonicServer()
        defer { server.stop() }
        let refused = try fx.prepare(source: server.address, options: ["--prefetch", "none"])
        refused.environment = ["RANGEFS_PASSWORD": "not the password"]
        let refusal = refused.tryMount()
        #expect(!refusal.succeeded && refusal.stderr.contains("wrong user name or password") && refusal.stderr.contains("alice"),
                "told why: \(refusal)")
        #expect(!refused.isMounted)
        #expect(!refusal.stderr.contains("not the password"))

        // The user given with --user, the address naming none.
        let mount = try fx.prepare(source: server.address.replacingOccurrences(of: "\(SubsonicServer.user)@", with: ""),
                                   options: ["--prefetch", "none", "--user", SubsonicServer.user])
        mount.environment = ["RANGEFS_PASSWORD": SubsonicServer.password]
        try mount.mount()
        #expect(Self.filesBelow(mount.mountpoint).count == SubsonicServer.library.count, "\(Check.daemonLog(mount))")
        #expect(mount.unmount().succeeded)
    }

    @Test("Subsonic: the password changed while mounted: a track not yet read fails with EIO naming the server's error, never with its error document as the track's bytes")
    func subsonicPasswordChangedWhileMounted() throws {
        let server = try SubsonicServer()
        defer { server.stop() }
        let mount = try mountedLibrary(of: server)
        try server.changePassword(to: "another password")
        let track = SubsonicServer.library[1]
        let read = Reading.whole(mount.path(track.shownPath))
        #expect(!read.succeeded && read.failedWithEIO, "EIO, not the error document: \(read.bytes.count) bytes\(Check.daemonLog(mount))")
        #expect(!mount.logLines(containing: "Subsonic error 40").isEmpty, "the log names the error\(Check.daemonLog(mount))")
        #expect(mount.unmount().succeeded)
    }

    @Test("Subsonic: a server whose download ignores Range (behind an nginx that drops it) is read as one stream, byte-exact")
    func subsonicServerIgnoringRanges() throws {
        let server = try SubsonicServer()
        defer { server.stop() }
        let proxy = try NginxServer(docRoot: try Scratch.makeDir("subsonic-proxy-root")) { prefix, port in
            let p = prefix.path
            return """
            \(NginxServer.mainContext(p, connections: 64))
            http {
                access_log off;
                \(NginxServer.temporaryPaths(p))
                server {
                    listen 127.0.0.1:\(port);
                    max_ranges 0;
                    location / {
                        proxy_set_header Range "";
                        proxy_set_header If-Range "";
                        proxy_pass http://127.0.0.1:\(server.port);
                    }
                }
            }

            """
        }
        defer { proxy.stop() }
        let mount = try fx.prepare(source: "subsonic+http://\(SubsonicServer.user)@127.0.0.1:\(proxy.port)/",
                                   options: ["--prefetch", "none", "--password-file", try Self.subsonicPasswordFile()])
        try mount.mount()
        let track = SubsonicServer.library[1]
        let original = try Data(contentsOf: URL(fileURLWithPath: server.original(track)))
        let middle = Reading.range(mount.path(track.shownPath), offset: 20_000, length: 4096)
        #expect(middle.succeeded && middle.bytes == original[20_000..<24_096], "a read in the middle: \(middle)\(Check.daemonLog(mount))")
        #expect(SHA256.of(mount.path(track.shownPath)).hash == SHA256.of(server.original(track)).hash, "\(Check.daemonLog(mount))")
        #expect(!mount.logLines(containing: "ignores ranges").isEmpty, "it was read as one stream\(Check.daemonLog(mount))")
        #expect(mount.unmount().succeeded)
    }

    @Test("Subsonic: --subsonic-layout folders shows the server's own folders and file names, read byte-exact")
    func subsonicFolderLayout() throws {
        let server = try SubsonicServer()
        defer { server.stop() }
        let mount = try mountedLibrary(of: server, options: ["--subsonic-layout", "folders"])
        #expect(Self.filesBelow(mount.mountpoint) == SubsonicServer.library.map(\.path).sorted(), "\(Check.daemonLog(mount))")
        for track in SubsonicServer.library {
            #expect(SHA256.of(mount.path(track.path)).hash == SHA256.of(server.original(track)).hash, "\(track.path)")
        }
        #expect(mount.unmount().succeeded)
    }

    @Test("Subsonic: a remount with the server stopped shows the library kept at once and plays a track read before")
    func subsonicIsRememberedOffline() throws {
        let server = try SubsonicServer()
        let cache = try fx.makeCacheDir()
        let first = try mountedLibrary(of: server, cacheDir: cache)
        let played = SubsonicServer.library[0]
        #expect(SHA256.of(first.path(played.shownPath)).hash == SHA256.of(server.original(played)).hash, "\(Check.daemonLog(first))")
        let listedBefore = Self.libraryListing(first.mountpoint)
        #expect(listedBefore.contains("Hells Bells"), "\(listedBefore)")
        #expect(first.unmount().succeeded)
        server.stop()

        let offline = try mountedLibrary(of: server, cacheDir: cache)
        let listedOffline = Self.libraryListing(offline.mountpoint)
        #expect(listedOffline == listedBefore,
                "the library kept, sizes and dates: \(listedOffline) against \(listedBefore)\(Check.daemonLog(offline))")
        #expect(SHA256.of(offline.path(played.shownPath)).hash == SHA256.of(server.original(played)).hash,
                "a track read before plays from the cache\(Check.daemonLog(offline))")
        #expect(!Command.run(["cat", offline.path(SubsonicServer.library[1].shownPath)]).succeeded, "a track never read cannot be played offline")
        #expect(offline.unmount().succeeded)
    }

    @Test("Subsonic: a new album on the server appears after rangefs refresh")
    func subsonicNewAlbumAfterRefresh() throws {
        let server = try SubsonicServer()
        defer { server.stop() }
        let mount = try mountedLibrary(of: server)
        let added = SubsonicServer.Track(path: "Björk/Debut/01.mp3", artist: "Björk", album: "Debut", title: "Human Behaviour", track: 1,
                                         year: 1993, frequency: 800, shownPath: "Björk/Debut (1993)/01 Human Behaviour.mp3")
        try server.add(added)
        try server.rescan()
        let refreshed = Command.run([mount.binary, "refresh", mount.mountpoint])
        #expect(refreshed.succeeded, "\(refreshed)")
        let appeared = Poll.until(seconds: 20, every: 0.2) { Self.filesBelow(mount.mountpoint).contains(added.shownPath) }
        #expect(appeared, "the new album is shown: \(Self.filesBelow(mount.mountpoint))\(Check.daemonLog(mount))")
        #expect(SHA256.of(mount.path(added.shownPath)).hash == SHA256.of(server.original(added)).hash)
        #expect(mount.unmount().succeeded)
    }

    @Test("Subsonic: the password, its hex form and the signed query never reach the cache database, the log or the mount's command line")
    func subsonicCredentialsStayOffDisk() throws {
        let server = try SubsonicServer()
        defer { server.stop() }
        let mount = try mountedLibrary(of: server, options: ["--prefetch", "all", "--log-level", "debug"])
        for track in SubsonicServer.library {
            #expect(SHA256.of(mount.path(track.shownPath)).hash != nil, "\(Check.daemonLog(mount))")
        }
        let hexPassword = Data(SubsonicServer.password.utf8).map { String(format: "%02x", $0) }.joined()
        let secrets = [SubsonicServer.password, hexPassword, "u=\(SubsonicServer.user)", "p=enc", "&t=", "&s="]
        for pid in mount.daemonPids() {
            let commandLine = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline"))).map { String(decoding: $0, as: UTF8.self) } ?? ""
            #expect(!commandLine.isEmpty && !secrets.contains { commandLine.contains($0) }, "the command line: \(commandLine)")
        }
        for status in [[mount.binary, "status", mount.mountpoint], [mount.binary, "status", "--json", mount.mountpoint]] {
            let shown = Command.run(status)
            #expect(shown.succeeded && shown.stdout.contains("Hells Bells") && !secrets.contains { shown.stdout.contains($0) },
                    "rangefs status shows the tracks, no credential: \(shown)")
        }
        #expect(mount.unmount().succeeded)
        let files = (try FileManager.default.contentsOfDirectory(atPath: mount.cacheDir)).filter { !$0.hasPrefix("data") }
        #expect(files.contains("metadata.sqlite") && files.contains("rangefs.log"), "\(files)")
        for file in files {
            let bytes = (try? Data(contentsOf: URL(fileURLWithPath: (mount.cacheDir as NSString).appendingPathComponent(file)))) ?? Data()
            for secret in secrets {
                #expect(bytes.range(of: Data(secret.utf8)) == nil, "\(file) holds \(secret)")
            }
        }
        // Not that nothing was written: the files searched know each track by its download URL.
        let written = files.compactMap { try? Data(contentsOf: URL(fileURLWithPath: (mount.cacheDir as NSString).appendingPathComponent($0))) }
        #expect(written.contains { $0.range(of: Data("download.view".utf8)) != nil }, "the tracks' URLs are kept")
    }
}
