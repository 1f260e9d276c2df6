import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// OpenSSH's sshd on 127.0.0.1, serving SFTP (`internal-sftp`, or Debian's `sftp-server` logging
/// what it reads), with a host key and a user key made for the run with
/// ssh-keygen, and the known-hosts files a mount is given (`--known-hosts`; the user's own
/// `~/.ssh` is never touched). `stop()` (also `deinit`) always stops it; `start()` starts it
/// again on the same port with the same keys.
final class SSHServer {
    let port: UInt16
    private let prefix: URL
    private var child: BackgroundCommand?
    /// The private key the server lets in (no passphrase).
    let userKey: String
    /// Holds the server's host key, hashed as `ssh-keygen -H` writes it (`|1|…`).
    let knownHosts: String
    /// Holds another key for the server's `[127.0.0.1]:PORT`: the host key "changed".
    let otherHostsKey: String
    /// Holds no key for this server.
    let unknownHosts: String
    /// A key the server does not let in.
    let strangerKey: String

    var user: String { ProcessInfo.processInfo.environment["USER"].flatMap { $0.isEmpty ? nil : $0 } ?? "root" }

    /// `sftp://USER@127.0.0.1:PORT` + `path` (absolute on this machine, ending in `/` for a directory).
    func address(_ path: String) -> String { "sftp://\(user)@127.0.0.1:\(port)\(path)" }

    /// The mount's options that sign in with the user key and know the host key.
    var signInOptions: [String] { ["--identity", userKey, "--known-hosts", knownHosts] }

    /// Where `sftp-server` logs each file handle it closes, with the bytes it read (with `logsReads`).
    private static func readsLog(in prefix: URL) -> String { prefix.appendingPathComponent("sftp-server.log").path }

    /// The bytes the server read from files for its clients so far, by the handles it closed
    /// (its log's `close "PATH" bytes read N written M` lines; with `logsReads`).
    var bytesRead: Int {
        // Its lines end in CRLF, one Character in Swift: split on any line break.
        readsLogText.split(whereSeparator: \.isNewline).reduce(0) { total, line in
            guard let range = line.range(of: " bytes read ") else { return total }
            return total + (Int(line[range.upperBound...].prefix { $0.isNumber }) ?? 0)
        }
    }

    /// What `sftp-server` logged so far (with `logsReads`).
    var readsLogText: String { (try? String(contentsOfFile: Self.readsLog(in: prefix), encoding: .utf8)) ?? "" }

    /// `passwordUser`: an account the server also lets in by its password (sshd checks it
    /// against /etc/shadow; `UsePAM no`). `logsReads`: Debian's `sftp-server` serves SFTP instead
    /// of `internal-sftp` (which logs only to syslog), logging what it reads (`bytesRead`).
    init(passwordUser: String? = nil, logsReads: Bool = false, startTimeout: Double = 20) throws {
        let prefix = try Scratch.makeDir("sshd")
        self.prefix = prefix
        let sftp = logsReads ? "/usr/lib/openssh/sftp-server -e -l INFO 2>>\(Self.readsLog(in: prefix))" : "internal-sftp"
        func key(_ name: String, comment: String) throws -> String {
            let path = prefix.appendingPathComponent(name).path
            let made = Command.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", path])
            guard made.succeeded else { throw HarnessError("ssh-keygen: \(made)") }
            return path
        }
        let hostKey = try key("host_key", comment: "host")
        let otherHostKey = try key("other_host_key", comment: "other host")
        userKey = try key("user_key", comment: "user")
        strangerKey = try key("stranger_key", comment: "stranger")
        let port = try FreePort.pick()
        self.port = port
        func knownHostsLine(_ publicKey: String) throws -> String {
            let fields = try String(contentsOfFile: publicKey + ".pub", encoding: .utf8).split(separator: " ")
            return "[127.0.0.1]:\(port) \(fields[0]) \(fields[1])\n"
        }
        // Another host's key first (port 1), then this one's: the file is searched, not read first line only.
        let knownHosts = prefix.appendingPathComponent("known_hosts").path
        try (try knownHostsLine(otherHostKey).replacingOccurrences(of: "[127.0.0.1]:\(port)", with: "[127.0.0.1]:1")
             + knownHostsLine(hostKey)).write(toFile: knownHosts, atomically: true, encoding: .utf8)
        let hashed = Command.run(["ssh-keygen", "-q", "-H", "-f", knownHosts])
        guard hashed.succeeded else { throw HarnessError("ssh-keygen -H: \(hashed)") }
        self.knownHosts = knownHosts
        let otherHostsKey = prefix.appendingPathComponent("other_known_hosts").path
        try knownHostsLine(otherHostKey).write(toFile: otherHostsKey, atomically: true, encoding: .utf8)
        self.otherHostsKey = otherHostsKey
        let unknownHosts = prefix.appendingPathComponent("unknown_hosts").path
        try "".write(toFile: unknownHosts, atomically: true, encoding: .utf8)
        self.unknownHosts = unknownHosts
        let config = """
        Port \(port)
        ListenAddress 127.0.0.1
        HostKey \(hostKey)
        AuthorizedKeysFile \(userKey).pub
        StrictModes no
        UsePAM no
        PermitRootLogin prohibit-password
        PasswordAuthentication \(passwordUser == nil ? "no" : "yes")
        KbdInteractiveAuthentication no
        PidFile \(prefix.path)/sshd.pid
        LogLevel INFO
        Subsystem sftp \(sftp)
        \(passwordUser.map { "AllowUsers \($0) \(user)" } ?? "")

        """
        try config.write(to: prefix.appendingPathComponent("sshd_config"), atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true)
        try start(timeout: startTimeout)
    }

    func start(timeout: Double = 20) throws {
        let child = try BackgroundCommand(["/usr/sbin/sshd", "-f", prefix.appendingPathComponent("sshd_config").path, "-D", "-e"])
        guard Poll.until(seconds: timeout, every: 0.05, { !child.isRunning || FreePort.answers(port) }), child.isRunning else {
            let result = child.kill()
            throw HarnessError("sshd did not answer on 127.0.0.1:\(port) within \(timeout) s\n\(result)")
        }
        self.child = child
    }

    /// What sshd logged so far (stderr): the connections it took and refused.
    var log: String { child?.outputSoFar ?? "" }

    /// Stops sshd and every session it forked: each connection's sshd starts a session of its
    /// own (setsid), out of the listener's process group, and would outlive it.
    func stop() {
        guard let child else { return }
        let sessions = Self.descendants(of: child.pid)
        child.kill()
        for pid in sessions { kill(pid, SIGKILL) }
        _ = Poll.until(seconds: 5, every: 0.02) { sessions.allSatisfy { kill($0, 0) != 0 } }
        self.child = nil
    }

    /// Every process below `pid` (by the parent named in `/proc/PID/stat`).
    private static func descendants(of pid: Int32) -> [Int32] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        var parents: [Int32: Int32] = [:]
        for name in names {
            guard let process = Int32(name),
                  let stat = try? String(contentsOfFile: "/proc/\(name)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, let parent = Int32(fields[1]) { parents[process] = parent }
        }
        var found: [Int32] = []
        var frontier = [pid]
        while let next = frontier.popLast() {
            let children = parents.filter { $0.value == next }.map(\.key)
            found += children
            frontier += children
        }
        return found
    }

    deinit {
        stop()
        Scratch.remove(prefix)
    }
}

/// A local account made for one test and removed after it (`useradd`, `chpasswd`: root only),
/// for a server that signs users in by password.
final class LocalAccount {
    let name: String
    let password: String

    init(password: String) throws {
        name = "rfs" + String(UUID().uuidString.lowercased().prefix(8))
        self.password = password
        let added = Command.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name])
        guard added.succeeded else { throw HarnessError("useradd: \(added)") }
        let input = try Scratch.makeDir("account").appendingPathComponent("chpasswd").path
        try "\(name):\(password)\n".write(toFile: input, atomically: true, encoding: .utf8)
        let set = Command.run(["sh", "-c", "chpasswd < '\(input)'"])
        guard set.succeeded else {
            _ = Command.run(["userdel", name])
            throw HarnessError("chpasswd: \(set)")
        }
    }

    deinit {
        _ = Command.run(["userdel", name])
    }
}
