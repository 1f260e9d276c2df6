import Foundation
import Testing

/// How an `sftp://` mount signs in, as OpenSSH does: a key found in `~/.ssh` by OpenSSH's order,
/// a key held by a running ssh-agent, an encrypted key with its passphrase from a file or typed
/// at the prompt (handed to the background mount on a pipe, never on its command line nor in
/// its log).
extension RangeFSIntegrationTests {
    /// A home whose `.ssh` holds `keys` (name → the key file to copy there).
    private static func home(with keys: [String: String]) throws -> URL {
        let home = try Scratch.makeDir("sftp-home")
        let ssh = home.appendingPathComponent(".ssh")
        try FileManager.default.createDirectory(at: ssh, withIntermediateDirectories: true)
        for (name, key) in keys {
            try FileManager.default.copyItem(atPath: key, toPath: ssh.appendingPathComponent(name).path)
        }
        return home
    }

    private static func oneFileTree() throws -> URL {
        let tree = try Scratch.makeDir("sftp-tree")
        try Data("signed in".utf8).write(to: tree.appendingPathComponent("hello.txt"))
        return tree
    }

    @Test("SFTP sign-in: with no --identity, ~/.ssh/id_ed25519 is offered before id_rsa, as OpenSSH offers them")
    func sftpFindsTheDefaultKey() throws {
        let tree = try Self.oneFileTree()
        let server = try SSHServer()
        defer { server.stop() }
        // id_rsa would be refused: the first key found must be id_ed25519.
        let home = try Self.home(with: ["id_ed25519": server.userKey, "id_rsa": server.strangerKey])
        let mount = try fx.prepare(source: server.address(tree.path + "/"), options: ["--known-hosts", server.knownHosts])
        mount.environment = ["HOME": home.path, "SSH_AUTH_SOCK": ""]
        try mount.mount()
        #expect((try? String(contentsOfFile: mount.path("hello.txt"), encoding: .utf8)) == "signed in", "\(Check.daemonLog(mount))")
        #expect(mount.unmount().succeeded)

        let wrongFirst = try Self.home(with: ["id_ed25519": server.strangerKey, "id_rsa": server.userKey])
        let refused = try fx.prepare(source: server.address(tree.path + "/"), options: ["--known-hosts", server.knownHosts])
        refused.environment = ["HOME": wrongFirst.path, "SSH_AUTH_SOCK": ""]
        let result = refused.tryMount()
        #expect(!result.succeeded && result.stderr.contains("\(wrongFirst.path)/.ssh/id_ed25519 was refused"), "\(result)")
    }

    @Test("SFTP sign-in: a server that takes passwords alone lets in the mount given the password by --password-file; a wrong one is refused with the reason, and nothing is mounted")
    func sftpSignsInWithAPassword() throws {
        try #require(getuid() == 0, "making an account to sign in as needs root")
        let tree = try Self.oneFileTree()
        let account = try LocalAccount(password: "a password 41d9")
        let server = try SSHServer(passwordUser: account.name)
        defer { server.stop() }
        let address = "sftp://\(account.name)@127.0.0.1:\(server.port)\(tree.path)/"
        let scratch = try Scratch.makeDir("sftp-password")
        let right = scratch.appendingPathComponent("right").path
        try "\(account.password)\n".write(toFile: right, atomically: true, encoding: .utf8)
        let wrong = scratch.appendingPathComponent("wrong").path
        try "not the password\n".write(toFile: wrong, atomically: true, encoding: .utf8)
        // No key to offer first: an empty home and no agent.
        let home = try Self.home(with: [:])

        let mount = try fx.prepare(source: address, options: ["--password-file", right, "--known-hosts", server.knownHosts])
        mount.environment = ["HOME": home.path, "SSH_AUTH_SOCK": ""]
        try mount.mount()
        #expect((try? String(contentsOfFile: mount.path("hello.txt"), encoding: .utf8)) == "signed in",
                "\(Check.daemonLog(mount))\n\(server.log)")
        #expect(mount.unmount().succeeded)
        #expect(!mount.log().contains(account.password), "the password never reaches the log")

        let refused = try fx.prepare(source: address, options: ["--password-file", wrong, "--known-hosts", server.knownHosts])
        refused.environment = ["HOME": home.path, "SSH_AUTH_SOCK": ""]
        let result = refused.tryMount()
        #expect(!result.succeeded && !refused.isMounted, "\(result)")
        #expect(result.stderr.contains("password"), "the refusal names what was refused: \(result)")
    }

    @Test("SFTP sign-in: a key held by ssh-agent (SSH_AUTH_SOCK) signs the listings and the reads in")
    func sftpSignsInWithTheAgent() throws {
        let tree = try Self.oneFileTree()
        let server = try SSHServer()
        defer { server.stop() }
        let socket = try Scratch.makeDir("sftp-agent").appendingPathComponent("agent.sock").path
        let agent = try BackgroundCommand(["ssh-agent", "-D", "-a", socket])
        defer { agent.kill() }
        #expect(Poll.until(seconds: 10, every: 0.05) { FileManager.default.fileExists(atPath: socket) }, "ssh-agent made no socket")
        let added = Command.run(["env", "SSH_AUTH_SOCK=\(socket)", "ssh-add", server.userKey])
        #expect(added.succeeded, "\(added)")
        let home = try Self.home(with: [:])
        let mount = try fx.prepare(source: server.address(tree.path + "/"), options: ["--known-hosts", server.knownHosts])
        mount.environment = ["HOME": home.path, "SSH_AUTH_SOCK": socket]
        try mount.mount()
        #expect((try? String(contentsOfFile: mount.path("hello.txt"), encoding: .utf8)) == "signed in", "\(Check.daemonLog(mount))")
        #expect(mount.unmount().succeeded)
    }

    @Test("SFTP sign-in: an encrypted key with --passphrase-file, or its passphrase typed at the prompt, mounts; the passphrase reaches neither ps nor the log; without either, the mount says what to give")
    func sftpTakesAPassphrase() throws {
        let tree = try Self.oneFileTree()
        let server = try SSHServer()
        defer { server.stop() }
        let scratch = try Scratch.makeDir("sftp-passphrase")
        let passphrase = "a long pass phrase 7f3c"
        let key = scratch.appendingPathComponent("encrypted_key").path
        try FileManager.default.copyItem(atPath: server.userKey, toPath: key)
        let encrypted = Command.run(["ssh-keygen", "-q", "-p", "-P", "", "-N", passphrase, "-f", key])
        #expect(encrypted.succeeded, "\(encrypted)")
        let passphraseFile = scratch.appendingPathComponent("passphrase").path
        try "\(passphrase)\n".write(toFile: passphraseFile, atomically: true, encoding: .utf8)

        // In a session of its own, without a terminal to ask the passphrase on (also when the tests run in one).
        let mountpoint = try Scratch.makeDir("sftp-unasked").path
        let refused = Command.run(["setsid", "-w", fx.binary, "mount", server.address(tree.path + "/"), mountpoint,
                                   "--cache-dir", try fx.makeCacheDir().path, "--identity", key, "--known-hosts", server.knownHosts])
        #expect(!refused.succeeded && refused.stderr.contains("is encrypted") && refused.stderr.contains("--passphrase-file"),
                "no terminal to ask on: \(refused)")
        #expect(!MountTable.isMounted(mountpoint))

        let mount = try fx.prepare(source: server.address(tree.path + "/"),
                                   options: ["--identity", key, "--passphrase-file", passphraseFile, "--known-hosts", server.knownHosts])
        try mount.mount()
        #expect((try? String(contentsOfFile: mount.path("hello.txt"), encoding: .utf8)) == "signed in", "\(Check.daemonLog(mount))")
        let pids = mount.daemonPids()
        #expect(!pids.isEmpty, "the mount runs in the background")
        for pid in pids {
            let commandLine = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline"))).map { String(decoding: $0, as: UTF8.self) } ?? ""
            #expect(!commandLine.isEmpty && !commandLine.contains(passphrase), "the background mount's command line holds no passphrase")
        }
        #expect(mount.unmount().succeeded)
        #expect(!mount.log().contains(passphrase), "the passphrase never reaches the log")

        // Typed at the prompt on a terminal (script(1) gives the mount one): the feeder waits
        // for the prompt in the typescript, 30 s at most, as getpass drops what came before it.
        let typescript = scratch.appendingPathComponent("typescript").path
        let typed = try fx.prepare(source: server.address(tree.path + "/"), options: ["--identity", key, "--known-hosts", server.knownHosts])
        let command = ([fx.binary, "mount", typed.manifestPath, typed.mountpoint, "--cache-dir", typed.cacheDir] + typed.options)
            .map { "'\($0)'" }.joined(separator: " ")
        let feeder = "for i in $(seq 600); do grep -q 'Enter passphrase' '\(typescript)' 2>/dev/null && break; sleep 0.05; done; "
            + "printf '%s\\n' '\(passphrase)'"
        let session = Command.run(["sh", "-c", "(\(feeder)) | script -qfec \"\(command)\" '\(typescript)'"], timeout: 90)
        #expect(session.succeeded && typed.isMounted, "\(session)")
        let shown = (try? String(contentsOfFile: typescript, encoding: .utf8)) ?? ""
        #expect(shown.contains("Enter passphrase for key '\(key)'") && !shown.contains(passphrase), "the prompt, without echo: \(shown)")
        #expect((try? String(contentsOfFile: typed.path("hello.txt"), encoding: .utf8)) == "signed in", "\(Check.daemonLog(typed))")
        #expect(typed.unmount().succeeded)
        #expect(!typed.log().contains(passphrase), "the typed passphrase never reaches the log")
    }
}
