import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A real Subsonic-API server (Supysonic, from PyPI, behind waitress) on 127.0.0.1 serving a
/// small library of tagged MP3 and FLAC files made by ffmpeg, with a user and its own sqlite
/// database in a scratch directory. Supysonic 0.7 reads its configuration from
/// `./supysonic.conf` (or the user's home), not from `$SUPYSONIC_CONFIG`: its commands run in
/// that directory. `stop()` (also `deinit`) always stops it.
final class SubsonicServer {
    /// The user the library is served to. The password holds a space and the characters a query
    /// gives a meaning to, so a credential the mount sends unencoded would fail.
    static let user = "alice"
    static let password = "s3cret p&w+=?"

    /// One track of the library: where it lies below the music folder, its tags, and the name the
    /// ID3 layout gives it (`Artist/Album (Year)/NN Title.ext`).
    struct Track {
        var path: String
        var artist: String, album: String, title: String, track: Int, year: Int
        var frequency: Int
        var shownPath: String
    }

    /// A `/` in an artist and an album, letters that are not ASCII, and two tracks of one album
    /// with the same number and title (the second shown with ` (2)`; which one the server lists
    /// first is its own choice).
    static let library: [Track] = [
        Track(path: "AC-DC/Back in Black/01.mp3", artist: "AC/DC", album: "Back in Black", title: "Hells Bells", track: 1, year: 1980,
              frequency: 440, shownPath: "AC-DC/Back in Black (1980)/01 Hells Bells.mp3"),
        Track(path: "AC-DC/Back in Black/02.flac", artist: "AC/DC", album: "Back in Black", title: "Shoot to Thrill", track: 2, year: 1980,
              frequency: 550, shownPath: "AC-DC/Back in Black (1980)/02 Shoot to Thrill.flac"),
        Track(path: "Björk/Homogenic/03.flac", artist: "Björk", album: "Homogenic", title: "Jóga", track: 3, year: 1997,
              frequency: 660, shownPath: "Björk/Homogenic (1997)/03 Jóga.flac"),
        Track(path: "Björk/Post/01a.mp3", artist: "Björk", album: "Post/Pre", title: "Army of Me", track: 1, year: 1995,
              frequency: 700, shownPath: "Björk/Post-Pre (1995)/01 Army of Me.mp3"),
        Track(path: "Björk/Post/01b.mp3", artist: "Björk", album: "Post/Pre", title: "Army of Me", track: 1, year: 1995,
              frequency: 750, shownPath: "Björk/Post-Pre (1995)/01 Army of Me (2).mp3"),
    ]

    let port: UInt16
    /// The music folder on disk.
    let music: URL
    private let prefix: URL
    private let config: URL
    private var child: BackgroundCommand?

    /// `subsonic+http://alice@127.0.0.1:PORT/`
    var address: String { "subsonic+http://\(Self.user)@127.0.0.1:\(port)/" }

    /// Makes the library (or takes `music`, made by an earlier server), its database and user, then
    /// starts the server.
    init(music existing: URL? = nil, startTimeout: Double = 30) throws {
        prefix = try Scratch.makeDir("subsonic")
        if let existing {
            music = existing
        } else {
            music = prefix.appendingPathComponent("music")
            for track in Self.library { try Self.make(track, in: music) }
        }
        config = prefix.appendingPathComponent("supysonic.conf")
        try """
            [base]
            database_uri = sqlite:///\(prefix.path)/supysonic.sqlite
            scanner_extensions = mp3 flac
            [webapp]
            cache_dir = \(prefix.path)/cache
            log_file = \(prefix.path)/server.log
            [daemon]
            socket = \(prefix.path)/daemon.sock
            """.write(to: config, atomically: true, encoding: .utf8)
        try Self.cli(["user", "add", Self.user, "-p", Self.password], config: config)
        try Self.cli(["folder", "add", "Music", music.path], config: config)
        try Self.cli(["folder", "scan", "Music"], config: config)
        let directory = prefix.path
        (port, child) = try BackgroundCommand.listening("supysonic-server", timeout: startTimeout) { port in
            ["env", "-C", directory, "PYTHONUNBUFFERED=1", "supysonic-server", "-S", "waitress", "-h", "127.0.0.1", "-p", String(port)]
        }
    }

    /// Scans the music folder again (new or changed files).
    func rescan() throws {
        try Self.cli(["folder", "scan", "Music"], config: config)
    }

    /// Gives the user another password (its command asks for it twice on stdin).
    func changePassword(to password: String) throws {
        let result = Command.run(["env", "-C", prefix.path, "sh", "-c", #"printf '%s\n%s\n' "$1" "$1" | supysonic-cli user changepass "$2""#,
                                  "sh", password, Self.user], timeout: 60)
        guard result.succeeded else { throw HarnessError("supysonic-cli user changepass failed:\n\(result)") }
    }

    /// Adds a track to the library on disk (a rescan makes the server see it).
    func add(_ track: Track) throws {
        try Self.make(track, in: music)
    }

    /// The original file of a track.
    func original(_ track: Track) -> String {
        music.appendingPathComponent(track.path).path
    }

    func stop() {
        guard let child else { return }
        if child.isRunning { ProcessInfo.terminate(pid: child.pid, graceSeconds: 5) }
        child.wait(timeout: 5)
        self.child = nil
    }

    deinit {
        stop()
        Scratch.remove(prefix)
    }

    private static func cli(_ arguments: [String], config: URL) throws {
        let result = Command.run(["env", "-C", config.deletingLastPathComponent().path, "supysonic-cli"] + arguments, timeout: 60)
        guard result.succeeded else { throw HarnessError("supysonic-cli \(arguments.prefix(2).joined(separator: " ")) failed:\n\(result)") }
    }

    /// Two seconds of a sine tone, tagged.
    private static func make(_ track: Track, in music: URL) throws {
        let file = music.appendingPathComponent(track.path)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        let result = Command.run(["ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=\(track.frequency):duration=2",
                                  "-metadata", "artist=\(track.artist)", "-metadata", "album=\(track.album)",
                                  "-metadata", "title=\(track.title)", "-metadata", "track=\(track.track)",
                                  "-metadata", "date=\(track.year)", file.path], timeout: 60)
        guard result.succeeded else { throw HarnessError("ffmpeg could not make \(track.path):\n\(result)") }
    }
}

extension BackgroundCommand {
    /// A server started as `argv(port)` on a free port of 127.0.0.1, once it answers there
    /// (three ports tried: another process may take a port between its pick and the bind).
    static func listening(_ name: String, timeout: Double, _ argv: (UInt16) -> [String]) throws -> (port: UInt16, child: BackgroundCommand) {
        var lastError = "\(name) did not start"
        for _ in 0..<3 {
            let port = try FreePort.pick()
            let child = try BackgroundCommand(argv(port))
            if Poll.until(seconds: timeout, every: 0.05, { !child.isRunning || FreePort.answers(port) }), child.isRunning {
                return (port, child)
            }
            lastError = "\(name) did not answer on 127.0.0.1:\(port) within \(timeout) s\n\(child.kill())"
        }
        throw HarnessError(lastError)
    }
}
