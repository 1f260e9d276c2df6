import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One generated file of the doc root.
struct TestFile: Sendable {
    let name: String
    let size: Int
    let sha256: String
    let url: URL

    /// Bytes `[offset, offset+length)` of the original, cut at the end of the file.
    func bytes(offset: Int, length: Int) throws -> Data {
        guard offset < size, length > 0 else { return Data() }
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(offset))
        return try handle.read(upToCount: min(length, size - offset)) ?? Data()
    }
}

/// The files every test serves, generated once per machine into
/// `$TMPDIR/rangefs-it/data-v1/` (reused by later runs: regenerated only when missing).
struct TestData: Sendable {
    static let blockSize = 262_144
    static let bigSize = 100 * 1024 * 1024
    static let mp3Seconds = 300

    /// Name → size for the random files.
    static let randomFiles: [(String, Int)] = [
        ("empty.bin", 0),
        ("one.bin", 1),
        ("block.bin", blockSize),
        ("block-plus-one.bin", blockSize + 1),
        ("tail.bin", 3 * blockSize + 1234),
        ("big.bin", bigSize),
    ]
    static let mp3Name = "episode.mp3"
    static let spacedName = "hello world.txt"

    let dir: URL
    let files: [String: TestFile]

    func file(_ name: String) -> TestFile {
        guard let file = files[name] else { fatalError("no test file named \(name)") }
        return file
    }

    var all: [TestFile] { files.values.sorted { $0.name < $1.name } }

    /// The shared instance; generation errors are reported to each test that asks.
    static var shared: TestData {
        get throws { try sharedResult.get() }
    }

    private static let sharedResult: Result<TestData, Error> = Result { try TestData.load() }

    private static func load() throws -> TestData {
        let final = Scratch.base.appendingPathComponent("data-v1", isDirectory: true)
        let sums = final.appendingPathComponent("SHA256SUMS")
        if let data = try? loadExisting(dir: final, sums: sums) { return data }

        _ = try Scratch.runDir   // creates the base and clears stale runs
        let staging = Scratch.base.appendingPathComponent("data-v1.tmp-\(getpid())", isDirectory: true)
        try? FileManager.default.removeItem(at: staging)
        try FileManager.default.createDirectory(at: staging, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: staging) }

        for (name, size) in randomFiles {
            let path = staging.appendingPathComponent(name).path
            let r = Command.run(["sh", "-c", "head -c \(size) /dev/urandom > \"$0\"", path], timeout: 120)
            guard r.succeeded else { throw HarnessError("could not generate \(name):\n\(r)") }
        }
        try Data("Hello from a file whose name has a space.\n".utf8)
            .write(to: staging.appendingPathComponent(spacedName))
        let mp3 = staging.appendingPathComponent(mp3Name).path
        let r = Command.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y",
                             "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100:duration=\(mp3Seconds)",
                             "-ac", "2", "-c:a", "libmp3lame", "-b:a", "192k", mp3], timeout: 300)
        guard r.succeeded else {
            throw HarnessError("could not generate \(mp3Name) with ffmpeg (is ffmpeg installed? run scripts/install-deps.sh):\n\(r)")
        }
        let names = randomFiles.map(\.0) + [spacedName, mp3Name]
        let hash = Command.run(["sh", "-c", "cd \"$0\" && exec sha256sum -- \"$@\"", staging.path] + names,
                               timeout: 300)
        guard hash.succeeded else { throw HarnessError("sha256sum failed:\n\(hash)") }
        try hash.stdoutData.write(to: staging.appendingPathComponent("SHA256SUMS"))
        _ = Command.run(["chmod", "-R", "a+rX", staging.path], timeout: 30)

        if rename(staging.path, final.path) != 0 {
            // Another process won the race (or an old broken copy is in the way).
            if let data = try? loadExisting(dir: final, sums: sums) { return data }
            try? FileManager.default.removeItem(at: final)
            guard rename(staging.path, final.path) == 0 else {
                throw HarnessError("could not move test data into \(final.path): errno \(errno)")
            }
        }
        return try loadExisting(dir: final, sums: sums)
    }

    /// Reads SHA256SUMS and checks every file is there with a plausible size.
    private static func loadExisting(dir: URL, sums: URL) throws -> TestData {
        let text = try String(contentsOf: sums, encoding: .utf8)
        var files: [String: TestFile] = [:]
        for line in text.split(separator: "\n") {
            // "<64 hex>  <name>"
            guard line.count > 66 else { continue }
            let hash = String(line.prefix(64))
            let name = String(line.dropFirst(66))
            let url = dir.appendingPathComponent(name)
            let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
            let size = (attributes[.size] as? NSNumber)?.intValue ?? -1
            files[name] = TestFile(name: name, size: size, sha256: hash, url: url)
        }
        for (name, size) in randomFiles where files[name]?.size != size {
            throw HarnessError("test data \(name) missing or wrong size")
        }
        guard let mp3 = files[mp3Name], mp3.size > 1_000_000, files[spacedName] != nil else {
            throw HarnessError("test data incomplete")
        }
        return TestData(dir: dir, files: files)
    }
}

/// SHA-256 of a file through `sha256sum` (there is no CryptoKit on Linux).
enum SHA256 {
    static func of(_ path: String, timeout: Double = 120) -> (hash: String?, result: CommandResult) {
        let r = Command.run(["sha256sum", "--", path], timeout: timeout)
        guard r.succeeded else { return (nil, r) }
        return (r.stdout.split(separator: " ").first.map(String.init), r)
    }
}

/// A small, seeded, reproducible generator (SplitMix64).
struct SeededRandom: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
