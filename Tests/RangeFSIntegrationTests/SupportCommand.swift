import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What a finished (or timed-out) child process left behind.
struct CommandResult: Sendable, CustomStringConvertible {
    let argv: [String]
    /// Exit code, or 128 + signal number when the process was killed by a signal.
    let status: Int32
    let stdoutData: Data
    let stderrData: Data
    let timedOut: Bool
    /// Wall-clock seconds from start to exit.
    let seconds: Double

    var stdout: String { String(decoding: stdoutData, as: UTF8.self) }
    var stderr: String { String(decoding: stderrData, as: UTF8.self) }
    var succeeded: Bool { !timedOut && status == 0 }

    var description: String {
        var text = "$ \(argv.joined(separator: " "))\n"
        text += timedOut ? "  -> TIMED OUT after \(String(format: "%.1f", seconds)) s (killed)\n"
                         : "  -> exit \(status) after \(String(format: "%.2f", seconds)) s\n"
        let out = stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let err = stderr.trimmingCharacters(in: .whitespacesAndNewlines)
        if !out.isEmpty { text += "  stdout: \(String(out.prefix(2000)))\n" }
        if !err.isEmpty { text += "  stderr: \(String(err.prefix(2000)))\n" }
        return text
    }
}

struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Runs child processes with a hard time limit. Output goes to temporary files (not
/// pipes), so a chatty child can never block on a full pipe.
enum Command {
    /// Runs `argv` (argv[0] is looked up on PATH) and waits at most `timeout` seconds;
    /// past that the child's process group gets SIGTERM, then SIGKILL.
    static func run(_ argv: [String], timeout: Double = 60) -> CommandResult {
        do {
            let child = try BackgroundCommand(argv)
            return child.wait(timeout: timeout)
        } catch {
            return CommandResult(argv: argv, status: 127, stdoutData: Data(),
                                 stderrData: Data("could not start: \(error)".utf8),
                                 timedOut: false, seconds: 0)
        }
    }
}

/// A child process started now and waited for later (always with a bound).
///
/// Spawned with `posix_spawnp` rather than Foundation's `Process`, which starts children
/// with almost every signal blocked: a daemon started that way would never see SIGTERM.
/// Here the child gets an empty signal mask, default signal actions, its own process
/// group, stdin from /dev/null and stdout/stderr in temporary files.
final class BackgroundCommand {
    let argv: [String]
    let pid: Int32
    private let exit: ExitBox
    private let outURL: URL
    private let errURL: URL
    private let started: UInt64
    private var result: CommandResult?

    init(_ argv: [String]) throws {
        precondition(!argv.isEmpty)
        self.argv = argv
        let dir = try Scratch.commandOutputDir()
        let id = UUID().uuidString
        outURL = dir.appendingPathComponent("\(id).out")
        errURL = dir.appendingPathComponent("\(id).err")

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outURL.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, errURL.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)

        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attr, &empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for sig in [SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE, SIGCHLD, SIGALRM, SIGUSR1, SIGUSR2] {
            sigaddset(&defaults, sig)
        }
        posix_spawnattr_setsigdefault(&attr, &defaults)
        posix_spawnattr_setpgroup(&attr, 0)
        posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

        let cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { for arg in cArgs { free(arg) } }
        var child: pid_t = 0
        started = DispatchTime.now().uptimeNanoseconds
        let rc = posix_spawnp(&child, argv[0], &actions, &attr, cArgs, environ)
        guard rc == 0 else {
            throw HarnessError("cannot start \(argv[0]): \(String(cString: strerror(rc)))")
        }
        pid = child
        exit = ExitBox()
        let box = exit
        let spawned = child
        let thread = Thread {
            var status: Int32 = 0
            var r: pid_t
            repeat { r = waitpid(spawned, &status, 0) } while r < 0 && errno == EINTR
            box.finish(r == spawned ? status : -1)
        }
        thread.start()
    }

    var isRunning: Bool { !exit.isDone }

    /// What the child has written so far, stdout then stderr (both go to files as it writes).
    var outputSoFar: String {
        [outURL, errURL].map { (try? String(contentsOf: $0, encoding: .utf8)) ?? "" }.joined(separator: "\n")
    }

    /// Waits at most `timeout` seconds, then kills the child's process group (TERM, then
    /// KILL) and reports `timedOut`. Never waits longer than `timeout` + about 7 s.
    @discardableResult
    func wait(timeout: Double) -> CommandResult {
        if let result { return result }
        var timedOut = false
        if !exit.wait(seconds: timeout) {
            timedOut = true
            signalGroup(SIGTERM)
            if !exit.wait(seconds: 2) {
                signalGroup(SIGKILL)
                _ = exit.wait(seconds: 5)
            }
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        var status: Int32 = -1
        if let raw = exit.status, raw >= 0 {
            let signal = raw & 0x7f
            status = signal == 0 ? (raw >> 8) & 0xff : 128 + signal
        }
        let out = (try? Data(contentsOf: outURL)) ?? Data()
        let err = (try? Data(contentsOf: errURL)) ?? Data()
        try? FileManager.default.removeItem(at: outURL)
        try? FileManager.default.removeItem(at: errURL)
        let result = CommandResult(argv: argv, status: status, stdoutData: out, stderrData: err,
                                   timedOut: timedOut, seconds: seconds)
        self.result = result
        return result
    }

    /// Stops the child now (TERM, then KILL) and returns what it left.
    @discardableResult
    func kill() -> CommandResult { wait(timeout: 0) }

    /// Signals the child's process group (so its own children get it too).
    private func signalGroup(_ sig: Int32) {
        guard pid > 0, !exit.isDone else { return }
        _ = Glibc.kill(-pid, sig)
    }

    deinit {
        if result == nil { wait(timeout: 0) }
    }
}

/// The exit status of one child, set once by its waiter thread.
private final class ExitBox: @unchecked Sendable {
    // @unchecked: every access to `raw` holds `condition`.
    private let condition = NSCondition()
    private var raw: Int32?

    func finish(_ status: Int32) {
        condition.lock()
        raw = status
        condition.broadcast()
        condition.unlock()
    }

    var isDone: Bool {
        condition.lock()
        defer { condition.unlock() }
        return raw != nil
    }

    var status: Int32? {
        condition.lock()
        defer { condition.unlock() }
        return raw
    }

    /// True when the child exited within `seconds`.
    func wait(seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(max(0, seconds))
        condition.lock()
        defer { condition.unlock() }
        while raw == nil {
            if !condition.wait(until: deadline) { return raw != nil }
        }
        return true
    }
}
