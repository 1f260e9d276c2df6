import ArgumentParser
import Foundation

func absolutePath(_ path: String) -> String {
    let url = URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
    var standardized = url.standardizedFileURL.path
    while standardized.count > 1, standardized.hasSuffix("/") { standardized.removeLast() }
    return standardized
}

/// A failure to report as `Error: …` with a non-zero exit status.
struct CommandFailure: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) {
        self.description = description
    }
}

/// Writes a line to standard error (file descriptor 2; the `stderr` global is not concurrency-safe).
func writeError(_ text: String) {
    let line = text.hasSuffix("\n") ? text : text + "\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
}

struct ToolResult {
    var status: Int32
    var output: String
}

/// Runs a helper program, bounded in time; output is stdout and stderr together.
func runTool(_ path: String, _ arguments: [String], timeout: Duration) throws -> ToolResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let deadline = ContinuousClock.now + timeout
    while process.isRunning, ContinuousClock.now < deadline {
        usleep(10_000)
    }
    if process.isRunning {
        process.terminate()
        process.waitUntilExit()
        return ToolResult(status: -1, output: "\(path) timed out")
    }
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    return ToolResult(status: process.terminationStatus, output: String(decoding: data, as: UTF8.self))
}

/// The kernel's mount table, from /proc/self/mountinfo.
struct MountTable {
    struct Entry {
        var mountpoint: String
        var type: String
    }

    static func current() -> [Entry] {
        guard let text = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            guard let separator = fields.firstIndex(of: "-"), separator + 1 < fields.count, fields.count > 4 else { return nil }
            return Entry(mountpoint: unescape(String(fields[4])), type: String(fields[separator + 1]))
        }
    }

    /// mountinfo writes space, tab, newline and backslash as octal escapes (`\040`).
    private static func unescape(_ field: String) -> String {
        var bytes: [UInt8] = []
        var utf8 = Array(field.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "\\"), utf8.count >= 3,
               let value = UInt8(String(decoding: utf8.prefix(3), as: UTF8.self), radix: 8) {
                bytes.append(value)
                utf8 = utf8.dropFirst(3)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
