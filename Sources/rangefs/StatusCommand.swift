import ArgumentParser
import CSystem
import Foundation
import RangeFSCore
import Synchronization

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show how much of each file of a mount is cached, and how fast it is arriving.",
        discussion: """
        One line per file: its state (remote, partial, complete, waiting for space, or failed \
        and why), the bytes cached out of its size, a progress bar and the current download \
        rate; below a file with mirrors, one line per source: ok and its measured rate, backing \
        off and its last error, or dropped for that file and why; then the totals, whether background fetching is paused, and the cache's size, \
        the free space on its disk and the floor it keeps. --watch redraws until Ctrl-C or until the \
        mount goes away; --json prints the whole status for scripts.

        Examples:
          rangefs status /mnt/media
          rangefs status --watch --interval 2 /mnt/media
          rangefs status --json /mnt/media | jq -r '.files[].state'
        """
    )

    @Argument(help: "Where the manifest is mounted.")
    var mountpoint: String

    @Flag(help: "Print the status as JSON (pretty, sorted keys), for scripts.")
    var json = false

    @Flag(help: "Redraw every --interval seconds until Ctrl-C or until the mount goes away.")
    var watch = false

    @Option(help: "Seconds between redraws with --watch (0.1 to 3600).")
    var interval: Double = 1

    func validate() throws {
        guard interval >= 0.1, interval <= 3600 else {
            throw ValidationError("--interval must be between 0.1 and 3600 seconds (got \(interval))")
        }
        guard !(json && watch) else {
            throw ValidationError("--json and --watch cannot be combined; run 'rangefs status --json' as often as needed")
        }
    }

    func run() throws {
        let target = try MountControlTarget(mountpoint: absolutePath(mountpoint))
        if watch {
            StatusWatch(target: target, interval: .milliseconds(Int((interval * 1000).rounded()))).run()
            return
        }
        let status = try target.perform(.status)
        Terminal.write(json ? StatusReport.json(status) + "\n" : StatusRenderer().table(status))
    }
}

/// `status --watch`: a fresh frame every interval, until Ctrl-C or until the mount goes away.
struct StatusWatch {
    var target: MountControlTarget
    var interval: Duration

    func run() {
        Interrupt.install()
        // A busy mount gets as long as one interval to answer, but at least a second and at most five.
        let requestTimeout = min(.seconds(5), max(.seconds(1), interval))
        let title = "\(target.mountpoint): every \(Self.seconds(interval)); Ctrl-C to stop"
        // Ends on Ctrl-C or when the mount has gone; each pass is one bounded request and a
        // wait of at most `interval`.
        while !Interrupt.isRaised {
            let started = ContinuousClock.now
            let renderer = StatusRenderer()  // per frame: the terminal may have been resized
            let body: [String]
            do {
                body = renderer.lines(try target.status(timeout: requestTimeout))
            } catch .notListening {
                Terminal.write("\(target.mountpoint): the mount has gone away; stopped watching\n")
                return
            } catch {
                // Slow or refusing for now: say so in the frame and ask again next time.
                body = ["\(error)"]
            }
            if Interrupt.isRaised { break }
            Terminal.write(renderer.frame(title: title, body))
            Interrupt.sleep(until: started + interval)
        }
    }

    private static func seconds(_ duration: Duration) -> String {
        let milliseconds = Int(duration / .milliseconds(1))
        return milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : "\(Double(milliseconds) / 1000) s"
    }
}

/// Ctrl-C during `--watch` only raises a flag, so the loop ends between frames rather than in
/// the middle of one. An atomic store is safe in a signal handler.
private let interruptRaised = Atomic<Bool>(false)

enum Interrupt {
    static func install() {
        signal(SIGINT) { _ in interruptRaised.store(true, ordering: .relaxed) }
    }

    static var isRaised: Bool {
        interruptRaised.load(ordering: .relaxed)
    }

    /// Sleeps until `deadline` in short steps, so Ctrl-C ends the wait at once.
    static func sleep(until deadline: ContinuousClock.Instant) {
        while !isRaised {
            let remaining = deadline - .now
            guard remaining > .zero else { return }
            usleep(UInt32(min(remaining, .milliseconds(50)) / .microseconds(1)))
        }
    }
}

// MARK: - Finding a mount's control socket (also used by pause and resume)

/// The control socket of the rangefs mount at a mountpoint: the mount's root directory names
/// it in the `user.rangefs.control` extended attribute.
struct MountControlTarget {
    static let attribute = "user.rangefs.control"
    /// Bounds the attribute read: on a hung mount every file system call blocks.
    static let attributeTimeout: Duration = .seconds(5)
    /// Longer than the server gives a silent client (5 s), so a request queued behind one is still answered.
    static let timeout: Duration = .seconds(10)

    let mountpoint: String
    let socketPath: String

    init(mountpoint: String) throws {
        self.mountpoint = mountpoint
        switch AttributeReader.read(Self.attribute, of: mountpoint, timeout: Self.attributeTimeout) {
        case .value(let value):
            guard value.hasPrefix("/"), !value.contains("\0") else {
                throw CommandFailure("\(mountpoint) names an unusable control socket: \(value.debugDescription)")
            }
            socketPath = value
        case .failed(let code):
            throw CommandFailure(Self.explain(code, mountpoint: mountpoint))
        case .timedOut:
            throw CommandFailure("\(mountpoint) did not answer within \(Self.attributeTimeout); the mount may be hung")
        }
    }

    func status(timeout: Duration = MountControlTarget.timeout) throws(ControlError) -> MountStatus {
        try ControlClient.send(.status, to: socketPath, timeout: timeout).requireStatus()
    }

    /// Sends a command; a failure becomes a message that names the mountpoint.
    func perform(_ command: ControlCommand) throws -> MountStatus {
        try send(command, paths: nil).status
    }

    /// Sends a command with paths; returns the status after it and what the mount says it did.
    func send(_ command: ControlCommand, paths: [String]?, timeout: Duration = MountControlTarget.timeout) throws -> (status: MountStatus, message: String?) {
        do {
            let reply = try ControlClient.send(command, paths: paths, to: socketPath, timeout: timeout)
            return (try reply.requireStatus(), reply.message)
        } catch {
            let action = switch command {
            case .status: "get the status of"
            case .pause: "pause"
            case .resume: "resume"
            case .evict: "evict from"
            case .pin: "pin in"
            case .unpin: "unpin in"
            case .verify: "verify"
            case .refresh: "refresh"
            }
            throw CommandFailure("cannot \(action) \(mountpoint): \(error)")
        }
    }

    private static func explain(_ code: Int32, mountpoint: String) -> String {
        switch code {
        case ENODATA, EOPNOTSUPP, ERANGE:
            let mounts = MountTable.current().filter { $0.type == "fuse.rangefs" }
            if mounts.contains(where: { $0.mountpoint == mountpoint }) {
                return "\(mountpoint) is a rangefs mount without a control socket (mounted by an older rangefs?)"
            }
            if let outer = mounts.first(where: { mountpoint.hasPrefix($0.mountpoint == "/" ? "/" : $0.mountpoint + "/") }) {
                return "\(mountpoint) is not a rangefs mount, but lies inside the one at \(outer.mountpoint)"
            }
            return "\(mountpoint) is not a rangefs mount"
        case ENOENT:
            return "\(mountpoint) does not exist"
        case ENOTCONN:
            return "\(mountpoint) is a rangefs mount whose process has ended; run 'rangefs unmount \(mountpoint)'"
        case EACCES, EPERM:
            return "permission denied reading \(mountpoint) (a mount admits only its owner unless mounted with -o allow_other)"
        default:
            return "cannot read \(attribute) of \(mountpoint): \(String(cString: strerror(code)))"
        }
    }
}

/// Reads an extended attribute on a helper thread: a FUSE mount whose process hangs blocks
/// every call in the kernel, and a status command must not hang with it. After the timeout the
/// thread is abandoned; the command exits soon after anyway.
enum AttributeReader {
    enum Outcome: Sendable {
        case value(String)
        case failed(Int32)
        case timedOut
    }

    private final class Handoff: Sendable {
        let outcome = Mutex<Outcome>(.timedOut)
        let done = DispatchSemaphore(value: 0)
    }

    static func read(_ name: String, of path: String, timeout: Duration) -> Outcome {
        let handoff = Handoff()
        let thread = Thread {
            let result = readNow(name, of: path)
            handoff.outcome.withLock { $0 = result }
            handoff.done.signal()
        }
        thread.start()
        let milliseconds = Int(timeout / .milliseconds(1))
        guard handoff.done.wait(timeout: .now() + .milliseconds(milliseconds)) == .success else { return .timedOut }
        return handoff.outcome.withLock { $0 }
    }

    private static func readNow(_ name: String, of path: String) -> Outcome {
        var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX))
        let length = getxattr(path, name, &buffer, buffer.count)
        guard length >= 0 else { return .failed(errno) }
        return .value(String(decoding: buffer.prefix(length), as: UTF8.self))
    }
}
