import FaultServer
import Foundation
import RangeFSCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Helpers of the reliability tests (issue 4): mounts of a `FaultServer`, reads that may
/// fail, extended attributes, `rangefs status --json`, a loop-free tmpfs and the daemon's pid.

/// Reproducible random bytes (SplitMix64), so a failing run can be replayed.
enum RandomBytes {
    static func make(count: Int, seed: UInt64) -> [UInt8] {
        var generator = SeededRandom(seed: seed)
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { raw in
            let words = count / 8
            for index in 0..<words {
                raw.storeBytes(of: generator.next(), toByteOffset: index * 8, as: UInt64.self)
            }
            var last = generator.next()
            for index in (words * 8)..<count {
                raw[index] = UInt8(truncatingIfNeeded: last)
                last >>= 8
            }
        }
        return bytes
    }
}

extension Fixture {
    /// Mounts files published on `server` (each at `/NAME`, shown as `NAME` in the mount).
    func mount(server: FaultServer, names: [String], cacheDir: URL? = nil,
               options: [String] = Fixture.readsOnly) throws -> Mount {
        try mount(names.map { ManifestLine(path: $0, url: server.url($0).absoluteString) },
                  cacheDir: cacheDir, options: options)
    }
}

/// What a read through the mount gave: the bytes, and whether it ended with EIO.
struct ReadOutcome: CustomStringConvertible {
    let result: CommandResult

    var bytes: Data { result.stdoutData }
    var succeeded: Bool { result.succeeded }
    var failedWithEIO: Bool {
        !result.timedOut && result.status != 0 && result.stderr.contains("Input/output error")
    }

    var description: String {
        "\(result.argv.joined(separator: " ")): "
            + (result.timedOut ? "TIMED OUT" : "exit \(result.status)")
            + ", \(bytes.count) bytes in \(String(format: "%.2f", result.seconds)) s"
            + (result.stderr.isEmpty ? "" : ", stderr: \(result.stderr.prefix(300))")
    }
}

/// A reader that holds one open file description across a change on the server: it reads
/// the first 256 KiB, says so, and reads the rest once told to go on.
struct PausedReader {
    let process: BackgroundCommand
    private let readPart: String
    private let goOn: String

    /// Starts it on `path`; its flag files go in `flags`.
    init(_ path: String, flags: URL) throws {
        readPart = flags.appendingPathComponent("read-part").path
        goOn = flags.appendingPathComponent("go-on").path
        let script = """
            exec 3<"$0" || exit 9
            dd bs=65536 count=4 iflag=fullblock status=none <&3 || exit 8
            : > "$1"
            i=0; while [ ! -e "$2" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done
            exec cat <&3
            """
        process = try BackgroundCommand(["sh", "-c", script, path, readPart, goOn])
    }

    /// Waits (at most a minute) until the first 256 KiB are read; false if they never were.
    func waitForFirstPart() -> Bool {
        Poll.until(seconds: 60) { FileManager.default.fileExists(atPath: readPart) || !process.isRunning }
        return FileManager.default.fileExists(atPath: readPart)
    }

    /// Lets it read the rest and waits for it: all it read, and how it ended.
    func finish(timeout: Double = 90) -> ReadOutcome {
        _ = FileManager.default.createFile(atPath: goOn, contents: nil)
        return ReadOutcome(result: process.wait(timeout: timeout))
    }
}

enum Reading {
    /// `cat PATH`: the whole file, or what came before an error.
    static func whole(_ path: String, timeout: Double = 90) -> ReadOutcome {
        ReadOutcome(result: Command.run(["cat", path], timeout: timeout))
    }

    /// `dd` of `[offset, offset+length)`.
    static func range(_ path: String, offset: Int, length: Int, timeout: Double = 90) -> ReadOutcome {
        ReadOutcome(result: Check.ddRead(path, offset: offset, length: length, timeout: timeout))
    }

    /// True when `got` is the first `got.count` bytes of `original` (starting at `offset`).
    static func isPrefix(_ got: Data, of original: [UInt8], at offset: Int = 0) -> Bool {
        guard offset + got.count <= original.count else { return false }
        return got.elementsEqual(original[offset..<(offset + got.count)])
    }

    /// Index of the first byte where `got` differs from `original` at `offset`, for messages.
    static func firstDifference(_ got: Data, _ original: [UInt8], at offset: Int = 0) -> Int? {
        for (index, byte) in got.enumerated() {
            let position = offset + index
            if position >= original.count || original[position] != byte { return position }
        }
        return nil
    }
}

/// Extended attributes through the real syscalls (looked up with `dlsym`: Glibc's Swift
/// module does not export <sys/xattr.h>).
enum XAttr {
    private typealias GetFunction = @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeMutableRawPointer?, Int) -> Int
    private typealias ListFunction = @convention(c) (UnsafePointer<CChar>, UnsafeMutablePointer<CChar>?, Int) -> Int

    private static let getFunction: GetFunction? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "getxattr")
        .map { unsafeBitCast($0, to: GetFunction.self) }
    private static let listFunction: ListFunction? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "listxattr")
        .map { unsafeBitCast($0, to: ListFunction.self) }

    static func get(_ path: String, _ name: String) -> String? {
        guard let getFunction else { return nil }
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        let count = buffer.withUnsafeMutableBytes { getFunction(path, name, $0.baseAddress, $0.count) }
        guard count >= 0 else { return nil }
        return String(decoding: buffer.prefix(count), as: UTF8.self)
    }

    /// Every extended attribute of `path` with its value.
    static func all(_ path: String) -> [String: String] {
        guard let listFunction else { return [:] }
        var names = [CChar](repeating: 0, count: 64 * 1024)
        let count = names.withUnsafeMutableBufferPointer { listFunction(path, $0.baseAddress, $0.count) }
        guard count > 0 else { return [:] }
        var result: [String: String] = [:]
        let raw = names.prefix(count).map { UInt8(bitPattern: $0) }
        for name in raw.split(separator: 0).map({ String(decoding: $0, as: UTF8.self) }) {
            result[name] = get(path, name)
        }
        return result
    }
}

extension Mount {
    /// `rangefs status --json`, decoded; nil (and the output kept in `lastStatusOutput`) if it fails.
    func status() -> (status: MountStatus?, result: CommandResult) {
        let r = Command.run([binary, "status", "--json", mountpoint], timeout: 30)
        guard r.succeeded else { return (nil, r) }
        return (try? JSONDecoder().decode(MountStatus.self, from: r.stdoutData), r)
    }

    /// `rangefs status` as text.
    func statusText() -> CommandResult {
        Command.run([binary, "status", mountpoint], timeout: 30)
    }

    /// The daemon's pid: the root's `user.rangefs.pid`, else the process list.
    func daemonPid() -> Int32? {
        if let text = XAttr.get(mountpoint, "user.rangefs.pid"), let pid = Int32(text) { return pid }
        return daemonPids().first
    }

    /// Polls `condition` on the status until it holds or `timeout` passes.
    @discardableResult
    func waitForStatus(timeout: Double, _ condition: (MountStatus) -> Bool) -> MountStatus? {
        var last: MountStatus?
        Poll.until(seconds: timeout, every: 0.2) {
            last = status().status ?? last
            return last.map(condition) ?? false
        }
        return last
    }

    /// Log lines containing every one of `needles`.
    func logLines(containing needles: String...) -> [String] {
        log().split(separator: "\n").map(String.init).filter { line in needles.allSatisfy { line.contains($0) } }
    }
}

/// A tmpfs of a given size, mounted for one test and always unmounted (also from `deinit`).
final class SizedTmpfs {
    let path: String
    private var mounted = false

    init(sizeBytes: Int) throws {
        let dir = try Scratch.makeDir("tmpfs")
        path = dir.path
        let r = Command.run(["mount", "-t", "tmpfs", "-o", "size=\(sizeBytes),mode=0755", "tmpfs", path], timeout: 30)
        guard r.succeeded else { throw HarnessError("cannot mount a tmpfs (are we root?):\n\(r)") }
        mounted = true
    }

    /// Changes the size limit of the live tmpfs (keeps its files).
    func resize(to sizeBytes: Int) throws {
        let r = Command.run(["mount", "-o", "remount,size=\(sizeBytes)", path], timeout: 30)
        guard r.succeeded else { throw HarnessError("cannot resize the tmpfs:\n\(r)") }
    }

    /// Free bytes on the tmpfs.
    var freeBytes: Int {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return -1 }
        return Int(info.f_bavail) * Int(info.f_frsize)
    }

    func unmount() {
        guard mounted else { return }
        mounted = false
        if Command.run(["umount", path], timeout: 30).succeeded == false {
            _ = Command.run(["umount", "-l", path], timeout: 30)
        }
        try? FileManager.default.removeItem(atPath: path)
    }

    deinit { unmount() }
}

/// Hashes without a child process, for bytes the test holds in memory.
enum Digest {
    /// sha256 of in-memory bytes via `sha256sum` on a temporary file.
    static func sha256(_ bytes: [UInt8]) -> String? {
        guard let dir = try? Scratch.commandOutputDir() else { return nil }
        let file = dir.appendingPathComponent("digest-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        guard (try? Data(bytes).write(to: file)) != nil else { return nil }
        return SHA256.of(file.path).hash
    }
}

extension FaultServer {
    /// GET requests for `path` in arrival order.
    func gets(_ path: String) -> [RecordedRequest] {
        requests(for: path).filter { $0.method == "GET" }
    }
}

extension RecordedRequest {
    /// The single range this request asked for (`bytes=a-b`), resolved against `size`.
    func requestedRange(size: Int) -> Range<Int>? {
        guard let range else { return nil }
        let ranges = ByteRanges.parse(range, fileSize: size)
        return ranges.count == 1 ? ranges[0] : nil
    }
}

/// Passwords and other secrets that must never be shown.
enum Secrets {
    static func leaks(_ secret: String, in texts: [String: String]) -> [String] {
        texts.filter { $0.value.contains(secret) }.map(\.key).sorted()
    }
}

/// A certificate for 127.0.0.1 signed by a CA made for it alone (not trusted by the system),
/// written into a scratch directory: what a TLS test server presents and its client trusts.
struct TestCertificate {
    let caFile: String
    let certificateFile: String
    let keyFile: String

    init(in directory: URL) throws {
        func run(_ argv: [String]) throws {
            let r = Command.run(argv, timeout: 60)
            guard r.succeeded else { throw HarnessError("\(argv.first ?? "") failed:\n\(r)") }
        }
        let p = directory.path
        try run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(p)/ca.key", "-out", "\(p)/ca.pem",
                 "-days", "2", "-subj", "/CN=RangeFS test CA", "-addext", "basicConstraints=critical,CA:TRUE",
                 "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        try run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(p)/server.key", "-out", "\(p)/server.csr",
                 "-subj", "/CN=127.0.0.1"])
        try "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
            .write(toFile: "\(p)/ext.cnf", atomically: true, encoding: .utf8)
        try run(["openssl", "x509", "-req", "-in", "\(p)/server.csr", "-CA", "\(p)/ca.pem", "-CAkey", "\(p)/ca.key",
                 "-CAcreateserial", "-out", "\(p)/server.pem", "-days", "2", "-extfile", "\(p)/ext.cnf"])
        caFile = "\(p)/ca.pem"
        certificateFile = "\(p)/server.pem"
        keyFile = "\(p)/server.key"
    }
}

/// nginx serving a directory over https (TLS 1.2 and 1.3, HTTP/2 offered) on 127.0.0.1, with a
/// certificate signed by a CA made for this server alone (not trusted by the system): for the
/// TLS tests. Its access log has `AccessLog`'s fields and then the protocol of each request.
final class TLSNginx {
    let port: UInt16
    let caFile: String
    let accessLog: AccessLog
    private let prefix: URL
    private let child: BackgroundCommand

    var baseURL: String { "https://127.0.0.1:\(port)" }

    init(serving docRoot: URL) throws {
        let prefix = try Scratch.makeDir("tls-nginx")
        self.prefix = prefix
        let p = prefix.path
        let certificate = try TestCertificate(in: prefix)
        caFile = certificate.caFile
        accessLog = AccessLog(path: "\(p)/access.log")
        try FileManager.default.createDirectory(atPath: "\(p)/tmp", withIntermediateDirectories: true)
        _ = chmod(docRoot.path, 0o755)
        var lastError = "nginx (https) did not start"
        for _ in 0..<3 {
            let port = try FreePort.pick()
            let conf = """
                \(NginxServer.mainContext(p, connections: 64))
                http {
                    default_type application/octet-stream;
                    log_format rangefs '\(AccessLog.format)\t$server_protocol';
                    access_log \(p)/access.log rangefs;
                    \(NginxServer.temporaryPaths(p))
                    server {
                        listen 127.0.0.1:\(port) ssl http2;
                        ssl_certificate \(certificate.certificateFile);
                        ssl_certificate_key \(certificate.keyFile);
                        ssl_protocols TLSv1.2 TLSv1.3;
                        root \(docRoot.path);
                        location / { }
                    }
                }

                """
            try conf.write(toFile: "\(p)/nginx.conf", atomically: true, encoding: .utf8)
            let child = try BackgroundCommand([NginxServer.binary, "-c", "\(p)/nginx.conf", "-p", p + "/", "-e", "\(p)/error.log"])
            Poll.until(seconds: 15, every: 0.025) { !child.isRunning || FreePort.answers(port) }
            if FreePort.answers(port) {
                self.port = port
                self.child = child
                return
            }
            lastError = "\(child.kill())\n\((try? String(contentsOfFile: "\(p)/error.log", encoding: .utf8)) ?? "")"
        }
        throw HarnessError(lastError)
    }

    /// The protocol of each request logged (`HTTP/2.0`, `HTTP/1.1`), in the log's order.
    func protocols() -> [String] {
        accessLog.waitUntilQuiet()
        let text = (try? String(contentsOfFile: accessLog.path, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { $0.split(separator: "\t").last.map(String.init) }
    }

    func stop() {
        if child.isRunning { ProcessInfo.terminate(pid: child.pid, graceSeconds: 5) }
        child.wait(timeout: 5)
    }

    deinit {
        stop()
        Scratch.remove(prefix)
    }
}
