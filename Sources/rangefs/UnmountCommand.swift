import ArgumentParser
import CSystem
import Foundation
import RangeFSCore

struct UnmountCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unmount",
        abstract: "Unmount a RangeFS mount and wait until its cache is written.",
        discussion: "Example:\n  rangefs unmount /mnt/media"
    )

    @Argument(help: "Where the manifest is mounted.")
    var mountpoint: String

    @Option(help: "Seconds to wait for the mount's process to finish writing its cache.")
    var timeout: Int = 30

    func run() throws {
        let path = absolutePath(mountpoint)
        guard MountTable.current().contains(where: { $0.mountpoint == path && $0.type == "fuse.rangefs" }) else {
            throw ValidationError("\(path) is not a rangefs mount")
        }
        let daemon = daemonProcess(of: path)
        // A file closed a moment ago can keep the mount busy until the kernel has let go of it:
        // asked again for a few seconds; a program that really holds it open is named below.
        let busyUntil = ContinuousClock.now + .seconds(min(timeout, 3))
        var result = try runTool("/bin/fusermount3", ["-u", path], timeout: .seconds(timeout))
        while result.status != 0, result.output.contains("busy"), ContinuousClock.now < busyUntil {
            usleep(100_000)
            result = try runTool("/bin/fusermount3", ["-u", path], timeout: .seconds(timeout))
        }
        guard result.status == 0 else {
            let advice = result.output.contains("busy") ? " (a program has a file or its directory open there: fuser -vm \(path) names it)" : ""
            throw CommandFailure("cannot unmount \(path): \(result.output.trimmingCharacters(in: .whitespacesAndNewlines))\(advice)")
        }
        if let daemon, !waitForExit(of: daemon, timeout: .seconds(timeout)) {
            throw CommandFailure("\(path) is unmounted, but its process \(daemon) is still finishing")
        }
    }

    /// The mount's process id, which the root directory carries as an extended attribute.
    private func daemonProcess(of path: String) -> pid_t? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let length = getxattr(path, "user.rangefs.pid", &buffer, buffer.count)
        guard length > 0 else { return nil }
        return pid_t(String(decoding: buffer.prefix(length), as: UTF8.self))
    }

    private func waitForExit(of pid: pid_t, timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if kill(pid, 0) != 0, errno == ESRCH { return true }
            // An exited daemon may wait a while for init to reap it: a zombie is done.
            if let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
               let close = stat.lastIndex(of: ")"), stat[close...].dropFirst(2).first == "Z" { return true }
            usleep(20_000)
        }
        return false
    }
}
