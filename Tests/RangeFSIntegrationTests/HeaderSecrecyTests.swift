import FaultServer
import Foundation
import Testing

/// Private servers: headers given with --header and per manifest entry reach the server and
/// nothing else.
extension RangeFSIntegrationTests {
    @Test("--header 'Authorization: Bearer …' and a per-entry header reach the server, yet neither secret appears in the log (at trace level), status (text, --json), any xattr or a command's output, also when the server refuses")
    func headerSecretsNeverShown() throws {
        let server = try FaultServer()
        defer { _ = server.stop() }
        let data = RandomBytes.make(count: 1 << 20, seed: 0xBEA7)
        for name in ["private.bin", "keyed.bin", "denied.bin"] { server.publish(name, bytes: data) }
        let bearer = "bearer-7c1f-s3cret"
        let apiKey = "entry-key-93d2-s3cret"
        let manifest = """
        {
          "entries": [
            {"path": "private.bin", "url": "\(server.url("private.bin").absoluteString)"},
            {"path": "keyed.bin", "url": "\(server.url("keyed.bin").absoluteString)", "headers": {"X-Api-Key": "\(apiKey)"}},
            {"path": "denied.bin", "url": "\(server.url("denied.bin").absoluteString)", "headers": {"X-Api-Key": "\(apiKey)"}}
          ]
        }
        """
        let mount = try fx.prepare(manifest: manifest, name: "private.json",
                                   options: ["--header", "Authorization: Bearer \(bearer)", "--log-level", "trace"] + Fixture.readsOnly)
        try mount.mount()

        var shown: [String: String] = [:]
        for (index, result) in mount.mountResults.enumerated() { shown["mount output \(index)"] = result.stdout + result.stderr }
        for name in ["private.bin", "keyed.bin"] {
            let read = Reading.whole(mount.path(name))
            #expect(read.succeeded && read.bytes == Data(data), "\(name): \(read)")
            shown["cat \(name)"] = read.result.stderr
        }
        #expect(server.gets("private.bin").first?.header("Authorization") == "Bearer \(bearer)", "the global header was not sent")
        let keyed = server.gets("keyed.bin").first
        #expect(keyed?.header("X-Api-Key") == apiKey && keyed?.header("Authorization") == "Bearer \(bearer)",
                "keyed.bin should carry both headers")

        server.inject(.status(401), times: 10_000, for: "denied.bin", method: "GET")
        let denied = Reading.range(mount.path("denied.bin"), offset: 0, length: 65536)
        #expect(denied.failedWithEIO, "a refused read: \(denied)")
        shown["dd denied.bin"] = denied.result.stderr

        shown["status"] = mount.statusText().stdout
        shown["status --json"] = mount.status().result.stdout
        let verify = mount.rangefs("verify", timeout: 60)
        shown["verify"] = verify.stdout + verify.stderr
        for name in ["", "private.bin", "keyed.bin", "denied.bin"] {
            shown["xattrs of /\(name)"] = XAttr.all(mount.path(name)).map { "\($0.key)=\($0.value)" }.joined(separator: "\n")
        }
        shown["ls -la"] = Command.run(["ls", "-laR", mount.mountpoint], timeout: 30).stdout
        Check.succeeded(mount.unmount(), "unmount")
        shown["log"] = mount.log()
        #expect(shown["log"]?.contains("401") == true, "the log gives no reason for the refusal\(Check.daemonLog(mount))")

        for secret in [bearer, apiKey] {
            let leaks = Secrets.leaks(secret, in: shown)
            #expect(leaks.isEmpty, "\(secret) appears in: \(leaks.joined(separator: ", "))\n\(leaks.map { "\($0): \(shown[$0]!.prefix(2000))" }.joined(separator: "\n"))")
        }
    }
}
