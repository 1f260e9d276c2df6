import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Temporary directories of this test process, under `$TMPDIR/rangefs-it/run-PID/`.
/// On first use it clears what a crashed earlier run left: its mounts, its nginx and
/// its files (only runs whose process is gone).
enum Scratch {
    static var base: URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("rangefs-it", isDirectory: true)
    }

    /// This process's run directory, created (after the stale clean-up) on first use.
    static var runDir: URL {
        get throws { try runDirResult.get() }
    }

    private static let runDirResult: Result<URL, Error> = Result {
        let base = Scratch.base
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        _ = chmod(base.path, 0o755)
        StaleRuns.clear(in: base)
        let dir = base.appendingPathComponent("run-\(getpid())", isDirectory: true)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        _ = chmod(dir.path, 0o755)
        return dir
    }

    private static let outputDirResult: Result<URL, Error> = Result {
        let dir = try Scratch.runDir.appendingPathComponent("cmd", isDirectory: true)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    static func commandOutputDir() throws -> URL { try outputDirResult.get() }

    /// A new, empty, world-readable directory named `prefix-XXXXXXXX` in the run directory.
    static func makeDir(_ prefix: String) throws -> URL {
        let dir = try runDir.appendingPathComponent(
            "\(prefix)-\(UUID().uuidString.prefix(8).lowercased())", isDirectory: true)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        _ = chmod(dir.path, 0o755)
        return dir
    }

    /// Removes a directory tree, after lazily unmounting anything still mounted inside it.
    static func remove(_ dir: URL) {
        // Not through `Command`: that needs the run directory, which may be what is being set up.
        for point in MountTable.mountpoints(under: dir.path) where umount2(point, Int32(MNT_DETACH)) != 0 {
            let fusermount = Process()
            fusermount.executableURL = URL(fileURLWithPath: "/bin/fusermount3")
            fusermount.arguments = ["-u", "-z", point]
            try? fusermount.run()
            fusermount.waitUntilExit()
        }
        guard MountTable.mountpoints(under: dir.path).isEmpty else { return }
        try? FileManager.default.removeItem(at: dir)
    }
}

/// What earlier test processes that died left behind.
enum StaleRuns {
    static func clear(in base: URL) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: base.path) else { return }
        for name in names where name.hasPrefix("run-") {
            guard let pid = Int32(name.dropFirst(4)), pid != getpid() else { continue }
            if Glibc.kill(pid, 0) == 0 || errno == EPERM { continue }   // still alive
            let dir = base.appendingPathComponent(name, isDirectory: true)
            stopNginx(under: dir)
            Scratch.remove(dir)
        }
    }

    /// nginx masters whose pid file lies in `dir` and whose command line names `dir`.
    private static func stopNginx(under dir: URL) {
        guard let walker = FileManager.default.enumerator(atPath: dir.path) else { return }
        var pidFiles: [String] = []
        while let rel = walker.nextObject() as? String {
            if rel.hasSuffix("nginx.pid") { pidFiles.append(dir.appendingPathComponent(rel).path) }
            if rel.split(separator: "/").count > 3 { walker.skipDescendants() }
        }
        for file in pidFiles {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8),
                  let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)),
                  ProcessInfo.commandLine(of: pid).contains(dir.path) else { continue }
            ProcessInfo.terminate(pid: pid, graceSeconds: 5)
        }
    }
}

extension ProcessInfo {
    /// `/proc/PID/cmdline` with NULs turned into spaces ("" when the process is gone).
    static func commandLine(of pid: Int32) -> String {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return "" }
        return String(decoding: data.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self)
    }

    static func isAlive(_ pid: Int32) -> Bool {
        guard pid > 0 else { return false }
        // A zombie still answers kill(pid, 0); look at its state too.
        guard Glibc.kill(pid, 0) == 0 else { return false }
        if let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
           let close = stat.lastIndex(of: ")") {
            let state = stat[stat.index(close, offsetBy: 2)...].prefix(1)
            return state != "Z" && state != "X"
        }
        return true
    }

    /// The CPU time the process has used, user and system (nil when it is gone).
    static func cpuSeconds(of pid: Int32) -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        // After the command's `)`: state is the first field, utime the 12th and stime the 13th.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// The process stopped itself or was stopped (state `T` in /proc/PID/stat).
    static func isStopped(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        return stat[stat.index(close, offsetBy: 2)...].prefix(1) == "T"
    }

    /// Children of `pid` (from /proc/*/stat).
    static func children(of pid: Int32) -> [Int32] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        var result: [Int32] = []
        for name in names {
            guard let child = Int32(name),
                  let stat = try? String(contentsOfFile: "/proc/\(name)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, Int32(fields[1]) == pid { result.append(child) }
        }
        return result
    }

    /// SIGTERM, up to `graceSeconds` of waiting, then SIGKILL for it and its children.
    static func terminate(pid: Int32, graceSeconds: Double) {
        guard isAlive(pid) else { return }
        let children = children(of: pid)
        _ = Glibc.kill(pid, SIGTERM)
        if waitForExit(pid, seconds: graceSeconds) { return }
        for child in children { _ = Glibc.kill(child, SIGKILL) }
        _ = Glibc.kill(pid, SIGKILL)
        _ = waitForExit(pid, seconds: 5)
    }

    /// Polls until `pid` is gone; true if it went within `seconds`.
    @discardableResult
    static func waitForExit(_ pid: Int32, seconds: Double) -> Bool {
        Poll.until(seconds: seconds) { !isAlive(pid) }
    }
}

/// Reads /proc/self/mountinfo.
enum MountTable {
    struct Entry {
        let mountpoint: String
        let fsType: String
        let source: String
    }

    static func entries() -> [Entry] {
        guard let text = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) else { return [] }
        var result: [Entry] = []
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ").map(String.init)
            guard fields.count >= 10, let dash = fields.firstIndex(of: "-"), dash + 2 < fields.count else { continue }
            result.append(Entry(mountpoint: unescape(fields[4]), fsType: fields[dash + 1],
                                source: unescape(fields[dash + 2])))
        }
        return result
    }

    static func isMounted(_ path: String) -> Bool {
        let path = normalized(path)
        return entries().contains { $0.mountpoint == path }
    }

    static func entry(at path: String) -> Entry? {
        let path = normalized(path)
        return entries().last { $0.mountpoint == path }
    }

    static func mountpoints(under dir: String) -> [String] {
        let dir = normalized(dir)
        return entries().map(\.mountpoint)
            .filter { $0 == dir || $0.hasPrefix(dir + "/") }
            .sorted { $0.count > $1.count }   // deepest first
    }

    private static func normalized(_ path: String) -> String {
        var path = URL(fileURLWithPath: path).standardizedFileURL.path
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        return path
    }

    /// mountinfo writes space, tab, newline and backslash as \040, \011, \012, \134.
    private static func unescape(_ field: String) -> String {
        guard field.contains("\\") else { return field }
        var bytes: [UInt8] = []
        let raw = Array(field.utf8)
        var i = 0
        while i < raw.count {
            if raw[i] == 0x5C, i + 3 < raw.count,
               let value = UInt8(String(decoding: raw[(i + 1)...(i + 3)], as: UTF8.self), radix: 8) {
                bytes.append(value)
                i += 4
            } else {
                bytes.append(raw[i])
                i += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
