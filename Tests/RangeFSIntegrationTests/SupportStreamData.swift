import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The streaming test's media: a 10-minute 192 kb/s MP3 (about 14 MB), generated once per
/// machine with ffmpeg into `$TMPDIR/rangefs-it/stream-v1/` and reused by later runs, in its
/// own directory so that an nginx can serve it alone.
struct StreamData: Sendable {
    static let name = "stream-192k-10min.mp3"
    static let seconds = 600
    static let bitrate = 192_000
    /// The audio clock in bytes per second.
    static var bytesPerSecond: Double { Double(bitrate) / 8 }

    let dir: URL
    let file: TestFile

    static var shared: StreamData {
        get throws { try sharedResult.get() }
    }

    private static let sharedResult: Result<StreamData, Error> = Result { try StreamData.load() }

    private static func load() throws -> StreamData {
        let final = Scratch.base.appendingPathComponent("stream-v1", isDirectory: true)
        if let data = try? loadExisting(final) { return data }

        _ = try Scratch.runDir   // creates the base and clears stale runs
        let staging = Scratch.base.appendingPathComponent("stream-v1.tmp-\(getpid())", isDirectory: true)
        try? FileManager.default.removeItem(at: staging)
        try FileManager.default.createDirectory(at: staging, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: staging) }

        let mp3 = staging.appendingPathComponent(name).path
        // Constant bitrate, so the byte rate is the audio clock; a tone sweeping over time so
        // that no two stretches of the file are alike.
        let r = Command.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y",
                             "-f", "lavfi", "-i", "sine=frequency=440:beep_factor=3:sample_rate=44100:duration=\(seconds)",
                             "-ac", "2", "-c:a", "libmp3lame", "-b:a", "\(bitrate / 1000)k", mp3], timeout: 300)
        guard r.succeeded else {
            throw HarnessError("could not generate \(name) with ffmpeg (is ffmpeg installed? run scripts/install-deps.sh):\n\(r)")
        }
        let hash = Command.run(["sh", "-c", "cd \"$0\" && exec sha256sum -- \"$1\" > SHA256SUMS", staging.path, name],
                               timeout: 120)
        guard hash.succeeded else { throw HarnessError("sha256sum failed:\n\(hash)") }
        _ = Command.run(["chmod", "-R", "a+rX", staging.path], timeout: 30)

        if rename(staging.path, final.path) != 0 {
            if let data = try? loadExisting(final) { return data }
            try? FileManager.default.removeItem(at: final)
            guard rename(staging.path, final.path) == 0 else {
                throw HarnessError("could not move the stream data into \(final.path): errno \(errno)")
            }
        }
        return try loadExisting(final)
    }

    private static func loadExisting(_ dir: URL) throws -> StreamData {
        let text = try String(contentsOf: dir.appendingPathComponent("SHA256SUMS"), encoding: .utf8)
        guard text.count > 66, text.contains(name) else { throw HarnessError("stream data: bad SHA256SUMS") }
        let url = dir.appendingPathComponent(name)
        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        let size = (attributes[.size] as? NSNumber)?.intValue ?? -1
        // 600 s at 24,000 B/s is 14.4 MB; allow for the container's few extra bytes.
        let nominal = seconds * bitrate / 8
        guard size > nominal * 95 / 100, size < nominal * 105 / 100 else {
            throw HarnessError("stream data: \(name) has \(size) bytes, expected about \(nominal)")
        }
        return StreamData(dir: dir, file: TestFile(name: name, size: size, sha256: String(text.prefix(64)), url: url))
    }
}
