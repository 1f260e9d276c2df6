import ArgumentParser
import Foundation

/// Starts the mount as a background process and waits until it reports that the filesystem is
/// up (or has failed, after printing why). A fresh process rather than `fork`: the Swift runtime
/// and libcurl must not be forked once their threads run.
enum BackgroundLaunch {
    static let readyMessage = "ready\n"

    /// Text for the child that must not appear on its command line (`ps` shows that to every
    /// user): it reads it from `descriptor`, a pipe filled before the child starts.
    struct PrivateInput {
        var descriptor: Int32
        var text: String
    }

    static func start(arguments: [String], readyDescriptor: Int32, privateInputs: [PrivateInput] = []) throws {
        var pipeEnds: [Int32] = [0, 0]
        // Close-on-exec, so only the copy placed at `readyDescriptor` reaches the child.
        guard pipe(&pipeEnds) == 0, fcntl(pipeEnds[0], F_SETFD, FD_CLOEXEC) == 0,
              fcntl(pipeEnds[1], F_SETFD, FD_CLOEXEC) == 0 else { throw CommandFailure("cannot create a pipe: \(String(cString: strerror(errno)))") }
        defer { close(pipeEnds[0]) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], readyDescriptor)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        var privateEnds: [Int32] = []
        defer { privateEnds.forEach { _ = close($0) } }
        for privateInput in privateInputs {
            let readEnd = try filledPipe(privateInput.text)
            privateEnds.append(readEnd)
            posix_spawn_file_actions_adddup2(&actions, readEnd, privateInput.descriptor)
        }

        let executable = "/proc/self/exe"
        let argv: [UnsafeMutablePointer<CChar>?] = (["rangefs"] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var child: pid_t = 0
        let spawned = posix_spawn(&child, executable, &actions, nil, argv, environ)
        close(pipeEnds[1])
        guard spawned == 0 else { throw CommandFailure("cannot start the mount process: \(String(cString: strerror(spawned)))") }

        if readReport(from: pipeEnds[0], timeout: .seconds(120)) == readyMessage { return }
        // The child has printed its error to our stderr; pass its exit status on.
        var status: Int32 = 0
        waitpid(child, &status, 0)
        let exitStatus = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 1
        throw ExitCode(exitStatus == 0 ? 1 : exitStatus)
    }

    /// The read end of a close-on-exec pipe that holds `text`, its write end closed. The text
    /// must fit in the pipe's buffer, so nothing waits for the child to read it.
    private static func filledPipe(_ text: String) throws -> Int32 {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0, fcntl(ends[0], F_SETFD, FD_CLOEXEC) == 0, fcntl(ends[1], F_SETFD, FD_CLOEXEC) == 0 else {
            throw CommandFailure("cannot create a pipe: \(String(cString: strerror(errno)))")
        }
        defer { close(ends[1]) }
        let bytes = Array(text.utf8)
        let written = fcntl(ends[1], F_SETFL, O_NONBLOCK) == 0 ? write(ends[1], bytes, bytes.count) : -1
        guard written == bytes.count else {
            close(ends[0])
            throw CommandFailure("cannot hand \(bytes.count) bytes of settings to the mount process (too long?)")
        }
        return ends[0]
    }

    /// In the child: everything the parent put in the private pipe at `descriptor`, which is closed.
    static func readPrivateInput(from descriptor: Int32) throws -> String {
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(descriptor, &buffer, buffer.count)
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw CommandFailure("cannot read the mount settings: \(String(cString: strerror(errno)))") }
            if count == 0 { break }
            bytes += buffer[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Reads until end of file or the timeout.
    private static func readReport(from descriptor: Int32, timeout: Duration) -> String {
        var bytes: [UInt8] = []
        let deadline = ContinuousClock.now + timeout
        var buffer = [UInt8](repeating: 0, count: 64)
        while ContinuousClock.now < deadline {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, 200)
            if ready < 0, errno != EINTR { break }
            guard ready > 0 else { continue }
            let count = read(descriptor, &buffer, buffer.count)
            if count < 0, errno == EINTR { continue }
            if count <= 0 { break }
            bytes += buffer[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
