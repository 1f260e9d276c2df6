import FaultServer
import Foundation
import RangeFSCore
import Testing

/// Bad manifests of every kind: `rangefs mount` names the file and line, mounts nothing,
/// and never prints a password. URLs with credentials: the password appears nowhere.
extension RangeFSIntegrationTests {
    @Test("bad input: every kind of manifest error is rejected with file:line and nothing is mounted",
          arguments: BadInput.cases)
    func badInputRejected(_ bad: BadInput) throws {
        var bytes = Data()
        for line in bad.lines {
            bytes += line.replacing(Data("BASE".utf8), with: Data(fx.nginx.baseURL.utf8))
            bytes += Data("\n".utf8)
        }
        // Written as bytes: some cases are not valid UTF-8 on purpose.
        let mount = try fx.prepare(manifest: "", name: bad.fileName)
        try bytes.write(to: URL(fileURLWithPath: mount.manifestPath))
        let r = mount.tryMount(timeout: 60)
        #expect(!r.timedOut && r.status != 0, "\(bad.name): rangefs mount should fail: \(r)")
        #expect(r.stderr.contains("\(bad.fileName):\(bad.line):"), "\(bad.name): stderr should name \(bad.fileName):\(bad.line): \(r)")
        if let word = bad.mentions {
            #expect(r.stderr.lowercased().contains(word.lowercased()), "\(bad.name): stderr should mention \(word): \(r)")
        }
        #expect(!r.stderr.contains(BadInput.secret) && !r.stdout.contains(BadInput.secret),
                "\(bad.name): the password was printed: \(r)")
        #expect(r.stderr.split(separator: "\n").count <= 3, "\(bad.name): expected a short message: \(r)")
        #expect(!mount.isMounted, "\(bad.name): something was mounted")
        #expect(mount.daemonPids().isEmpty, "\(bad.name): a daemon is running")
        print("\(bad.name): \(r.stderr.trimmingCharacters(in: .whitespacesAndNewlines))")
    }

    @Test("bad input: a URL with user:password mounts, but the password appears nowhere — not in errors for 401/404, the log, status or xattrs")
    func credentialsNeverShown() throws {
        let server = try FaultServer()
        let data = RandomBytes.make(count: 1 << 20, seed: 0xA17)
        server.publish("private.bin", bytes: data)
        server.publish("denied.bin", bytes: data)
        let secret = BadInput.secret
        func authURL(_ name: String) -> String {
            "http://alice:\(secret)@127.0.0.1:\(server.port)/\(name)"
        }
        let mount = try fx.mount([
            ManifestLine(path: "private.bin", url: authURL("private.bin")),
            ManifestLine(path: "missing.bin", url: authURL("missing.bin")),
            ManifestLine(path: "denied.bin", url: authURL("denied.bin")),
        ], options: Fixture.readsOnly)

        var shown: [String: String] = [:]
        for result in mount.mountResults { shown["mount output"] = result.stdout + result.stderr }
        let good = Reading.whole(mount.path("private.bin"))
        #expect(good.succeeded && good.bytes == Data(data), "a URL with credentials should work: \(good)")
        let auth = server.gets("private.bin").first?.header("Authorization")
        #expect(auth?.hasPrefix("Basic ") == true, "the credentials were not sent as Basic auth: \(String(describing: auth))")

        let missing = Reading.whole(mount.path("missing.bin"))
        #expect(missing.failedWithEIO, "404 with credentials: \(missing)")
        server.inject(.status(401), times: 10_000, for: "denied.bin", method: "GET")
        let denied = Reading.range(mount.path("denied.bin"), offset: 0, length: 65536)
        #expect(denied.failedWithEIO, "401 with credentials: \(denied)")
        shown["cat stderr (404)"] = missing.result.stderr
        shown["dd stderr (401)"] = denied.result.stderr

        shown["ls -la"] = Command.run(["ls", "-la", mount.mountpoint], timeout: 30).stdout
        shown["status"] = mount.statusText().stdout
        shown["status --json"] = mount.status().result.stdout
        for name in ["private.bin", "missing.bin", "denied.bin"] {
            let attributes = XAttr.all(mount.path(name))
            shown["xattrs of \(name)"] = attributes.map { "\($0.key)=\($0.value)" }.joined(separator: "\n")
            if let url = attributes["user.rangefs.url"] {
                #expect(!url.contains(secret) && url.contains("127.0.0.1"), "user.rangefs.url of \(name): \(url)")
            } else if name == "private.bin" {
                Issue.record("no user.rangefs.url on \(name): \(attributes)")
            }
        }
        Check.succeeded(mount.unmount(), "unmount")
        shown["log"] = mount.log()
        #expect(shown["log"]?.contains("401") == true || shown["log"]?.contains("404") == true, "the log gives no reason\(Check.daemonLog(mount))")

        let leaks = Secrets.leaks(secret, in: shown)
        #expect(leaks.isEmpty, "the password appears in: \(leaks.joined(separator: ", "))\n\(leaks.map { "\($0): \(shown[$0]!.prefix(2000))" }.joined(separator: "\n"))")
        // The data files and database are ours alone, but even there the URL is stored as given;
        // what matters is what is shown. Print where the redacted URL appears, for the report.
        print("credentials: redacted URL as shown: \(shown["status"]?.split(separator: "\n").first ?? "")")
    }
}

/// A manifest that must be rejected: its lines as bytes ("BASE" becomes the nginx URL), the
/// line the message must name, and a word it must contain.
struct BadInput: Sendable, CustomTestStringConvertible {
    static let secret = "hunter2-s3cret"

    let name: String
    let fileName: String
    let lines: [Data]
    let line: Int
    let mentions: String?

    var testDescription: String { name }

    init(_ name: String, file: String = "bad.txt", _ lines: [String], line: Int, mentions: String? = nil) {
        self.name = name
        self.fileName = file
        self.lines = lines.map { Data($0.utf8) }
        self.line = line
        self.mentions = mentions
    }

    init(_ name: String, file: String = "bad.txt", rawLines: [Data], line: Int, mentions: String? = nil) {
        self.name = name
        self.fileName = file
        self.lines = rawLines
        self.line = line
        self.mentions = mentions
    }

    static let cases: [BadInput] = [
        BadInput("control character in a path", ["ok.bin\tBASE/one.bin", "bad\u{01}name.bin\tBASE/one.bin"], line: 2, mentions: "control"),
        BadInput("NUL in a path", ["bad\u{0}name.bin\tBASE/one.bin"], line: 1, mentions: "control"),
        BadInput("escape sequence in a path", ["# x", "\u{1B}[31mred.bin\tBASE/one.bin"], line: 2, mentions: "control"),
        BadInput("DEL in a path", ["del\u{7F}.bin\tBASE/one.bin"], line: 1, mentions: "control"),
        BadInput("control character in a URL", ["BASE/one\u{07}.bin"], line: 1, mentions: "control"),
        BadInput("newline-like CR inside a line", ["a.bin\tBASE/one.bin\rb.bin\tBASE/one.bin"], line: 1),
        BadInput(".. in the middle of a path", ["a/../../etc/passwd\tBASE/one.bin"], line: 1, mentions: ".."),
        BadInput("a path that is only ..", ["..\tBASE/one.bin"], line: 1, mentions: ".."),
        BadInput("a . component", ["a/./b.bin\tBASE/one.bin"], line: 1),
        BadInput("an absolute path", ["/etc/shadow\tBASE/one.bin"], line: 1, mentions: "absolute"),
        BadInput("an empty component", ["a//b.bin\tBASE/one.bin"], line: 1, mentions: "empty"),
        BadInput("a trailing slash", ["dir/\tBASE/one.bin"], line: 1),
        BadInput("a 300-byte name", [String(repeating: "n", count: 300) + "\tBASE/one.bin"], line: 1, mentions: "300"),
        BadInput("two TABs", ["a.bin\textra\tBASE/one.bin"], line: 1, mentions: "TAB"),
        BadInput("duplicate path", ["x.bin\tBASE/one.bin", "", "x.bin\tBASE/tail.bin"], line: 3),
        BadInput("duplicate name from URLs", ["BASE/one.bin", "BASE/one.bin"], line: 2),
        BadInput("a file and a directory of the same name", ["d\tBASE/one.bin", "d/x.bin\tBASE/one.bin"], line: 2),
        BadInput("file: scheme", ["BASE/one.bin", "file:///etc/passwd"], line: 2, mentions: "file"),
        BadInput("ftp with credentials", ["ftp://bob:\(secret)@127.0.0.1/x.bin"], line: 1, mentions: "ftp"),
        BadInput("gopher scheme", ["x.bin\tgopher://127.0.0.1/x"], line: 1, mentions: "gopher"),
        BadInput("no scheme", ["127.0.0.1/one.bin"], line: 1),
        BadInput("no host", ["http:///one.bin"], line: 1),
        BadInput("no host, with credentials", ["http://bob:\(secret)@/one.bin"], line: 1),
        BadInput("a space in a URL with credentials", ["http://bob:\(secret)@127.0.0.1/a b.bin"], line: 1),
        BadInput("a URL that is only a scheme", ["https://"], line: 1),
        BadInput("garbage", ["%%%%"], line: 1),
        BadInput("invalid UTF-8", rawLines: [Data("BASE/one.bin".utf8), Data([0x61, 0xFF, 0xFE, 0x09]) + Data("BASE/one.bin".utf8)],
                 line: 2, mentions: "UTF-8"),
        BadInput("JSON: absurd size", file: "bad.json", [
            "{", "  \"entries\": [", "    {\"url\": \"BASE/one.bin\", \"size\": 1},",
            "    {\"url\": \"BASE/tail.bin\", \"size\": 99999999999999999999999999}", "  ]", "}",
        ], line: 4, mentions: "size"),
        BadInput("JSON: negative size", file: "bad.json", [
            "{\"entries\": [", "{\"url\": \"BASE/one.bin\",", "\"size\": -5}", "]}",
        ], line: 3, mentions: "size"),
        BadInput("JSON: size past 2^62", file: "bad.json", [
            "[", "{\"url\": \"BASE/one.bin\", \"size\": 9223372036854775807}", "]",
        ], line: 2, mentions: "size"),
        BadInput("JSON: NUL in a path", file: "bad.json", [
            "[", "{\"url\": \"BASE/one.bin\", \"path\": \"a\\u0000b\"}", "]",
        ], line: 2, mentions: "control"),
        BadInput("JSON: .. in a path", file: "bad.json", [
            "[", "  {\"url\": \"BASE/one.bin\", \"path\": \"../x\"}", "]",
        ], line: 2, mentions: ".."),
        BadInput("JSON: syntax error", file: "bad.json", ["[", "  {\"url\": \"BASE/one.bin\",,}", "]"], line: 2),
        BadInput("YAML: .. in a path", file: "bad.yaml", ["- url: BASE/one.bin", "  path: ok.bin", "- url: BASE/tail.bin", "  path: a/../../b"],
                 line: 4, mentions: ".."),
        BadInput("JSON: the same mirror twice", file: "bad.json", [
            "[", "{\"urls\": [\"BASE/one.bin\",", "  \"BASE/one.bin\"]}", "]",
        ], line: 3, mentions: "twice"),
        BadInput("Metalink: .. in a file name", file: "bad.meta4", [
            "<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\">", "<file name=\"ok.bin\"><url>BASE/one.bin</url></file>",
            "<file name=\"../escape.bin\"><url>BASE/one.bin</url></file>", "</metalink>",
        ], line: 3, mentions: ".."),
        BadInput("Metalink: a file with only ftp and torrent sources", file: "bad.meta4", [
            "<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\">", "<file name=\"a.bin\">",
            "<url>ftp://bob:\(secret)@127.0.0.1/a.bin</url><metaurl mediatype=\"torrent\">BASE/a.torrent</metaurl>", "</file></metalink>",
        ], line: 2, mentions: "no http or https"),
        BadInput("Metalink: piece hashes that do not cover the file", file: "bad.metalink", [
            "<metalink version=\"3.0\" xmlns=\"http://www.metalinker.org/\"><files><file name=\"one.bin\"><size>1000000</size>",
            "<verification><pieces length=\"262144\" type=\"sha256\"><hash>\(String(repeating: "0", count: 64))</hash></pieces></verification>",
            "<resources><url type=\"http\">BASE/one.bin</url></resources></file></files></metalink>",
        ], line: 2, mentions: "need 4"),
    ]
}
