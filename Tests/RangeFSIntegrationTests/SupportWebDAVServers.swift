import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A real WebDAV server serving one tree on 127.0.0.1, started as a child process with its own
/// configuration in a scratch directory:
/// - WsgiDAV (PyPI) at `/`, optionally over https (a `TestCertificate`) and optionally asking
///   for HTTP Basic credentials (`credentials`); it logs every request it answers (`requests()`);
/// - Apache 2 `mod_dav` + `mod_dav_fs` at `/dav/`, every request in its access log.
/// `stop()` (also `deinit`) always stops it.
final class WebDAVServer {
    enum Kind: String, CaseIterable, Sendable {
        case wsgidav, apache
    }

    /// The user and password a server started with `requiresCredentials` takes.
    static let credentials = (user: "dav-user", password: "s3cret-dav-password")

    let kind: Kind
    let port: UInt16
    /// The CA to trust, for a server started over https.
    let caFile: String?
    private let prefix: URL
    private let child: BackgroundCommand

    /// The collection mounted, as the tests name it: `dav://` or `davs://`.
    var address: String { "\(caFile == nil ? "dav" : "davs")://127.0.0.1:\(port)\(kind == .apache ? "/dav/" : "/")" }
    /// The same collection's http(s) URL.
    var httpURL: String { "\(caFile == nil ? "http" : "https")://127.0.0.1:\(port)\(kind == .apache ? "/dav/" : "/")" }

    init(_ kind: Kind, serving tree: URL, tls: Bool = false, requiresCredentials: Bool = false,
         startTimeout: Double = 20) throws {
        precondition(kind == .wsgidav || (!tls && !requiresCredentials), "only WsgiDAV is started with TLS or credentials")
        self.kind = kind
        // Apache's children run as nobody when started by root: the tree must be theirs to read.
        _ = chmod(tree.path, 0o755)
        var lastError = "\(kind.rawValue) did not start"
        for _ in 0..<3 {
            let prefix = try Scratch.makeDir("webdav-\(kind.rawValue)")
            let certificate = tls ? try TestCertificate(in: prefix) : nil
            let port = try FreePort.pick()
            let argv: [String]
            switch kind {
            case .wsgidav:
                let conf = prefix.appendingPathComponent("wsgidav.yaml")
                try Self.wsgidavConfig(tree: tree, port: port, certificate: certificate, requiresCredentials: requiresCredentials)
                    .write(to: conf, atomically: true, encoding: .utf8)
                // Unbuffered: its log is read while it runs.
                argv = ["env", "PYTHONUNBUFFERED=1", "python3", "-m", "wsgidav.server.server_cli", "-c", conf.path]
            case .apache:
                let lockDirectory = prefix.appendingPathComponent("locks")
                try FileManager.default.createDirectory(at: lockDirectory, withIntermediateDirectories: true)
                _ = chmod(lockDirectory.path, 0o777)
                let conf = prefix.appendingPathComponent("httpd.conf")
                try Self.apacheConfig(prefix: prefix, tree: tree, port: port).write(to: conf, atomically: true, encoding: .utf8)
                argv = ["/usr/sbin/apache2", "-f", conf.path, "-DFOREGROUND"]
            }
            let child = try BackgroundCommand(argv)
            if Poll.until(seconds: startTimeout, every: 0.05, { !child.isRunning || FreePort.answers(port) }), child.isRunning {
                self.prefix = prefix
                self.port = port
                self.child = child
                caFile = certificate?.caFile
                return
            }
            let result = child.kill()
            let errorLog = (try? String(contentsOfFile: prefix.appendingPathComponent("error.log").path, encoding: .utf8)) ?? ""
            lastError = "\(kind.rawValue) did not answer on 127.0.0.1:\(port) within \(startTimeout) s\n\(result)\n\(errorLog)"
            Scratch.remove(prefix)
        }
        throw HarnessError(lastError)
    }

    /// The method and path of each request the server answered, in order (`GET /a%20b.txt`).
    /// WsgiDAV writes its log as it answers; Apache its access log.
    func requests() -> [String] {
        switch kind {
        case .apache:
            let text = (try? String(contentsOfFile: prefix.appendingPathComponent("access.log").path, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").map(String.init)
        case .wsgidav:
            // `... - [date] "GET /sub dir/inner.txt" depth=0, ...`
            return child.outputSoFar.split(separator: "\n").compactMap { line in
                guard let open = line.range(of: "] \""), let close = line[open.upperBound...].firstIndex(of: "\"") else { return nil }
                return String(line[open.upperBound..<close])
            }
        }
    }

    func stop() {
        if child.isRunning { ProcessInfo.terminate(pid: child.pid, graceSeconds: 5) }
        child.wait(timeout: 5)
    }

    deinit {
        stop()
        Scratch.remove(prefix)
    }

    private static func wsgidavConfig(tree: URL, port: UInt16, certificate: TestCertificate?, requiresCredentials: Bool) -> String {
        let users = requiresCredentials
            ? "    \"*\":\n      \"\(credentials.user)\":\n        password: \"\(credentials.password)\"\n"
            : "    \"*\": true\n"
        let tls = certificate.map { "ssl_certificate: \($0.certificateFile)\nssl_private_key: \($0.keyFile)\n" } ?? ""
        // verbose 3 logs one line per request answered, on stdout.
        return """
        host: 127.0.0.1
        port: \(port)
        verbose: 3
        provider_mapping:
          "/": "\(tree.path)"
        http_authenticator:
          accept_basic: true
          accept_digest: false
          default_to_digest: false
        simple_dc:
          user_mapping:
        \(users)\(tls)
        """
    }

    /// Only the modules WebDAV needs.
    private static func apacheConfig(prefix: URL, tree: URL, port: UInt16) -> String {
        ListingServer.apacheConfig(prefix: prefix, port: port, modules: ["mpm_event", "authz_core", "alias", "mime", "dav", "dav_fs"],
                                   logFormat: "%m %U %>s", body: """
        DavLockDB \(prefix.path)/locks/davlock
        DocumentRoot \(tree.path)
        Alias /dav/ \(tree.path)/
        <Directory \(tree.path)>
          Require all granted
        </Directory>
        <Location /dav/>
          Dav On
        </Location>

        """)
    }
}
