import Foundation
import Testing
@testable import RangeFSCore

@Suite("SFTP addresses")
struct SFTPAddressTests {
    @Test("user, host, port and path are read; the root ends in /")
    func parts() throws {
        let address = try #require(try SFTPAddress.parse("sftp://me@127.0.0.1:2222/srv/media", localUser: "local"))
        #expect(address.user == "me")
        #expect(address.host == "127.0.0.1")
        #expect(address.port == 2222)
        #expect(address.rootURL.absoluteString == "sftp://me@127.0.0.1:2222/srv/media/")
        #expect(address.knownHostsName == "[127.0.0.1]:2222")
    }

    @Test("no user is the local one, no port is 22, no path is /")
    func defaults() throws {
        let address = try #require(try SFTPAddress.parse("SFTP://nas.local", localUser: "local"))
        #expect(address.user == "local")
        #expect(address.port == 22)
        #expect(address.rootURL.absoluteString == "sftp://local@nas.local/")
        #expect(address.knownHostsName == "nas.local")
    }

    @Test("other schemes are not SFTP addresses")
    func otherSchemes() throws {
        #expect(try SFTPAddress.parse("https://example.com/", localUser: "u") == nil)
        #expect(try SFTPAddress.parse("media.txt", localUser: "u") == nil)
    }

    @Test("a password, a query, a fragment or a bad port is refused, the password not shown")
    func refusals() {
        #expect(throws: SFTPAddressError.self) { try SFTPAddress.parse("sftp://me:secret@host/", localUser: "u") }
        do {
            _ = try SFTPAddress.parse("sftp://me:secret@host/", localUser: "u")
        } catch {
            #expect(!error.description.contains("secret"))
        }
        #expect(throws: SFTPAddressError.self) { try SFTPAddress.parse("sftp://host/a?b", localUser: "u") }
        #expect(throws: SFTPAddressError.self) { try SFTPAddress.parse("sftp://host/a#b", localUser: "u") }
        #expect(throws: SFTPAddressError.self) { try SFTPAddress.parse("sftp://host:70000/", localUser: "u") }
        #expect(throws: SFTPAddressError.self) { try SFTPAddress.parse("sftp:///path/", localUser: "u") }
    }

    @Test("awkward names are encoded in URLs and decoded back to the server's path")
    func awkwardNames() throws {
        let root = URL(string: "sftp://me@host/srv/media/")!
        let names = ["a b#%?é.txt", "100%", "日本", "x+y&z=1", "~tilde"]
        for name in names {
            let url = SFTPAddress.url(root: root, below: ["sub dir", name], isDirectory: false)
            #expect(url.host == "host" && url.query == nil && url.fragment == nil, "\(url)")
            #expect(SFTPAddress.remotePath(of: url) == "/srv/media/sub dir/\(name)")
        }
        let directory = SFTPAddress.url(root: root, below: ["a#b"], isDirectory: true)
        #expect(directory.absoluteString == "sftp://me@host/srv/media/a%23b/")
        #expect(SFTPAddress.url(root: root, below: [], isDirectory: true) == root)
    }

    @Test("/~/ is below the user's home, as curl reads it")
    func homeRelative() {
        #expect(SFTPAddress.remotePath(of: URL(string: "sftp://me@host/~/music/")!) == "music/")
        #expect(SFTPAddress.remotePath(of: URL(string: "sftp://me@host/~/")!) == ".")
        #expect(SFTPAddress.remotePath(of: URL(string: "sftp://me@host/")!) == "/")
        #expect(SFTPAddress.remotePath(of: URL(string: "sftp://me@host/a%00b")!) == nil)
    }
}

@Suite("SSH sign-in")
struct SSHSignInTests {
    @Test("--identity wins; else the first of id_ed25519, id_ecdsa, id_rsa that exists; else none")
    func keyOrder() {
        let all: Set = ["/h/.ssh/id_ed25519", "/h/.ssh/id_ecdsa", "/h/.ssh/id_rsa"]
        #expect(SSHSignIn.keyFile(explicit: "/k", sshDirectory: "/h/.ssh") { all.contains($0) } == "/k")
        #expect(SSHSignIn.keyFile(explicit: nil, sshDirectory: "/h/.ssh") { all.contains($0) } == "/h/.ssh/id_ed25519")
        #expect(SSHSignIn.keyFile(explicit: nil, sshDirectory: "/h/.ssh") { $0 != "/h/.ssh/id_ed25519" && all.contains($0) }
            == "/h/.ssh/id_ecdsa")
        #expect(SSHSignIn.keyFile(explicit: nil, sshDirectory: "/h/.ssh") { $0 == "/h/.ssh/id_rsa" } == "/h/.ssh/id_rsa")
        #expect(SSHSignIn.keyFile(explicit: nil, sshDirectory: "/h/.ssh") { _ in false } == nil)
    }

    @Test("the description names the methods, never a passphrase or a password")
    func noSecrets() {
        let signIn = SSHSignIn(user: "me", agentSocket: "/run/agent", keyFile: "/k", passphrase: "pass-phrase-1",
                               password: "pass-word-2", knownHostsFile: "/kh")
        #expect(signIn.methods == ["ssh-agent", "key /k", "password"])
        #expect(!signIn.description.contains("pass-phrase-1") && !signIn.description.contains("pass-word-2"))
    }
}

@Suite("Host key verdicts")
struct HostKeyVerdictTests {
    @Test("libssh2's answers map to known, changed, unknown, uncheckable")
    func mapping() {
        #expect(HostKeyVerdict.of(checkResult: 0) == .known)
        #expect(HostKeyVerdict.of(checkResult: 1) == .changed)
        #expect(HostKeyVerdict.of(checkResult: 2) == .unknown)
        if case .uncheckable = HostKeyVerdict.of(checkResult: 3) {} else { Issue.record("3 is a failure") }
    }

    @Test("an unknown key says how to accept it; a changed one that it may be an attack; a known one nothing")
    func messages() throws {
        #expect(HostKeyVerdict.known.refusal(host: "h", port: 22, name: "h", knownHostsFile: "/kh") == nil)
        let unknown = try #require(HostKeyVerdict.unknown.refusal(host: "127.0.0.1", port: 2222, name: "[127.0.0.1]:2222",
                                                                  knownHostsFile: "/kh"))
        #expect(unknown.contains("not in /kh") && unknown.contains("ssh-keyscan -p 2222 127.0.0.1 >> /kh"))
        let changed = try #require(HostKeyVerdict.changed.refusal(host: "h", port: 22, name: "h", knownHostsFile: "/kh"))
        #expect(changed.contains("man-in-the-middle") && changed.contains("ssh-keygen -R \"h\" -f /kh"))
        #expect(!changed.contains("-p 22"))
    }
}

@Suite("SFTP read verdicts")
struct SFTPReadCheckTests {
    private func request(_ range: Range<UInt64>, size: UInt64 = 1000, modified: Int64? = 1_600_000_000) -> RangeRequest {
        RangeRequest(url: URL(string: "sftp://me@host/f")!, headers: [:], range: range, expectedSize: size,
                     validator: SFTPVersion.validator(modified: modified.map { Date(timeIntervalSince1970: TimeInterval($0)) }))
    }

    @Test("a range inside the file is asked as it is; one reaching the end asks one byte more")
    func rangeText() {
        #expect(SFTPReadCheck.rangeText(request(10..<20)) == "10-19")
        #expect(SFTPReadCheck.rangeText(request(990..<1000)) == "990-1000")
    }

    @Test("the same length and time pass")
    func same() {
        #expect(SFTPReadCheck.beforeBody(request(10..<20), deliverable: 10, modified: 1_600_000_000) == nil)
        #expect(SFTPReadCheck.beforeBody(request(10..<20), deliverable: nil, modified: nil) == nil)
        #expect(SFTPReadCheck.afterBody(request(10..<20), delivered: 10) == nil)
    }

    @Test("another time, a shorter or a longer file, or a short read is a change, never data")
    func changes() {
        guard case .changed(let time)? = SFTPReadCheck.beforeBody(request(10..<20), deliverable: 10, modified: 1_600_000_001) else {
            Issue.record("a new mtime is a change"); return
        }
        #expect(time.contains("1600000000") && time.contains("1600000001"))
        guard case .changed(let shorter)? = SFTPReadCheck.beforeBody(request(990..<1000), deliverable: 4, modified: 1_600_000_000) else {
            Issue.record("a shorter file is a change"); return
        }
        #expect(shorter.contains("now 994"))
        guard case .changed? = SFTPReadCheck.beforeBody(request(990..<1000), deliverable: 11, modified: 1_600_000_000) else {
            Issue.record("a longer file is a change"); return
        }
        guard case .changed? = SFTPReadCheck.afterBody(request(10..<20), delivered: 9) else {
            Issue.record("a short read is a change"); return
        }
    }

    @Test("the version is the time in whole seconds; a reply names it for a file not yet versioned")
    func version() {
        #expect(SFTPVersion.validator(modified: Date(timeIntervalSince1970: 1_600_000_000.9)).lastModified == "1600000000")
        #expect(SFTPVersion.validator(modified: nil).isEmpty)
        let info = SFTPReadCheck.repliedVersion(request(0..<10, modified: nil), modified: 1_700_000_000)
        #expect(info.size == 1000 && info.validator.lastModified == "1700000000")
        #expect(SFTPVersion.isSFTP(URL(string: "SFTP://h/f")!) && !SFTPVersion.isSFTP(URL(string: "https://h/f")!))
    }
}

@Suite("SSH key files")
struct SSHKeyFileTests {
    /// An OpenSSH-format key whose blob names `cipher`.
    private func openSSHKey(cipher: String) -> String {
        var blob = Data("openssh-key-v1\u{0}".utf8)
        blob += Data([0, 0, 0, UInt8(cipher.utf8.count)]) + Data(cipher.utf8) + Data(repeating: 7, count: 40)
        return "-----BEGIN OPENSSH PRIVATE KEY-----\n\(blob.base64EncodedString(options: .lineLength64Characters))\n-----END OPENSSH PRIVATE KEY-----\n"
    }

    @Test("OpenSSH keys tell their cipher; PEM keys say ENCRYPTED; anything else is taken as plain")
    func encryption() {
        #expect(!SSHKeyFile.isEncrypted(openSSHKey(cipher: "none")))
        #expect(SSHKeyFile.isEncrypted(openSSHKey(cipher: "aes256-ctr")))
        #expect(SSHKeyFile.isEncrypted("-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\nAAAA\n-----END RSA PRIVATE KEY-----\n"))
        #expect(SSHKeyFile.isEncrypted("-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"))
        #expect(!SSHKeyFile.isEncrypted("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n"))
        #expect(!SSHKeyFile.isEncrypted("-----BEGIN OPENSSH PRIVATE KEY-----\n!!!\n-----END OPENSSH PRIVATE KEY-----\n"))
        #expect(!SSHKeyFile.isEncrypted(""))
    }
}
