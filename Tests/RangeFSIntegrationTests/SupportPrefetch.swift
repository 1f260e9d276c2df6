import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `rangefs status --json` as a script sees it. Decoded on its own (not with RangeFSCore's
/// types) so the tests hold the command's output format to its documented keys.
struct StatusSnapshot: Decodable, CustomStringConvertible {
    struct File: Decodable {
        let path: String
        let url: String
        let state: String
        let size: Int?
        let cachedBytes: Int
        let bytesPerSecond: Int
        let failure: String?
    }

    let paused: Bool
    let prefetch: String
    let files: [File]

    func file(_ path: String) -> File? { files.first { $0.path == path } }
    var cachedBytes: Int { files.reduce(0) { $0 + $1.cachedBytes } }
    var bytesPerSecond: Int { files.reduce(0) { $0 + $1.bytesPerSecond } }
    var allComplete: Bool { !files.isEmpty && files.allSatisfy { $0.state == "complete" } }

    var description: String {
        "paused=\(paused) prefetch=\(prefetch)\n" + files.map { f in
            "  \(f.path): \(f.state) \(f.cachedBytes)/\(f.size.map(String.init) ?? "?") \(f.bytesPerSecond) B/s\(f.failure.map { " (\($0))" } ?? "")"
        }.joined(separator: "\n")
    }
}

extension Mount {
    /// Runs `rangefs <verb> MOUNTPOINT [extra]` (bounded).
    func rangefs(_ verb: String, _ extra: [String] = [], timeout: Double = 20) -> CommandResult {
        Command.run([binary, verb, mountpoint] + extra, timeout: timeout)
    }

    /// `rangefs status --json`, decoded; throws with the output and the daemon log when it fails.
    func statusSnapshot() throws -> StatusSnapshot {
        let r = rangefs("status", ["--json"])
        guard r.succeeded else {
            throw HarnessError("rangefs status --json failed:\n\(r)\n--- daemon log ---\n\(logTail())")
        }
        do {
            return try JSONDecoder().decode(StatusSnapshot.self, from: r.stdoutData)
        } catch {
            throw HarnessError("rangefs status --json printed something else than the status: \(error)\n\(r)")
        }
    }

    /// Polls `status --json` every `interval` seconds until `condition` holds or `timeout`
    /// seconds pass; returns the last status and whether the condition held.
    func waitForStatus(timeout: Double, interval: Double = 0.2,
                       _ condition: (StatusSnapshot) -> Bool) throws -> (status: StatusSnapshot, met: Bool) {
        var last = try statusSnapshot()
        let met = try Poll.until(seconds: timeout, every: interval) {
            if condition(last) { return true }
            last = try statusSnapshot()
            return condition(last)
        }
        return (last, met)
    }

    /// The `complete: URL (N bytes)` lines of the daemon log.
    func completionLines() -> [String] {
        log().split(separator: "\n").map(String.init).filter { $0.contains("complete: ") }
    }
}

/// Extended attributes as `getfattr -d` prints them.
enum FileAttrs {
    /// Every `user.*` attribute of `path` (from `getfattr -d --absolute-names`); nil when it fails.
    static func dump(_ path: String) -> (values: [String: String]?, result: CommandResult) {
        let r = Command.run(["getfattr", "-d", "--absolute-names", path], timeout: 15)
        guard r.succeeded else { return (nil, r) }
        var values: [String: String] = [:]
        for line in r.stdout.split(separator: "\n") where !line.hasPrefix("#") {
            guard let eq = line.firstIndex(of: "=") else { continue }
            var value = String(line[line.index(after: eq)...])
            if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 {
                value = String(value.dropFirst().dropLast())
            }
            values[String(line[..<eq])] = value
        }
        return (values, r)
    }

    /// One attribute (`getfattr -n NAME --only-values`); nil when absent or failing.
    static func value(_ name: String, of path: String) -> String? {
        let r = Command.run(["getfattr", "-n", name, "--only-values", "--absolute-names", path], timeout: 15)
        return r.succeeded ? r.stdout : nil
    }
}

/// What lies in a cache directory's `data/` folder.
struct CacheDataFile {
    let name: String
    let size: Int
    let path: String
    var isPartial: Bool { name.hasSuffix(".part") }

    static func list(cacheDir: String) -> [CacheDataFile] {
        let dir = (cacheDir as NSString).appendingPathComponent("data")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
        return names.sorted().map { name in
            let path = (dir as NSString).appendingPathComponent(name)
            let size = ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? -1
            return CacheDataFile(name: name, size: size, path: path)
        }
    }
}

extension AccessLogEntry {
    /// Seconds since the epoch when nginx began the request (finish time minus its duration).
    var startedAt: Double { finishedAt - requestTime }
}

extension AccessLog {
    /// Requests nginx began within `[from, to]` (epoch seconds). A request is logged only
    /// when it ends, so call this after the transfers of interest have ended.
    func entries(startedBetween from: Double, and to: Double) -> [AccessLogEntry] {
        entries().filter { $0.startedAt >= from && $0.startedAt <= to }
    }
}

extension Date {
    static var epochNow: Double { Date().timeIntervalSince1970 }
}

/// Formats seconds as milliseconds for the printed measurements.
func formatMillis(_ seconds: Double) -> String { String(format: "%.1f ms", seconds * 1000) }
