import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where the `rangefs` binary under test is: `$RANGEFS_BIN`, else the `rangefs` built
/// beside this test executable (same build), else `<package root>/.build/debug/rangefs`.
enum RangeFSBinary {
    static var packageRoot: URL {
        // .../Tests/RangeFSIntegrationTests/SupportMount.swift → three levels up.
        URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
    }

    static var candidates: [String] {
        var list: [String] = []
        if let env = ProcessInfo.processInfo.environment["RANGEFS_BIN"], !env.isEmpty { return [env] }
        if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            list.append(URL(fileURLWithPath: exe).deletingLastPathComponent()
                .appendingPathComponent("rangefs").path)
        }
        list.append(packageRoot.appendingPathComponent(".build/debug/rangefs").path)
        return list
    }

    /// The binary's path, or an error that says where it looked and what to do.
    static func path() throws -> String {
        for candidate in candidates where FileManager.default.isExecutableFile(atPath: candidate) {
            return candidate
        }
        throw HarnessError("""
            rangefs binary not found (looked at: \(candidates.joined(separator: ", "))). \
            Build it with `swift build` or point RANGEFS_BIN at it.
            """)
    }
}

/// One entry of a plain-text manifest.
struct ManifestLine {
    /// Path inside the mount, or nil for a path-less line (named after the URL).
    let path: String?
    let url: String

    var line: String { path.map { "\($0)\t\(url)" } ?? url }
}

/// A `rangefs mount` of a manifest at a fresh mount point, with its own cache directory
/// unless one is given. `teardown()` (also run by `deinit`) always unmounts:
/// `rangefs unmount`, then `fusermount3 -u -z` for a stale mount, then ends a daemon
/// that outlived its mount.
final class Mount {
    let binary: String
    let manifestPath: String
    let mountpoint: String
    let cacheDir: String
    let options: [String]
    /// Variables set for `rangefs mount` and so for the mount process (AWS keys, `HOME`); a
    /// variable given as "" is removed.
    var environment: [String: String] = [:]
    private(set) var mountResults: [CommandResult] = []

    var logPath: String { (cacheDir as NSString).appendingPathComponent("rangefs.log") }

    /// Writes `manifest` into `workDir` and prepares (does not mount) a mount point.
    convenience init(binary: String, manifest: String, manifestName: String = "manifest.txt",
                     workDir: URL, cacheDir: URL? = nil, options: [String] = []) throws {
        let manifestURL = workDir.appendingPathComponent(manifestName)
        try manifest.write(to: manifestURL, atomically: true, encoding: .utf8)
        try self.init(binary: binary, source: manifestURL.path, workDir: workDir, cacheDir: cacheDir, options: options)
    }

    /// Prepares (does not mount) a mount point for `source`: a manifest's path or URL, or a web
    /// directory's URL.
    init(binary: String, source: String, workDir: URL, cacheDir: URL? = nil, options: [String] = []) throws {
        self.binary = binary
        self.options = options
        manifestPath = source
        let mnt = workDir.appendingPathComponent("mnt-\(UUID().uuidString.prefix(8).lowercased())")
        try FileManager.default.createDirectory(at: mnt, withIntermediateDirectories: true)
        mountpoint = mnt.path
        let cache = cacheDir ?? workDir.appendingPathComponent("cache-\(UUID().uuidString.prefix(8).lowercased())")
        try FileManager.default.createDirectory(at: cache, withIntermediateDirectories: true)
        self.cacheDir = cache.path
    }

    convenience init(binary: String, entries: [ManifestLine], workDir: URL, cacheDir: URL? = nil,
                     options: [String] = []) throws {
        let text = "# written by the integration tests\n" + entries.map(\.line).joined(separator: "\n") + "\n"
        try self.init(binary: binary, manifest: text, workDir: workDir, cacheDir: cacheDir, options: options)
    }

    var isMounted: Bool { MountTable.isMounted(mountpoint) }

    /// Path of `relative` inside the mount.
    func path(_ relative: String) -> String {
        relative.isEmpty ? mountpoint : (mountpoint as NSString).appendingPathComponent(relative)
    }

    /// Runs `rangefs mount` and returns its result without judging it.
    @discardableResult
    func tryMount(timeout: Double = 60) -> CommandResult {
        clearStaleMount()
        let argv = Self.withEnvironment(environment, [binary, "mount", manifestPath, mountpoint, "--cache-dir", cacheDir] + options)
        let r = Command.run(argv, timeout: timeout)
        mountResults.append(r)
        return r
    }

    /// `argv` run by env(1) with `environment` set ("" removes a variable).
    static func withEnvironment(_ environment: [String: String], _ argv: [String]) -> [String] {
        guard !environment.isEmpty else { return argv }
        let sorted = environment.sorted { $0.key < $1.key }
        return ["env"] + sorted.filter { $0.value.isEmpty }.flatMap { ["-u", $0.key] }
            + sorted.filter { !$0.value.isEmpty }.map { "\($0.key)=\($0.value)" } + argv
    }

    /// Mounts, and throws with the command's output and the daemon log unless the mount
    /// is really there afterwards.
    func mount(timeout: Double = 60) throws {
        let r = tryMount(timeout: timeout)
        guard r.succeeded else {
            throw HarnessError("rangefs mount failed:\n\(r)\ndaemon log:\n\(logTail())")
        }
        // The contract says mount returns once mounted; allow a short grace anyway.
        guard Poll.until(seconds: 5, every: 0.05, { isMounted }) else {
            throw HarnessError("rangefs mount exited 0 but \(mountpoint) is not in /proc/self/mountinfo\n\(r)\ndaemon log:\n\(logTail())")
        }
    }

    /// `rangefs unmount` (bounded); falls back to a lazy unmount and ends a leftover daemon.
    @discardableResult
    func unmount(timeout: Double = 60) -> CommandResult {
        let daemons = daemonPids()
        let r = Command.run([binary, "unmount", mountpoint], timeout: timeout)
        if isMounted { clearStaleMount() }
        // The daemon finishes writing its cache before it exits; give it a bounded while.
        for pid in daemons where !ProcessInfo.waitForExit(pid, seconds: 30) {
            ProcessInfo.terminate(pid: pid, graceSeconds: 10)
        }
        return r
    }

    /// Always safe to call: unmounts if mounted and ends any daemon of this mount point.
    func teardown() {
        if isMounted || !daemonPids().isEmpty { unmount() }
    }

    deinit { teardown() }

    /// Lazily unmounts whatever is mounted at the mount point (a stale mount included).
    func clearStaleMount() {
        guard isMounted else { return }
        _ = Command.run(["fusermount3", "-u", "-z", mountpoint], timeout: 15)
        if isMounted { _ = umount2(mountpoint, Int32(MNT_DETACH)) }
    }

    /// Processes of the binary whose command line names this mount point.
    func daemonPids() -> [Int32] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        let binaryName = (binary as NSString).lastPathComponent
        return names.compactMap { Int32($0) }.filter { pid in
            guard pid != getpid() else { return false }
            let cmd = ProcessInfo.commandLine(of: pid)
            return cmd.contains(mountpoint) && cmd.contains(binaryName) && !cmd.contains(" unmount ")
                && ProcessInfo.isAlive(pid)
        }
    }

    /// The daemon's log (`CACHE_DIR/rangefs.log`), "" when there is none.
    func log() -> String {
        (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
    }

    func logTail(lines: Int = 40) -> String {
        let all = log().split(separator: "\n", omittingEmptySubsequences: false)
        return all.suffix(lines).joined(separator: "\n")
    }
}
