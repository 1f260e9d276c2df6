import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Debian's nginx as a child process on 127.0.0.1, serving one directory:
/// - `/NAME`              the file, with ranges, ETag and If-Range as nginx does them;
/// - `/slow/NAME`         the same file at `slowRate` bytes per second per request;
/// - `/norange/NAME`      the same file, ranges ignored (always 200 with the whole body);
/// - `/status/404/...`    404;  `/status/500/...`  500.
/// Every request is logged to an access log that `AccessLog` parses.
final class NginxServer {
    static let binary = "/usr/sbin/nginx"

    let docRoot: URL
    let prefix: URL
    let port: UInt16
    let accessLog: AccessLog
    private let child: BackgroundCommand
    private var stopped = false

    var baseURL: String { "http://127.0.0.1:\(port)" }
    var errorLogPath: String { prefix.appendingPathComponent("error.log").path }

    /// URL of a file in the doc root (name percent-encoded as a path segment).
    func url(_ name: String) -> String { "\(baseURL)/\(Self.encode(name))" }
    func slowURL(_ name: String) -> String { "\(baseURL)/slow/\(Self.encode(name))" }
    func noRangeURL(_ name: String) -> String { "\(baseURL)/norange/\(Self.encode(name))" }
    func statusURL(_ status: Int, _ rest: String = "x") -> String { "\(baseURL)/status/\(status)/\(rest)" }

    static func encode(_ name: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "?#;")
        return name.addingPercentEncoding(withAllowedCharacters: allowed) ?? name
    }

    /// Starts nginx and waits (at most `startTimeout` s) until its port answers.
    /// Throws a clear error when nginx is not installed or does not come up.
    convenience init(serving docRoot: URL, slowRate: String = "64k", startTimeout: Double = 15) throws {
        try self.init(docRoot: docRoot, startTimeout: startTimeout) { prefix, port in
            Self.config(prefix: prefix, docRoot: docRoot, port: port, slowRate: slowRate)
        }
    }

    /// Starts nginx with the configuration `config(prefix, port)` returns (for setups other
    /// than serving a directory, such as a caching proxy in front of another nginx).
    init(docRoot: URL, startTimeout: Double = 15, config: (URL, UInt16) -> String) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.binary) else {
            throw HarnessError("nginx is not installed (\(Self.binary) missing): run scripts/install-deps.sh")
        }
        self.docRoot = docRoot
        // Workers may run as another user: let them read the files.
        _ = chmod(docRoot.path, 0o755)
        var lastError = "nginx did not start"
        for _ in 0..<3 {
            let prefix = try Scratch.makeDir("nginx")
            let port = try FreePort.pick()
            try FileManager.default.createDirectory(at: prefix.appendingPathComponent("tmp"),
                                                    withIntermediateDirectories: true)
            let conf = prefix.appendingPathComponent("nginx.conf")
            try config(prefix, port).write(to: conf, atomically: true, encoding: .utf8)
            let child = try BackgroundCommand([Self.binary, "-c", conf.path, "-p", prefix.path + "/",
                                               "-e", prefix.appendingPathComponent("error.log").path])
            let up = Poll.until(seconds: startTimeout, every: 0.025) { !child.isRunning || FreePort.answers(port) }
                && FreePort.answers(port)
            if up {
                self.prefix = prefix
                self.port = port
                self.child = child
                self.accessLog = AccessLog(path: prefix.appendingPathComponent("access.log").path)
                return
            }
            let result = child.kill()
            let errorLog = (try? String(contentsOfFile: prefix.appendingPathComponent("error.log").path,
                                        encoding: .utf8)) ?? ""
            lastError = "nginx did not answer on 127.0.0.1:\(port) within \(startTimeout) s\n\(result)\nerror.log: \(errorLog)"
            Scratch.remove(prefix)
        }
        throw HarnessError(lastError)
    }

    /// The lines before the `http` block: in front, one worker, as root when the tests are
    /// (to read any test file), its pid file and error log inside its own prefix `p`.
    static func mainContext(_ p: String, connections: Int) -> String {
        let user = geteuid() == 0 ? "user root;" : ""
        return """
        daemon off;
        master_process on;
        worker_processes 1;
        \(user)
        pid \(p)/nginx.pid;
        error_log \(p)/error.log info;
        events { worker_connections \(connections); }
        """
    }

    /// Where nginx keeps its temporary files, inside its own prefix (the defaults are system
    /// directories a test may not write): one line of an `http` block.
    static func temporaryPaths(_ p: String) -> String {
        ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map { "\($0)_temp_path \(p)/tmp/\($0 == "client_body" ? "body" : $0);" }
            .joined(separator: " ")
    }

    static func config(prefix: URL, docRoot: URL, port: UInt16, slowRate: String) -> String {
        let p = prefix.path
        let root = docRoot.path
        return """
        \(NginxServer.mainContext(p, connections: 512))
        http {
            include /etc/nginx/mime.types;
            default_type application/octet-stream;
            log_format rangefs '\(AccessLog.format)';
            access_log \(p)/access.log rangefs;
            \(NginxServer.temporaryPaths(p))
            sendfile on;
            keepalive_requests 100000;
            keepalive_timeout 60s;
            server {
                listen 127.0.0.1:\(port);
                server_name localhost;
                root \(root);
                location / { }
                location /slow/ {
                    alias \(root)/;
                    limit_rate \(slowRate);
                    sendfile off;
                }
                location /norange/ {
                    alias \(root)/;
                    max_ranges 0;
                }
                location /status/404/ { return 404; }
                location /status/500/ { return 500; }
            }
        }

        """
    }

    /// Fast shutdown (SIGTERM), bounded; SIGKILL for master and workers after 5 s.
    func stop() {
        guard !stopped else { return }
        stopped = true
        if child.isRunning {
            ProcessInfo.terminate(pid: child.pid, graceSeconds: 5)
        }
        child.wait(timeout: 5)
    }

    deinit {
        stop()
        Scratch.remove(prefix)
    }
}

/// Picks free TCP ports on 127.0.0.1 and checks whether one answers.
enum FreePort {
    static func pick() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket() failed: errno \(errno)") }
        defer { close(fd) }
        var addr = loopback(port: 0)
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else { throw HarnessError("bind() failed: errno \(errno)") }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        return UInt16(bigEndian: addr.sin_port)
    }

    static func answers(_ port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = loopback(port: port)
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return rc == 0
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        return addr
    }
}
