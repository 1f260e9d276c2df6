import Foundation
import Testing

/// Buckets mounted by their s3:// address from moto's S3 server on loopback, which checks
/// every signature with botocore's signer and every request against the key's policy: a
/// public bucket read unsigned, private ones with keys from the environment, a profile file
/// and a session token; wrong keys, a missing bucket and a denied listing refused at mount
/// with the S3 code; a denied read later giving EIO; 2,500 keys in one directory; awkward
/// keys; an object overwritten while read; and a remount with the server gone.
extension RangeFSIntegrationTests {
    /// Keys of every kind a name can take: spaces, unicode, `+`, `=`, `&`, nesting, and one
    /// directory marker object (`docs/`), which is no file.
    static let awkwardKeys: [(key: String, text: String)] = [
        ("plain.txt", "plain"),
        ("with space.txt", "with space"),
        ("plus+sign.txt", "plus+sign"),
        ("équipe/日本語 ファイル.txt", "unicode"),
        ("a=b&c.txt", "query-like"),
        ("docs/", ""),
        ("docs/deep/deeper/leaf.txt", "leaf"),
    ]

    /// What the mount must show for `awkwardKeys`: every file, by path, with its text.
    static var awkwardFiles: [String: String] {
        Dictionary(uniqueKeysWithValues: awkwardKeys.filter { !$0.key.hasSuffix("/") }.map { ($0.key, $0.text) })
    }

    /// A home directory of its own (no ~/.aws of the machine's) and no AWS variables but `set`.
    func bucketEnvironment(_ set: [String: String] = [:]) throws -> [String: String] {
        var environment = ["HOME": try Scratch.makeDir("home").path]
        for name in ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
                     "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE"] {
            environment[name] = ""
        }
        return environment.merging(set) { _, given in given }
    }

    func bucketMount(_ server: MotoServer, _ address: String, environment: [String: String], cacheDir: URL? = nil,
                     options: [String] = []) throws -> Mount {
        let mount = try fx.prepare(source: address, cacheDir: cacheDir,
                                   options: ["--endpoint", server.endpoint, "--path-style", "--prefetch", "none"] + options)
        mount.environment = environment
        return mount
    }

    /// Every regular file below the mount, relative path → contents as text.
    static func textsBelow(_ mount: Mount) -> [String: String] {
        let found = Command.run(["find", mount.mountpoint, "-type", "f"])
        var texts: [String: String] = [:]
        for line in found.stdout.split(separator: "\n") {
            let relative = String(line.dropFirst(mount.mountpoint.count + 1))
            texts[relative] = (try? String(contentsOfFile: String(line), encoding: .utf8)) ?? "<unreadable>"
        }
        return texts
    }

    @Test("bucket: a public bucket mounts with --no-sign-request; awkward keys are names, every object reads, ls -l shows the listed sizes")
    func bucketPublicMountsUnsigned() throws {
        let server = try MotoServer()
        defer { server.stop() }
        try server.setUp([["op": "bucket", "name": "public-media"]]
            + Self.awkwardKeys.map { ["op": "put", "bucket": "public-media", "key": $0.key, "text": $0.text, "public": true] })
        let mount = try bucketMount(server, "s3://public-media/", environment: try bucketEnvironment(), options: ["--no-sign-request"])
        try mount.mount()
        #expect(Self.textsBelow(mount) == Self.awkwardFiles, "every object, by its key\(Check.daemonLog(mount))")
        let listed = Command.run(["ls", "-l", "--", mount.path("équipe")])
        #expect(listed.stdout.contains(" 7 ") && listed.stdout.contains("日本語 ファイル.txt"), "the size from the listing\n\(listed)")
        #expect(FileManager.default.fileExists(atPath: mount.path("docs/deep")), "a directory marker object is a directory, not a file")
        #expect(mount.unmount().succeeded)
    }

    @Test("bucket: a private bucket mounts with keys from the environment, from a profile file (--profile and AWS_PROFILE), and with a session token")
    func bucketPrivateWithCredentials() throws {
        let server = try MotoServer()
        defer { server.stop() }
        let readAll = MotoServer.policy(actions: ["s3:ListBucket", "s3:GetObject"], resources: ["arn:aws:s3:::private-media", "arn:aws:s3:::private-media/*"])
        let made = try server.setUp([["op": "bucket", "name": "private-media"]]
            + Self.awkwardKeys.map { ["op": "put", "bucket": "private-media", "key": $0.key, "text": $0.text] }
            + [["op": "user", "name": "reader", "policy": readAll],
               ["op": "role", "name": "media-role", "user": "reader", "policy": readAll],
               ["op": "enable-auth"]])
        let user = try #require(made.users["reader"]), role = try #require(made.roles["media-role"])

        // Unsigned, the private bucket is refused (the server checks).
        let unsigned = try bucketMount(server, "s3://private-media/", environment: try bucketEnvironment(), options: ["--no-sign-request"])
        #expect(!unsigned.tryMount().succeeded && !unsigned.isMounted, "an unsigned listing of a private bucket must be refused")

        let fromEnvironment = try bucketMount(server, "s3://private-media/", environment: try bucketEnvironment(
            ["AWS_ACCESS_KEY_ID": user.AccessKeyId, "AWS_SECRET_ACCESS_KEY": user.SecretAccessKey]))
        try fromEnvironment.mount()
        #expect(Self.textsBelow(fromEnvironment) == Self.awkwardFiles, "keys from the environment\(Check.daemonLog(fromEnvironment))")
        #expect(fromEnvironment.unmount().succeeded)

        var environment = try bucketEnvironment()
        let aws = URL(fileURLWithPath: environment["HOME"]!).appendingPathComponent(".aws")
        try FileManager.default.createDirectory(at: aws, withIntermediateDirectories: true)
        try """
            [default]
            aws_access_key_id = AKIANOTTHEONEWANTED1
            aws_secret_access_key = wrong

            [media]
            aws_access_key_id = \(user.AccessKeyId)
            aws_secret_access_key = \(user.SecretAccessKey)

            """.write(to: aws.appendingPathComponent("credentials"), atomically: true, encoding: .utf8)
        try "[profile media]\nregion = us-east-1\n".write(to: aws.appendingPathComponent("config"), atomically: true, encoding: .utf8)
        let fromProfile = try bucketMount(server, "s3://private-media/équipe/", environment: environment, options: ["--profile", "media"])
        try fromProfile.mount()
        #expect(Self.textsBelow(fromProfile) == ["日本語 ファイル.txt": "unicode"], "--profile media, a prefix mounted\(Check.daemonLog(fromProfile))")
        #expect(fromProfile.unmount().succeeded)
        environment["AWS_PROFILE"] = "media"
        let fromProfileVariable = try bucketMount(server, "s3://private-media/docs/", environment: environment)
        try fromProfileVariable.mount()
        #expect(Self.textsBelow(fromProfileVariable) == ["deep/deeper/leaf.txt": "leaf"], "AWS_PROFILE\(Check.daemonLog(fromProfileVariable))")
        #expect(fromProfileVariable.unmount().succeeded)

        let withToken = try bucketMount(server, "s3://private-media/", environment: try bucketEnvironment(
            ["AWS_ACCESS_KEY_ID": role.AccessKeyId, "AWS_SECRET_ACCESS_KEY": role.SecretAccessKey, "AWS_SESSION_TOKEN": role.SessionToken ?? ""]))
        try withToken.mount()
        #expect(Self.textsBelow(withToken) == Self.awkwardFiles, "temporary keys with a session token\(Check.daemonLog(withToken))")
        // The keys never reach the process list, the status or the log.
        let status = Command.run([fx.binary, "status", "--json", withToken.mountpoint])
        let processes = Command.run(["ps", "-eo", "args"])
        let log = (try? String(contentsOfFile: withToken.logPath, encoding: .utf8)) ?? ""
        for secret in [role.SecretAccessKey, role.SessionToken ?? "-"] {
            #expect(!status.stdout.contains(secret) && !processes.stdout.contains(secret) && !log.contains(secret), "a secret leaked")
        }
        #expect(withToken.unmount().succeeded)
    }

    @Test("bucket: wrong keys, an unknown key, a missing bucket and a denied listing are each refused at mount with the S3 code; a denied read later is EIO with the code in the log")
    func bucketRefusalsAreClear() throws {
        let server = try MotoServer()
        defer { server.stop() }
        let made = try server.setUp([
            ["op": "bucket", "name": "guarded"],
            ["op": "put", "bucket": "guarded", "key": "open/readme.txt", "text": "readable"],
            ["op": "put", "bucket": "guarded", "key": "secret/plans.txt", "text": "hidden"],
            ["op": "user", "name": "lister", "policy": ["Version": "2012-10-17", "Statement": [
                ["Effect": "Allow", "Action": ["s3:ListBucket", "s3:GetObject"], "Resource": ["arn:aws:s3:::guarded", "arn:aws:s3:::guarded/*"]],
                ["Effect": "Deny", "Action": ["s3:GetObject"], "Resource": ["arn:aws:s3:::guarded/secret/*"]],
            ]]],
            ["op": "user", "name": "nolist", "policy": MotoServer.policy(actions: ["s3:GetObject"], resources: ["arn:aws:s3:::guarded/*"])],
            ["op": "user", "name": "anything", "policy": MotoServer.policy(actions: ["s3:*"], resources: ["*"])],
            ["op": "enable-auth"],
        ])
        let lister = try #require(made.users["lister"]), nolist = try #require(made.users["nolist"])
        let anything = try #require(made.users["anything"])
        let cases: [(what: String, address: String, keys: (String, String), expected: String)] = [
            ("a wrong secret", "s3://guarded/", (lister.AccessKeyId, "not-the-secret"), "SignatureDoesNotMatch"),
            ("an unknown key", "s3://guarded/", ("AKIAUNKNOWNUNKNOWN00", "whatever"), "InvalidAccessKeyId"),
            ("a missing bucket", "s3://no-such-bucket/", (anything.AccessKeyId, anything.SecretAccessKey), "NoSuchBucket"),
            ("a denied listing", "s3://guarded/open/", (nolist.AccessKeyId, nolist.SecretAccessKey), "AccessDenied"),
        ]
        for refused in cases {
            let mount = try bucketMount(server, refused.address, environment: try bucketEnvironment(
                ["AWS_ACCESS_KEY_ID": refused.keys.0, "AWS_SECRET_ACCESS_KEY": refused.keys.1]))
            let result = mount.tryMount()
            #expect(!result.succeeded && !mount.isMounted, "\(refused.what) must not mount\n\(result)")
            #expect(result.stderr.contains(refused.expected) && result.stderr.contains(refused.address), "\(refused.what): the message names the code and the bucket\n\(result)")
            #expect(result.stderr.split(separator: "\n").count <= 2, "\(refused.what): one clear message\n\(result)")
        }

        let mount = try bucketMount(server, "s3://guarded/", environment: try bucketEnvironment(
            ["AWS_ACCESS_KEY_ID": lister.AccessKeyId, "AWS_SECRET_ACCESS_KEY": lister.SecretAccessKey]))
        try mount.mount()
        #expect((try? String(contentsOfFile: mount.path("open/readme.txt"), encoding: .utf8)) == "readable")
        let denied = Reading.whole(mount.path("secret/plans.txt"))
        #expect(denied.failedWithEIO, "a denied read is EIO: \(denied)")
        #expect(Poll.until(seconds: 10) { ((try? String(contentsOfFile: mount.logPath, encoding: .utf8)) ?? "").contains("AccessDenied") },
                "the log names the S3 code\(Check.daemonLog(mount))")
        #expect(mount.unmount().succeeded)
    }

    @Test("bucket: 2,500 keys under one prefix are listed page after page (continuation tokens) and all shown; rangefs manifest prints them")
    func bucketPaginates() throws {
        let server = try MotoServer()
        defer { server.stop() }
        try server.setUp([["op": "bucket", "name": "many"], ["op": "put-many", "bucket": "many", "prefix": "items/key-", "count": 2_500, "public": true]])
        let mount = try bucketMount(server, "s3://many/", environment: try bucketEnvironment(), options: ["--no-sign-request"])
        try mount.mount()
        let names = Command.run(["ls", "-1", "--", mount.path("items")]).stdout.split(separator: "\n").map(String.init)
        #expect(names.count == 2_500 && names.first == "key-00000" && names.last == "key-02499", "\(names.count) names\(Check.daemonLog(mount))")
        #expect((try? String(contentsOfFile: mount.path("items/key-01999"), encoding: .utf8)) == "object 1999")
        #expect(mount.unmount().succeeded)

        let manifest = Command.run(Mount.withEnvironment(try bucketEnvironment(), [fx.binary, "manifest", "--endpoint", server.endpoint,
                                                                                  "--path-style", "--no-sign-request", "s3://many/items/"]))
        let lines = manifest.stdout.split(separator: "\n")
        #expect(manifest.succeeded && lines.count == 2_500, "\(lines.count) lines\n\(manifest.stderr)")
        #expect(lines.first == "key-00000\t\(server.endpoint)/many/items/key-00000", "\(lines.first ?? "")")
    }

    @Test("bucket: an object overwritten while a reader holds it open: the reader gets EIO and only bytes of the old version; reopening gives the new one")
    func bucketObjectOverwrittenWhileRead() throws {
        let server = try MotoServer()
        defer { server.stop() }
        let files = try Scratch.makeDir("versions")
        let v1 = RandomBytes.make(count: 4 << 20, seed: 0x53), v2 = RandomBytes.make(count: 4 << 20, seed: 0x54)
        try Data(v1).write(to: files.appendingPathComponent("v1"))
        try Data(v2).write(to: files.appendingPathComponent("v2"))
        try server.setUp([["op": "bucket", "name": "changing"],
                          ["op": "put", "bucket": "changing", "key": "song.bin", "file": files.appendingPathComponent("v1").path, "public": true]])
        let mount = try bucketMount(server, "s3://changing/", environment: try bucketEnvironment(), options: ["--no-sign-request"])
        try mount.mount()
        let reader = try PausedReader(mount.path("song.bin"), flags: files)
        #expect(reader.waitForFirstPart(), "the reader did not get its first 256 KiB")
        try server.setUp([["op": "put", "bucket": "changing", "key": "song.bin", "file": files.appendingPathComponent("v2").path, "public": true]])
        let out = reader.finish()
        #expect(Reading.isPrefix(out.bytes, of: v1) && out.bytes.count >= 262_144, "only bytes of the old version: \(out)")
        #expect(out.failedWithEIO, "the reader of the old version gets EIO once the change is seen: \(out)\(Check.daemonLog(mount))")
        let reopened = Reading.whole(mount.path("song.bin"))
        #expect(reopened.succeeded && reopened.bytes == Data(v2), "reopening gives the new version: \(reopened)\(Check.daemonLog(mount))")
        #expect(mount.unmount().succeeded)
    }

    @Test("bucket: a remount with the server stopped shows the last known tree and serves what was read")
    func bucketRemountsOffline() throws {
        let server = try MotoServer()
        defer { server.stop() }
        try server.setUp([["op": "bucket", "name": "offline"]]
            + Self.awkwardKeys.map { ["op": "put", "bucket": "offline", "key": $0.key, "text": $0.text, "public": true] })
        let cache = try fx.makeCacheDir()
        let first = try bucketMount(server, "s3://offline/", environment: try bucketEnvironment(), cacheDir: cache, options: ["--no-sign-request"])
        try first.mount()
        #expect((try? String(contentsOfFile: first.path("with space.txt"), encoding: .utf8)) == "with space")
        let tree = Command.run(["find", first.mountpoint]).stdout.replacingOccurrences(of: first.mountpoint, with: "")
        #expect(first.unmount().succeeded)
        let endpoint = server.endpoint
        server.stop()

        let offline = try fx.prepare(source: "s3://offline/", cacheDir: cache,
                                     options: ["--endpoint", endpoint, "--path-style", "--prefetch", "none", "--no-sign-request"])
        offline.environment = try bucketEnvironment()
        try offline.mount()
        #expect(Command.run(["find", offline.mountpoint]).stdout.replacingOccurrences(of: offline.mountpoint, with: "") == tree,
                "the last known tree\(Check.daemonLog(offline))")
        #expect((try? String(contentsOfFile: offline.path("with space.txt"), encoding: .utf8)) == "with space", "read before: from the cache")
        #expect(!Reading.whole(offline.path("plain.txt")).succeeded, "never read: not there offline")
        #expect(offline.unmount().succeeded)
    }

    @Test("bucket: pin completes a directory never looked at, status and evict work on its objects, refresh shows a new key and drops a deleted one")
    func bucketCommands() throws {
        let server = try MotoServer()
        defer { server.stop() }
        try server.setUp([["op": "bucket", "name": "steered"]]
            + Self.awkwardKeys.map { ["op": "put", "bucket": "steered", "key": $0.key, "text": $0.text, "public": true] })
        let mount = try bucketMount(server, "s3://steered/", environment: try bucketEnvironment(), options: ["--no-sign-request"])
        try mount.mount()
        let binary = fx.binary
        let pinned = Command.run([binary, "pin", mount.mountpoint, "docs"])
        #expect(pinned.succeeded && pinned.stdout.contains("pinned 1 file"), "\(pinned)\(Check.daemonLog(mount))")
        let isComplete = { (path: String) in
            Command.run([binary, "status", mount.mountpoint]).stdout.split(separator: "\n")
                .contains { $0.hasPrefix(path + " ") && $0.contains("complete") }
        }
        #expect(Poll.until(seconds: 20) { isComplete("docs/deep/deeper/leaf.txt") },
                "the pinned object completes: \(Command.run([binary, "status", mount.mountpoint]).stdout)")
        #expect((try? String(contentsOfFile: mount.path("with space.txt"), encoding: .utf8)) == "with space")
        #expect(Poll.until(seconds: 10) { isComplete("with space.txt") }, "a small object read whole is complete")
        let evicted = Command.run([binary, "evict", mount.mountpoint])
        #expect(evicted.succeeded, "\(evicted)")
        #expect(!isComplete("with space.txt") && isComplete("docs/deep/deeper/leaf.txt"),
                "evict drops what was read and keeps what is pinned: \(Command.run([binary, "status", mount.mountpoint]).stdout)")

        try server.setUp([["op": "put", "bucket": "steered", "key": "added.txt", "text": "new", "public": true],
                          ["op": "delete", "bucket": "steered", "key": "plain.txt"]])
        let refresh = Command.run([binary, "refresh", mount.mountpoint])
        #expect(refresh.succeeded, "\(refresh)\(Check.daemonLog(mount))")
        #expect(Poll.until(seconds: 10) { FileManager.default.fileExists(atPath: mount.path("added.txt")) }, "a new key appears\(Check.daemonLog(mount))")
        #expect(!FileManager.default.fileExists(atPath: mount.path("plain.txt")), "a deleted key vanishes")
        #expect((try? String(contentsOfFile: mount.path("added.txt"), encoding: .utf8)) == "new")
        #expect(mount.unmount().succeeded)
    }
}
