import CSystem
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// System integration: mounting the way mount(8), mount.fuse3 and /etc/fstab do it, `-o`
/// options, `umount`, help texts and the man page, and logging to syslog in the background.
extension RangeFSIntegrationTests {
    @Test("mount -t fuse.rangefs: mount.fuse3 runs rangefs MANIFEST MNT -o …; -o settings apply; umount ends the daemon")
    func mountTypeFuseRangefs() throws {
        let setup = try SystemMountSetup(fx)
        let options = "rw,cache_dir=\(setup.mount.cacheDir),prefetch=none,max_downloads=2"
        // Exactly what mount(8) runs for `mount -t fuse.rangefs MANIFEST MNT -o OPTIONS`:
        // `mount.fuse MANIFEST MNT -o rw,OPTIONS -t fuse.rangefs`. mount(8) drops PATH from the
        // helper's environment, so mount.fuse3 finds rangefs on the standard path only; calling
        // mount.fuse3 directly lets this test put the binary under test on PATH.
        var r = Command.run(["env", "PATH=\(setup.binDir):\(SystemMountSetup.path)", "mount.fuse3",
                             setup.mount.manifestPath, setup.mount.mountpoint, "-t", "fuse.rangefs", "-o", options],
                            timeout: 60)
        try #require(Check.succeeded(r, "mount.fuse3 … -t fuse.rangefs", mount: setup.mount))
        if let installed = SystemMountSetup.installedBinary(matching: fx.binary) {
            // rangefs is installed on the standard path: mount(8) itself works too.
            #expect(Command.run(["umount", setup.mount.mountpoint], timeout: 60).succeeded)
            _ = SystemMountSetup.waitUntilUnmounted(setup.mount.mountpoint)
            r = Command.run(["mount", "-t", "fuse.rangefs", setup.mount.manifestPath, setup.mount.mountpoint,
                             "-o", options], timeout: 60)
            try #require(Check.succeeded(r, "mount -t fuse.rangefs (\(installed))", mount: setup.mount))
        }

        let entry = try #require(ProcMounts.entry(at: setup.mount.mountpoint), "not in /proc/mounts after \(r)")
        #expect(entry.type == "fuse.rangefs")
        #expect(entry.options.contains("ro"), "a RangeFS mount is read-only: \(entry.options)")
        let daemon = try #require(SystemMountSetup.daemonPid(of: setup.mount.mountpoint))
        let daemonArguments = DaemonArguments(of: daemon)
        #expect(daemonArguments.value("--cache-dir") == setup.mount.cacheDir, "cache_dir from -o: \(daemonArguments)")
        #expect(daemonArguments.value("--prefetch") == "none", "prefetch from -o: \(daemonArguments)")
        #expect(daemonArguments.value("--max-downloads") == "2", "max_downloads from -o: \(daemonArguments)")
        #expect(!daemonArguments.fuseOptions.contains("rw"), "rw does not reach FUSE: \(daemonArguments)")

        for placed in setup.placed {
            let (hash, result) = SHA256.of(setup.mount.path(placed.path))
            Check.succeeded(result, "sha256sum \(placed.path)", mount: setup.mount)
            #expect(hash == placed.file.sha256, "bytes of \(placed.path)")
        }
        #expect(FileManager.default.fileExists(atPath: setup.mount.logPath), "the daemon logs into cache_dir")

        try setup.umountAndExpectExit(daemon)
    }

    @Test("An fstab line through mount(8): mount options are dropped, allow_other reaches /proc/mounts, umount works")
    func fstabLineThroughMount() throws {
        let setup = try SystemMountSetup(fx)
        // The classic `PROGRAM#SOURCE` form of type fuse names the program by its path, so
        // mount(8) finds it without PATH; mount(8) and mount.fuse3 handle the line just as for
        // type fuse.rangefs (see examples/fstab.example).
        let options = ["defaults", "noauto", "_netdev", "nofail", "x-systemd.automount", "x-systemd.idle-timeout=60",
                       "users", "allow_other", "default_permissions",
                       "cache_dir=\(setup.mount.cacheDir)", "prefetch=none"].joined(separator: ",")
        let fstab = URL(fileURLWithPath: setup.mount.manifestPath).deletingLastPathComponent()
            .appendingPathComponent("fstab")
        let line = "\(setup.binDir)/rangefs#\(setup.mount.manifestPath) \(setup.mount.mountpoint) fuse \(options) 0 0\n"
        try ("# written by the integration tests\n" + line).write(to: fstab, atomically: true, encoding: .utf8)

        let r = Command.run(["mount", "--fstab", fstab.path, setup.mount.mountpoint], timeout: 60)
        try #require(Check.succeeded(r, "mount --fstab FILE MNT for: \(line)", mount: setup.mount))
        let entry = try #require(ProcMounts.entry(at: setup.mount.mountpoint), "not in /proc/mounts after \(r)")
        #expect(entry.type == "fuse.rangefs", "\(entry)")
        #expect(entry.options.contains("allow_other"), "allow_other in /proc/mounts: \(entry.options)")
        #expect(entry.options.contains("default_permissions"), "default_permissions in /proc/mounts: \(entry.options)")
        #expect(entry.options.contains("ro"), "read-only: \(entry.options)")

        let placed = setup.placed[0]
        let (hash, result) = SHA256.of(setup.mount.path(placed.path))
        Check.succeeded(result, "sha256sum \(placed.path)", mount: setup.mount)
        #expect(hash == placed.file.sha256, "bytes of \(placed.path)")

        let daemon = try #require(SystemMountSetup.daemonPid(of: setup.mount.mountpoint))
        try setup.umountAndExpectExit(daemon)
    }

    @Test("Flags on the command line win over the same settings in -o; mount(8)-only options are ignored")
    func flagsWinOverOptionList() throws {
        let setup = try SystemMountSetup(fx)
        let r = Command.run([fx.binary, "mount", "--prefetch", "none", "--log-level", "debug",
                             setup.mount.manifestPath, setup.mount.mountpoint,
                             "-o", "prefetch=all,log_level=error,max-downloads=5",
                             "-o", "cache_dir=\(setup.mount.cacheDir),noauto,nofail,_netdev,defaults,user,x-systemd.automount,comment=x,rw"],
                            timeout: 60)
        try #require(Check.succeeded(r, "rangefs mount with flags and -o", mount: setup.mount))
        try #require(MountTable.isMounted(setup.mount.mountpoint))
        let daemon = try #require(SystemMountSetup.daemonPid(of: setup.mount.mountpoint))
        let daemonArguments = DaemonArguments(of: daemon)
        #expect(daemonArguments.value("--prefetch") == "none", "the flag wins: \(daemonArguments)")
        #expect(daemonArguments.value("--log-level") == "debug", "the flag wins: \(daemonArguments)")
        #expect(daemonArguments.value("--max-downloads") == "5", "-o max-downloads applies: \(daemonArguments)")
        #expect(daemonArguments.value("--cache-dir") == setup.mount.cacheDir, "-o cache_dir applies: \(daemonArguments)")
        #expect(daemonArguments.fuseOptions.isEmpty, "mount(8)'s options are not passed on: \(daemonArguments)")
        try setup.umountAndExpectExit(daemon)
    }

    @Test("A bad -o option fails the mount with a message that names it, and mounts nothing")
    func badOptionsAreNamed() throws {
        let setup = try SystemMountSetup(fx)
        let cases: [(options: String, expected: [String])] = [
            ("prefetch=bogus", ["-o prefetch", "bogus", "'all', 'opened' or 'none'"]),
            ("allow_other,block_size=3", ["-o block_size", "'3'"]),
            ("max_downloads=0", ["-o max_downloads"]),
            ("max_rate=fast", ["-o max_rate", "fast"]),
            ("log_level=loud", ["-o log_level"]),
            ("cache_dir", ["-o cache_dir needs a value"]),
            ("cache_dir=", ["-o cache_dir needs a value"]),
            ("foreground=yes", ["-o foreground takes no value"]),
            ("uid=alice", ["-o uid", "alice"]),
            ("ca_file=/nonexistent/ca.pem", ["-o ca_file", "/nonexistent/ca.pem"]),
            ("no_such_fuse_option", ["no_such_fuse_option"]),
        ]
        for (options, expected) in cases {
            // The mount.fuse3 form, the one fstab users see errors from.
            let r = Command.run([fx.binary, setup.mount.manifestPath, setup.mount.mountpoint,
                                 "-o", "cache_dir=\(setup.mount.cacheDir)", "-o", options], timeout: 60)
            #expect(!r.succeeded && !r.timedOut, "-o \(options) must fail: \(r)")
            for text in expected {
                #expect(r.stderr.contains(text), "message for -o \(options) names \(text): \(r)")
            }
            #expect(!MountTable.isMounted(setup.mount.mountpoint), "nothing mounted for -o \(options)")
            setup.mount.clearStaleMount()
        }
        #expect(setup.mount.daemonPids().isEmpty, "no daemon left behind")
    }

    @Test("--help, --version and every subcommand's help work and show an example; the man page renders")
    func helpAndManPage() throws {
        let help = Command.run([fx.binary, "--help"], timeout: 30)
        try #require(Check.succeeded(help, "rangefs --help"))
        #expect(help.stdout.contains("SUBCOMMANDS:") && help.stdout.contains("fuse.rangefs"), "\(help)")
        let version = Command.run([fx.binary, "--version"], timeout: 30)
        Check.succeeded(version, "rangefs --version")
        #expect(version.stdout.first?.isNumber == true, "a version number: \(version)")

        let subcommands = SystemMountSetup.subcommands(inHelp: help.stdout)
        #expect(subcommands.contains("mount") && subcommands.contains("unmount") && subcommands.count >= 5,
                "subcommands listed: \(subcommands)")
        for name in subcommands where name != "help" {
            let r = Command.run([fx.binary, "help", name], timeout: 30)
            Check.succeeded(r, "rangefs help \(name)")
            #expect(r.stdout.contains("USAGE: rangefs \(name)"), "usage of \(name): \(r)")
            #expect(r.stdout.contains("Example"), "rangefs help \(name) shows an example: \(r)")
            let viaFlag = Command.run([fx.binary, name, "--help"], timeout: 30)
            #expect(viaFlag.stdout == r.stdout, "rangefs \(name) --help is rangefs help \(name)")
        }

        let page = RangeFSBinary.packageRoot.appendingPathComponent("docs/man/rangefs.1").path
        let man = Command.run(["env", "MANWIDTH=100", "man", "--warnings", "-l", page], timeout: 60)
        try #require(Check.succeeded(man, "man -l docs/man/rangefs.1"))
        #expect(!man.stderr.contains("warning"), "man renders without warnings: \(man.stderr)")
        #expect(man.stdout.contains("MOUNTING FROM FSTAB") && man.stdout.contains("fuse.rangefs"), "\(man.stdout.prefix(500))")
        for name in subcommands where name != "help" {
            // A subcommand missing here means the page is stale: run scripts/make-man.sh.
            #expect(man.stdout.contains("\n     \(name)"), "the man page describes \(name) (regenerate with scripts/make-man.sh)")
        }
    }

    @Test("In the background the mount also logs to syslog (the journal's /dev/log)",
          .enabled(if: !FileManager.default.fileExists(atPath: DevLogListener.path),
                   "/dev/log belongs to a running syslog daemon or journald; its messages cannot be read back here"))
    func backgroundMountLogsToSyslog() throws {
        let listener = try DevLogListener()
        defer { listener.close() }
        let setup = try SystemMountSetup(fx)
        let r = Command.run([fx.binary, setup.mount.manifestPath, setup.mount.mountpoint,
                             "-o", "cache_dir=\(setup.mount.cacheDir),prefetch=none"], timeout: 60)
        try #require(Check.succeeded(r, "background mount", mount: setup.mount))
        let daemon = try #require(SystemMountSetup.daemonPid(of: setup.mount.mountpoint))
        try setup.umountAndExpectExit(daemon)

        let messages = listener.receive(timeout: 5).filter { $0.contains("rangefs[\(daemon)]") }
        let mounted = messages.first { $0.contains("mounted \(setup.mount.manifestPath) at \(setup.mount.mountpoint)") }
        #expect(mounted != nil, """
            the daemon's "mounted …" line reaches syslog (is SyslogLogHandler bootstrapped in MountRunner for \
            background mounts?); received: \(messages)
            """)
        // <30> is facility daemon (3 << 3) with priority info (6).
        #expect(mounted?.hasPrefix("<30>") == true, "facility daemon, priority info: \(mounted ?? "")")
        #expect(messages.contains { $0.contains("unmounted \(setup.mount.mountpoint)") }, "\(messages)")
        // The log file keeps getting the same lines.
        #expect(setup.mount.log().contains("mounted \(setup.mount.manifestPath)"), "\(setup.mount.logTail())")
    }

    @Test("In the background the mount process is called rangefs (pgrep, top), and its threads by what they do")
    func backgroundMountIsNamedRangefs() throws {
        let setup = try SystemMountSetup(fx)
        let r = Command.run([fx.binary, setup.mount.manifestPath, setup.mount.mountpoint,
                             "-o", "cache_dir=\(setup.mount.cacheDir),prefetch=none"], timeout: 60)
        try #require(Check.succeeded(r, "background mount", mount: setup.mount))
        let daemon = try #require(SystemMountSetup.daemonPid(of: setup.mount.mountpoint))
        func name(_ path: String) -> String? {
            (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .newlines)
        }
        let processName = name("/proc/\(daemon)/comm")
        func threadNames() -> Set<String> {
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon)/task")) ?? []
            return Set(tasks.compactMap { name("/proc/\(daemon)/task/\($0)/comm") })
        }
        // Each loop thread names itself once it runs, which on a busy machine may be after the mount returned.
        let expected: Set = ["rangefs-http", "rangefs-streams", "rangefs-control"]
        var seen = Set<String>()
        _ = Poll.until(seconds: 30) {
            seen = threadNames()
            return expected.isSubset(of: seen)
        }
        try setup.umountAndExpectExit(daemon)

        #expect(processName == "rangefs", "the background mount is not /proc/self/exe's \"exe\" to pgrep and top")
        let threadNames = seen
        for thread in expected.sorted() {
            #expect(threadNames.contains(thread), "a thread named \(thread) among \(threadNames.sorted())")
        }
    }
}

/// A manifest of a few standard files, a mount point and cache directory (a prepared, not
/// mounted `Mount` of the fixture, so teardown unmounts whatever the test mounted there), and a
/// directory holding a `rangefs` symlink to the binary under test.
private struct SystemMountSetup {
    let mount: Mount
    let placed: [Fixture.Placed]
    let binDir: String

    static var path: String {
        ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    }

    init(_ fx: Fixture) throws {
        placed = fx.standardLayout.filter { ["one.bin", "blocks/block-plus-one.bin", "blocks/deeper/tail.bin"].contains($0.path) }
        let text = "# written by the integration tests\n"
            + placed.map { "\($0.path)\t\(fx.nginx.url($0.file.name))" }.joined(separator: "\n") + "\n"
        mount = try fx.prepare(manifest: text, name: "media.txt")
        let bin = URL(fileURLWithPath: mount.manifestPath).deletingLastPathComponent().appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: bin.appendingPathComponent("rangefs").path,
                                                   withDestinationPath: fx.binary)
        binDir = bin.path
    }

    /// The mount's process, which the root directory names in `user.rangefs.pid`.
    static func daemonPid(of mountpoint: String) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let length = getxattr(mountpoint, "user.rangefs.pid", &buffer, buffer.count)
        guard length > 0 else { return nil }
        return Int32(String(decoding: buffer.prefix(length), as: UTF8.self))
    }

    /// `umount MNT` (mount(8), not rangefs) unmounts, and the daemon then exits by itself.
    func umountAndExpectExit(_ daemon: Int32, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let r = Command.run(["umount", mount.mountpoint], timeout: 60)
        Check.succeeded(r, "umount \(mount.mountpoint)", mount: mount, sourceLocation: sourceLocation)
        #expect(Self.waitUntilUnmounted(mount.mountpoint), "unmounted after umount", sourceLocation: sourceLocation)
        #expect(ProcessInfo.waitForExit(daemon, seconds: 30), "the daemon \(daemon) exits after umount\n\(mount.logTail())",
                sourceLocation: sourceLocation)
        #expect(mount.log().contains("unmounted \(mount.mountpoint)"), "the daemon finished cleanly\n\(mount.logTail())",
                sourceLocation: sourceLocation)
    }

    static func waitUntilUnmounted(_ mountpoint: String, seconds: Double = 10) -> Bool {
        Poll.until(seconds: seconds, every: 0.05) { !MountTable.isMounted(mountpoint) }
    }

    /// The `rangefs` that mount(8)'s helpers would run (first on the shell's standard path),
    /// when it is the binary under test.
    static func installedBinary(matching binary: String) -> String? {
        let standard = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]
        let target = URL(fileURLWithPath: binary).resolvingSymlinksInPath().path
        for dir in standard {
            let candidate = "\(dir)/rangefs"
            guard FileManager.default.isExecutableFile(atPath: candidate) else { continue }
            return URL(fileURLWithPath: candidate).resolvingSymlinksInPath().path == target ? candidate : nil
        }
        return nil
    }

    /// The names under SUBCOMMANDS: in `rangefs --help`.
    static func subcommands(inHelp help: String) -> [String] {
        guard let start = help.range(of: "SUBCOMMANDS:\n") else { return [] }
        var names: [String] = []
        for line in help[start.upperBound...].split(separator: "\n", omittingEmptySubsequences: false) {
            if line.isEmpty { break }
            // "  name    abstract"; continuation lines are indented further.
            guard line.hasPrefix("  "), !line.hasPrefix("   ") else { continue }
            if let name = line.split(separator: " ").first { names.append(String(name)) }
        }
        return names
    }
}

/// A daemon's command line (the background launch passes every setting as a flag).
private struct DaemonArguments: CustomStringConvertible {
    let arguments: [String]

    init(of pid: Int32) {
        let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") ?? Data()
        arguments = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The value after the last `flag`.
    func value(_ flag: String) -> String? {
        guard let index = arguments.lastIndex(of: flag), index + 1 < arguments.count else { return nil }
        return arguments[index + 1]
    }

    /// Every option of every `-o`.
    var fuseOptions: [String] {
        arguments.indices.filter { arguments[$0] == "-o" && $0 + 1 < arguments.count }
            .flatMap { arguments[$0 + 1].split(separator: ",").map(String.init) }
    }

    var description: String { arguments.joined(separator: " ") }
}

/// The entries of /proc/mounts, with their options.
private enum ProcMounts {
    struct Entry {
        let source: String
        let type: String
        let options: Set<String>
    }

    static func entry(at mountpoint: String) -> Entry? {
        guard let text = try? String(contentsOfFile: "/proc/mounts", encoding: .utf8) else { return nil }
        let escaped = mountpoint.replacingOccurrences(of: " ", with: "\\040")
        return text.split(separator: "\n").compactMap { line -> Entry? in
            let fields = line.split(separator: " ").map(String.init)
            guard fields.count >= 4, fields[1] == escaped else { return nil }
            return Entry(source: fields[0], type: fields[2], options: Set(fields[3].split(separator: ",").map(String.init)))
        }.last
    }
}

/// A datagram socket bound at /dev/log, the syslog socket, for as long as one test runs (only
/// where nothing else owns that path); collects what processes send to syslog.
final class DevLogListener {
    static let path = "/dev/log"
    private var descriptor: Int32

    init() throws {
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard descriptor >= 0 else { throw HarnessError("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in Self.path.utf8.enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0 else {
            let reason = String(cString: strerror(errno))
            Glibc.close(descriptor)
            throw HarnessError("cannot bind \(Self.path): \(reason)")
        }
        _ = chmod(Self.path, 0o666)
    }

    /// Every message that arrives until none has for `timeout` seconds.
    func receive(timeout: Double) -> [String] {
        var messages: [String] = []
        var buffer = [UInt8](repeating: 0, count: 8192)
        while true {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, Int32(timeout * 1000)) > 0 else { return messages }
            let count = recv(descriptor, &buffer, buffer.count, 0)
            guard count > 0 else { return messages }
            messages.append(String(decoding: buffer.prefix(count), as: UTF8.self))
        }
    }

    func close() {
        guard descriptor >= 0 else { return }
        Glibc.close(descriptor)
        descriptor = -1
        unlink(Self.path)
    }

    deinit { close() }
}
