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

/// Secrets in URLs (a password, a query token): sent to the server, shown and stored nowhere.
extension RangeFSIntegrationTests {
    @Test("A URL's query token and password never appear in the log (trace), status (text, --json), the xattrs or any file of the cache; a remount with the same manifest finds its cached file")
    func urlSecretsNeverShownNorStored() throws {
        let server = try FaultServer()
        defer { _ = server.stop() }
        let data = RandomBytes.make(count: 1 << 20, seed: 0x0A4)
        server.publish("tok.bin", bytes: data)
        let token = "tok-9b2e-s3cret"
        let password = "pw-41f0-s3cret"
        let url = "http://reader:\(password)@127.0.0.1:\(server.port)/tok.bin?token=\(token)&part=1"
        let cache = try fx.makeCacheDir()
        let first = try fx.mount([ManifestLine(path: "tok.bin", url: url)], cacheDir: cache,
                                 options: ["--log-level", "trace"] + Fixture.readsOnly)

        let read = Reading.whole(first.path("tok.bin"))
        #expect(read.succeeded && read.bytes == Data(data), "tok.bin: \(read)")
        #expect(server.gets("tok.bin").first?.target.contains("token=\(token)") == true, "the token did not reach the server")
        var shown: [String: String] = ["cat": read.result.stderr]
        shown["status"] = first.statusText().stdout
        shown["status --json"] = first.status().result.stdout
        for name in ["", "tok.bin"] {
            shown["xattrs of /\(name)"] = XAttr.all(first.path(name)).map { "\($0.key)=\($0.value)" }.joined(separator: "\n")
        }
        #expect(shown["xattrs of /tok.bin"]?.contains("token=***") == true, "the URL is not shown redacted: \(shown["xattrs of /tok.bin"] ?? "")")
        Check.succeeded(first.unmount(), "unmount")
        shown["log"] = first.log()
        let files = FileManager.default.enumerator(atPath: cache.path)?.compactMap { $0 as? String } ?? []
        for file in files {
            let path = cache.appendingPathComponent(file).path
            guard let bytes = FileManager.default.contents(atPath: path) else { continue }
            shown["cache file \(file)"] = String(decoding: bytes, as: UTF8.self)
        }
        #expect(files.contains { $0.hasSuffix("sqlite") }, "no database in the cache: \(files)")
        for secret in [token, password] {
            let leaks = Secrets.leaks(secret, in: shown)
            #expect(leaks.isEmpty, "\(secret) appears in: \(leaks.joined(separator: ", "))")
        }

        // The same manifest again: the file is found in the cache, not fetched again.
        let before = server.gets("tok.bin").count
        let second = try fx.mount([ManifestLine(path: "tok.bin", url: url)], cacheDir: cache, options: Fixture.readsOnly)
        let again = Reading.whole(second.path("tok.bin"))
        #expect(again.succeeded && again.bytes == Data(data), "tok.bin after the remount: \(again)")
        #expect(server.gets("tok.bin").count == before, "the remount fetched its cached file again")
        Check.succeeded(second.unmount(), "unmount")
    }

    @Test("A cache database written before URL secrets were redacted (the URL with its token as the key, a location with one) is rewritten when it opens: the secret leaves the file, and the cached file is still found")
    func oldDatabaseLosesItsSecretsAndKeepsItsFiles() throws {
        let server = try FaultServer()
        defer { _ = server.stop() }
        let data = RandomBytes.make(count: 256 << 10, seed: 0x0A5)
        server.publish("old.bin", bytes: data)
        let token = "old-tok-6d3a-s3cret"
        let url = "http://127.0.0.1:\(server.port)/old.bin?token=\(token)"
        let cache = try fx.makeCacheDir()
        let first = try fx.mount([ManifestLine(path: "old.bin", url: url)], cacheDir: cache, options: Fixture.readsOnly)
        let read = Reading.whole(first.path("old.bin"))
        #expect(read.succeeded && read.bytes == Data(data), "old.bin: \(read)")
        Check.succeeded(first.unmount(), "unmount")

        // The database as an earlier version wrote it.
        let database = cache.appendingPathComponent("metadata.sqlite").path
        let rewind = Command.run(["sqlite3", database, """
            UPDATE cached_file SET url = '\(url)', location = '\(url)&mirror=1';
            DELETE FROM grdb_migrations WHERE identifier = 'v7-secret-free-keys';
            """], timeout: 30)
        Check.succeeded(rewind, "sqlite3")
        #expect((FileManager.default.contents(atPath: database).map { String(decoding: $0, as: UTF8.self) } ?? "").contains(token),
                "the old database was not made")

        let before = server.gets("old.bin").count
        let second = try fx.mount([ManifestLine(path: "old.bin", url: url)], cacheDir: cache, options: Fixture.readsOnly)
        let again = Reading.whole(second.path("old.bin"))
        #expect(again.succeeded && again.bytes == Data(data), "old.bin after the migration: \(again)")
        #expect(server.gets("old.bin").count == before, "the migrated database lost the cached file")
        Check.succeeded(second.unmount(), "unmount")
        let files = FileManager.default.enumerator(atPath: cache.path)?.compactMap { $0 as? String } ?? []
        let leaks = files.filter { file in
            FileManager.default.contents(atPath: cache.appendingPathComponent(file).path)
                .map { String(decoding: $0, as: UTF8.self).contains(token) } ?? false
        }
        #expect(leaks.isEmpty, "the token is still in \(leaks)")
    }
}

/// Headers stay with their origin: two servers on loopback (another port is another origin),
/// redirects from one to the other, and what each server was sent.
extension RangeFSIntegrationTests {
    /// The secrets a mount is given in the tests below, by header name.
    private static let originSecrets = ["Authorization": "Bearer origin-5e1d-s3cret", "Cookie": "session=origin-c00k-s3cret",
                                        "X-Api-Key": "origin-key-77a0-s3cret"]
    private static var originHeaderOptions: [String] {
        originSecrets.sorted { $0.key < $1.key }.flatMap { ["--header", "\($0.key): \($0.value)"] }
    }

    /// The requests of `server` that carried any of the secret headers (or `extra`), described.
    private static func secretCarriers(_ server: FaultServer, extra: [String] = []) -> [String] {
        server.requests.filter { request in
            (Array(originSecrets.keys) + extra).contains { request.header($0) != nil }
        }.map { "\($0.method) \($0.target)" }
    }

    @Test("--header and a manifest entry's header reach the origin, also after a redirect within it, and never another origin: not when the manifest URL redirects there, not when a file redirects there, not for an entry the manifest lists there; the bytes still read right")
    func headersStayWithTheirOrigin() throws {
        let origin = try FaultServer()
        let other = try FaultServer()
        defer { _ = origin.stop(); _ = other.stop() }
        let near = RandomBytes.make(count: 1 << 20, seed: 0x0A1)
        let far = RandomBytes.make(count: 1 << 20, seed: 0x0A2)
        origin.publish("store/near.bin", bytes: near)
        origin.configure("near.bin", PathOptions(redirectsInTurn: [origin.url("store/near.bin").absoluteString]))
        other.publish("far.bin", bytes: far)
        origin.configure("far.bin", PathOptions(redirectsInTurn: [other.url("far.bin").absoluteString]))
        let entryKey = "entry-key-31c4-s3cret"
        let manifest = """
        {"entries": [
          {"path": "near.bin", "url": "\(origin.url("near.bin").absoluteString)", "headers": {"X-Entry-Key": "\(entryKey)"}},
          {"path": "far.bin", "url": "\(origin.url("far.bin").absoluteString)", "headers": {"X-Entry-Key": "\(entryKey)"}},
          {"path": "elsewhere.bin", "url": "\(other.url("far.bin").absoluteString)"}
        ]}
        """
        // The manifest URL is the origin's; it redirects to the other server, which serves it.
        other.publish("list.json", bytes: Array(manifest.utf8))
        origin.configure("list.json", PathOptions(redirectsInTurn: [other.url("list.json").absoluteString]))
        let mount = try fx.prepare(source: origin.url("list.json").absoluteString,
                                   options: Self.originHeaderOptions + Fixture.readsOnly)
        try mount.mount()

        let nearRead = Reading.whole(mount.path("near.bin"))
        #expect(nearRead.succeeded && nearRead.bytes == Data(near), "near.bin: \(nearRead)")
        let farRead = Reading.whole(mount.path("far.bin"))
        #expect(farRead.succeeded && farRead.bytes == Data(far), "far.bin: \(farRead)")
        // Listed on the other origin by a manifest fetched from this one: the --header secrets
        // were given for the manifest's origin, not for what it lists.
        let elsewhereRead = Reading.whole(mount.path("elsewhere.bin"))
        #expect(elsewhereRead.succeeded && elsewhereRead.bytes == Data(far), "elsewhere.bin: \(elsewhereRead)")

        #expect(other.requests(for: "/list.json").isEmpty == false, "the manifest was not fetched from the other server")
        #expect(other.gets("far.bin").isEmpty == false, "far.bin was not read from the other server")
        let leaked = Self.secretCarriers(other, extra: ["X-Entry-Key"])
        #expect(leaked.isEmpty, "the other origin was sent secret headers: \(leaked)")
        // On the origin every request carries them: the manifest URL, the redirecting files and
        // the place near.bin's redirect led to on the same origin.
        for request in origin.requests {
            for (name, value) in Self.originSecrets {
                #expect(request.header(name) == value, "\(request.method) \(request.target) came without \(name)")
            }
        }
        let moved = origin.gets("store/near.bin")
        #expect(!moved.isEmpty && moved.allSatisfy { $0.header("X-Entry-Key") == entryKey },
                "the entry's header did not follow near.bin's redirect within its origin")
        #expect(origin.gets("far.bin").allSatisfy { $0.header("X-Entry-Key") == entryKey })
        Check.succeeded(mount.unmount(), "unmount")
    }

    @Test("A web directory whose root redirects to another origin is listed and read there without the --header secrets, which its origin alone was sent")
    func listedTreeOnAnotherOriginGetsNoHeaders() throws {
        let origin = try FaultServer()
        let other = try FaultServer()
        defer { _ = origin.stop(); _ = other.stop() }
        let data = RandomBytes.make(count: 512 << 10, seed: 0x0A3)
        other.publish("dir/", bytes: Array(#"<html><body><a href="f.bin">f.bin</a> <a href="sub/">sub/</a></body></html>"#.utf8))
        other.configure("dir/", PathOptions(contentType: "text/html"))
        other.publish("dir/sub/", bytes: Array(#"<html><body><a href="g.bin">g.bin</a></body></html>"#.utf8))
        other.configure("dir/sub/", PathOptions(contentType: "text/html"))
        other.publish("dir/f.bin", bytes: data)
        other.publish("dir/sub/g.bin", bytes: data)
        origin.configure("dir/", PathOptions(redirectsInTurn: [other.url("dir/").absoluteString]))
        let mount = try fx.prepare(source: origin.url("dir/").absoluteString, options: Self.originHeaderOptions + Fixture.readsOnly)
        try mount.mount()

        for name in ["f.bin", "sub/g.bin"] {
            let read = Reading.whole(mount.path(name))
            #expect(read.succeeded && read.bytes == Data(data), "\(name): \(read)")
        }
        #expect(!other.gets("dir/sub/g.bin").isEmpty, "the file below the redirected root was not read there")
        let leaked = Self.secretCarriers(other)
        #expect(leaked.isEmpty, "the other origin was sent secret headers: \(leaked)")
        let root = origin.gets("dir/")
        #expect(!root.isEmpty && root.allSatisfy { $0.header("Authorization") == Self.originSecrets["Authorization"] },
                "the root's own origin was not sent the headers")
        Check.succeeded(mount.unmount(), "unmount")
    }
}
