import Foundation

/// How a mount signs in to an SSH server and checks that it is the server meant, as OpenSSH
/// does: the ssh-agent first (`SSH_AUTH_SOCK`), then one key file (`--identity`, else the first
/// of `~/.ssh/id_ed25519`, `id_ecdsa`, `id_rsa` that exists), then a password; the host key
/// against a known-hosts file. The SFTP listings (libssh2) and the reads (libcurl) both sign in
/// with this one value. Its description names no secret.
public struct SSHSignIn: Sendable, CustomStringConvertible {
    public var user: String
    /// The ssh-agent's socket; nil to ask no agent.
    public var agentSocket: String?
    /// The private key to offer; nil for none.
    public var keyFile: String?
    /// The key file's passphrase, for an encrypted key.
    public var passphrase: String?
    /// The password, for a server that takes one (`--password-file`).
    public var password: String?
    /// The OpenSSH known-hosts file the host key must be found in.
    public var knownHostsFile: String

    public init(user: String, agentSocket: String?, keyFile: String?, passphrase: String? = nil,
                password: String? = nil, knownHostsFile: String) {
        self.user = user
        self.agentSocket = agentSocket
        self.keyFile = keyFile
        self.passphrase = passphrase
        self.password = password
        self.knownHostsFile = knownHostsFile
    }

    /// The key files OpenSSH offers by default, in its order.
    public static let defaultKeyNames = ["id_ed25519", "id_ecdsa", "id_rsa"]

    /// The key file to offer: `explicit` (`--identity`), else the first default one in
    /// `sshDirectory` that `exists`; nil when there is none.
    public static func keyFile(explicit: String?, sshDirectory: String,
                               exists: (String) -> Bool = { FileManager.default.fileExists(atPath: $0) }) -> String? {
        if let explicit { return explicit }
        return defaultKeyNames.map { sshDirectory + "/" + $0 }.first(where: exists)
    }

    /// The ways of signing in that are tried, in order, for messages.
    public var methods: [String] {
        var methods: [String] = []
        if agentSocket != nil { methods.append("ssh-agent") }
        if let keyFile { methods.append("key \(keyFile)") }
        if password != nil { methods.append("password") }
        return methods
    }

    public var description: String {
        "\(user) (\(methods.isEmpty ? "no way to sign in" : methods.joined(separator: ", ")); host keys in \(knownHostsFile))"
    }
}

/// What checking a server's host key against the known-hosts file found, and what to tell the
/// user when it refuses the connection. Pure: the session maps libssh2's answer here.
public enum HostKeyVerdict: Sendable, Equatable {
    case known
    /// The file has no key for this host.
    case unknown
    /// The file has another key for this host.
    case changed
    /// The key could not be checked (the file unreadable, the key of a type libssh2 does not read).
    case uncheckable(String)

    /// The verdict of `libssh2_knownhost_checkp`'s answer
    /// (`LIBSSH2_KNOWNHOST_CHECK_MATCH`, `_MISMATCH`, `_NOTFOUND`, `_FAILURE`).
    public static func of(checkResult: Int32) -> HostKeyVerdict {
        switch checkResult {
        case 0: .known
        case 1: .changed
        case 2: .unknown
        default: .uncheckable("libssh2 could not compare the key")
        }
    }

    /// Why the connection is refused (nil when the key is known), saying how to go on.
    /// `name`: the host as known_hosts writes it (`HOST` or `[HOST]:PORT`).
    public func refusal(host: String, port: Int, name: String, knownHostsFile: String) -> String? {
        let portFlag = port == SFTPAddress.defaultPort ? "" : "-p \(port) "
        switch self {
        case .known:
            return nil
        case .unknown:
            return "the host key of \(name) is not in \(knownHostsFile), so the server cannot be told from an impostor: "
                + "check its fingerprint, then accept it with 'ssh-keyscan \(portFlag)\(host) >> \(knownHostsFile)' "
                + "or by connecting once with 'ssh \(portFlag)\(host)'"
        case .changed:
            return "the host key of \(name) is NOT the one in \(knownHostsFile): someone may be intercepting the "
                + "connection (a man-in-the-middle attack), or the server's key was replaced. Nothing is mounted. "
                + "If the new key is known to be right, remove the old one with 'ssh-keygen -R \"\(name)\" -f \(knownHostsFile)' "
                + "and accept the new one ('ssh-keyscan \(portFlag)\(host) >> \(knownHostsFile)')"
        case .uncheckable(let why):
            return "the host key of \(name) could not be checked against \(knownHostsFile): \(why)"
        }
    }
}
