import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A web server that lists directories, from Debian's packages or Python's standard library,
/// started as a child process on 127.0.0.1 with its own configuration in a scratch
/// directory, serving one tree. Each serves the tree's listings under these paths:
/// - nginx: `/html/` (autoindex), `/human/` (`autoindex_exact_size off`), `/json/`, `/xml/`;
/// - Apache 2: `/plain/` (no FancyIndexing), `/fancy/`, `/table/` (HTMLTable), `/tracked/`
///   (FancyIndexing with TrackModified: the only listing here sent with a validator), `/sized/`
///   (FancyIndexing, files' ETags made of their size alone, so a test can move a file's mtime
///   without changing its ETag); every request is logged in `accessLog`;
/// - lighttpd (`mod_dirlisting`) and `python3 -m http.server`: `/`.
/// `stop()` (also `deinit`) always stops it.
final class ListingServer {
    enum Kind: String, CaseIterable, Sendable {
        case nginx, apache, lighttpd, python
    }

    let kind: Kind
    let port: UInt16
    private let prefix: URL
    private var nginx: NginxServer?
    private var child: BackgroundCommand?

    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Apache's log of the requests it answered, one a line: method, path, status, body bytes
    /// sent, then the quoted `Range` and `If-Range` headers (`"-"` when absent).
    var accessLog: URL? { kind == .apache ? prefix.appendingPathComponent("access.log") : nil }

    init(_ kind: Kind, serving tree: URL, startTimeout: Double = 15) throws {
        self.kind = kind
        if kind == .nginx {
            let nginx = try NginxServer(docRoot: tree, startTimeout: startTimeout) { prefix, port in
                Self.nginxConfig(prefix: prefix, tree: tree, port: port)
            }
            self.nginx = nginx
            port = nginx.port
            prefix = nginx.prefix
            return
        }
        let binary = Self.binary(kind)
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw HarnessError("\(kind.rawValue) is not installed (\(binary) missing): run scripts/install-deps.sh")
        }
        var lastError = "\(kind.rawValue) did not start"
        for _ in 0..<3 {
            let prefix = try Scratch.makeDir(kind.rawValue)
            let port = try FreePort.pick()
            let argv: [String]
            switch kind {
            case .apache:
                let conf = prefix.appendingPathComponent("httpd.conf")
                try Self.apacheConfig(prefix: prefix, tree: tree, port: port).write(to: conf, atomically: true, encoding: .utf8)
                argv = [binary, "-f", conf.path, "-DFOREGROUND"]
            case .lighttpd:
                let conf = prefix.appendingPathComponent("lighttpd.conf")
                try Self.lighttpdConfig(prefix: prefix, tree: tree, port: port).write(to: conf, atomically: true, encoding: .utf8)
                argv = [binary, "-D", "-f", conf.path]
            case .python:
                argv = [binary, "-m", "http.server", "--bind", "127.0.0.1", "--directory", tree.path, String(port)]
            case .nginx:
                preconditionFailure("started above")
            }
            let child = try BackgroundCommand(argv)
            if Poll.until(seconds: startTimeout, every: 0.025, { !child.isRunning || FreePort.answers(port) }), child.isRunning {
                self.prefix = prefix
                self.port = port
                self.child = child
                return
            }
            let result = child.kill()
            let errorLog = (try? String(contentsOfFile: prefix.appendingPathComponent("error.log").path, encoding: .utf8)) ?? ""
            lastError = "\(kind.rawValue) did not answer on 127.0.0.1:\(port) within \(startTimeout) s\n\(result)\nerror.log: \(errorLog)"
            Scratch.remove(prefix)
        }
        throw HarnessError(lastError)
    }

    func stop() {
        nginx?.stop()
        child?.kill()
    }

    deinit {
        stop()
        if nginx == nil { Scratch.remove(prefix) }
    }

    private static func binary(_ kind: Kind) -> String {
        switch kind {
        case .nginx: NginxServer.binary
        case .apache: "/usr/sbin/apache2"
        case .lighttpd: "/usr/sbin/lighttpd"
        case .python: "/usr/bin/python3"
        }
    }

    /// The user and password of nginx's `/private/` listing (HTTP Basic).
    static let privateCredentials = (user: "listener", password: "s3cret-listing")

    private static func nginxConfig(prefix: URL, tree: URL, port: UInt16) -> String {
        let p = prefix.path
        // nginx reads `{PLAIN}` passwords as they are: no hashing tool needed for a test.
        try? Data("\(privateCredentials.user):{PLAIN}\(privateCredentials.password)\n".utf8)
            .write(to: prefix.appendingPathComponent("htpasswd"))
        let location = { (path: String, options: String) in
            "location /\(path)/ { alias \(tree.path)/; autoindex on; \(options) }"
        }
        return """
        \(NginxServer.mainContext(p, connections: 64))
        http {
            include /etc/nginx/mime.types;
            access_log off;
            \(NginxServer.temporaryPaths(p))
            server {
                listen 127.0.0.1:\(port);
                \(location("html", ""))
                \(location("human", "autoindex_exact_size off;"))
                \(location("json", "autoindex_format json;"))
                \(location("xml", "autoindex_format xml;"))
                \(location("private", "auth_basic \"rangefs\"; auth_basic_user_file \(p)/htpasswd;"))
            }
        }

        """
    }

    /// An Apache 2 configuration that reads nothing of /etc/apache2: the server's own lines in
    /// `prefix` (pid, logs, `access.log` in `logFormat`), `modules` loaded by path, then `body`.
    static func apacheConfig(prefix: URL, port: UInt16, modules: [String], logFormat: String, body: String) -> String {
        let p = prefix.path
        let loads = modules.map { "LoadModule \($0)_module /usr/lib/apache2/modules/mod_\($0).so" }.joined(separator: "\n")
        // Apache refuses to serve as root; its children then run as nobody, who can read the tree.
        let user = geteuid() == 0 ? "User nobody\nGroup nogroup" : ""
        return """
        ServerRoot \(p)
        Listen 127.0.0.1:\(port)
        PidFile \(p)/httpd.pid
        DefaultRuntimeDir \(p)
        ErrorLog \(p)/error.log
        LogFormat "\(logFormat)" requests
        CustomLog \(p)/access.log requests
        \(loads)
        TypesConfig /etc/mime.types
        \(user)
        ServerName 127.0.0.1
        \(body)
        """
    }

    /// Only the modules a listing needs.
    private static func apacheConfig(prefix: URL, tree: URL, port: UInt16) -> String {
        apacheConfig(prefix: prefix, port: port, modules: ["mpm_event", "authz_core", "alias", "autoindex", "mime"],
                     logFormat: #"%m %U %>s %B \"%{Range}i\" \"%{If-Range}i\""#, body: """
        DocumentRoot \(tree.path)
        Alias /plain/ \(tree.path)/
        Alias /fancy/ \(tree.path)/
        Alias /table/ \(tree.path)/
        Alias /tracked/ \(tree.path)/
        Alias /sized/ \(tree.path)/
        <Directory \(tree.path)>
          Options +Indexes
          Require all granted
        </Directory>
        <Location /plain/>
          IndexOptions -FancyIndexing
        </Location>
        <Location /fancy/>
          IndexOptions FancyIndexing
        </Location>
        <Location /table/>
          IndexOptions FancyIndexing HTMLTable
        </Location>
        <Location /tracked/>
          IndexOptions FancyIndexing TrackModified
        </Location>
        <Location /sized/>
          IndexOptions FancyIndexing
          FileETag Size
        </Location>

        """)
    }

    private static func lighttpdConfig(prefix: URL, tree: URL, port: UInt16) -> String {
        """
        server.document-root = "\(tree.path)"
        server.bind = "127.0.0.1"
        server.port = \(port)
        server.modules = ( "mod_dirlisting" )
        server.errorlog = "\(prefix.path)/error.log"
        dir-listing.activate = "enable"
        dir-listing.encoding = "utf-8"
        mimetype.assign = ( ".txt" => "text/plain" )

        """
    }
}

/// The tree of awkward names listings are tested on: spaces, `#`, `?`, `%`, `&`, `[`, `:`,
/// quotes and `<`, a `_` prefix, unicode, a 250-byte name, a file and a directory differing only in
/// case, an empty directory, and 10,000 entries in one directory. The top level is the one
/// the pages in Tests/Fixtures/web-listings were captured from.
enum AwkwardTree {
    static let bigDirectory = "big"
    static let bigCount = 10_000

    static func make(in root: URL, big: Bool = true) throws {
        let files: [(String, String)] = [
            ("plain.txt", "hello"), ("with space.txt", "x"), ("hash#name.txt", "ab"), ("question?mark.txt", "abc"),
            ("percent%41.txt", "abcd"), ("amp&name.txt", "12345"), ("[bracket].txt", "123456"),
            ("_underscore.txt", "1234567"), ("ünïcödé-日本.txt", "uni"), ("empty-file.bin", ""), ("Episode 1: a colon.txt", "colon"),
            ("it's \"quoted\" <angle>.txt", "q"), (String(repeating: "L", count: 246) + ".txt", "long"), ("case", "c"),
            ("Case/inside.txt", "in"), ("sub dir/inner.txt", "inner"),
        ]
        let manager = FileManager.default
        for directory in ["Case", "empty", "sub dir"] {
            try manager.createDirectory(at: root.appendingPathComponent(directory), withIntermediateDirectories: true)
        }
        for (path, text) in files {
            try Data(text.utf8).write(to: root.appendingPathComponent(path))
        }
        try Data((0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }).write(to: root.appendingPathComponent("twenty-k.bin"))
        try Data((0..<1_500_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }).write(to: root.appendingPathComponent("one-and-half-m.bin"))
        // The date the fixture tests read back.
        try manager.setAttributes([.modificationDate: Date(timeIntervalSince1970: 1_767_323_045)],
                                  ofItemAtPath: root.appendingPathComponent("plain.txt").path)
        guard big else { return }
        let bigRoot = root.appendingPathComponent(bigDirectory)
        try manager.createDirectory(at: bigRoot, withIntermediateDirectories: true)
        for index in 0..<bigCount {
            let name = "track \(String(format: "%05d", index)).txt"
            try Data(String(index).utf8).write(to: bigRoot.appendingPathComponent(name))
        }
    }

    /// What a directory holds on disk: name, directory or not, size.
    static func entries(of directory: URL) throws -> [String: (isDirectory: Bool, size: UInt64)] {
        let manager = FileManager.default
        var result: [String: (isDirectory: Bool, size: UInt64)] = [:]
        for name in try manager.contentsOfDirectory(atPath: directory.path) {
            let attributes = try manager.attributesOfItem(atPath: directory.appendingPathComponent(name).path)
            let isDirectory = attributes[.type] as? FileAttributeType == .typeDirectory
            result[name] = (isDirectory, (attributes[.size] as? NSNumber)?.uint64Value ?? 0)
        }
        return result
    }
}
