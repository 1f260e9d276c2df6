import ArgumentParser
import Foundation
import RangeFSCore

/// `--identity`, `--passphrase-file` and `--known-hosts`: how an `sftp://` mount signs in and
/// knows its server, as OpenSSH does (the ssh-agent, then the key file, then `--password-file`'s
/// password; the host key in `~/.ssh/known_hosts`). A passphrase or password is read from a
/// file or asked on the terminal, never taken from the command line. Shared by `mount` and
/// `manifest`.
struct SSHOptions: ParsableArguments {
    @Option(help: "The private key an sftp:// mount signs in with (default: the first of ~/.ssh/id_ed25519, id_ecdsa, id_rsa that exists), after the ssh-agent's keys.")
    var identity: String?

    @Option(help: "A file whose first line is the passphrase of the key (else it is asked on the terminal when the key is encrypted).")
    var passphraseFile: String?

    @Option(help: "The OpenSSH known-hosts file an sftp:// server's host key must be in (default: ~/.ssh/known_hosts).")
    var knownHosts: String?

    /// Whether any of these options is given.
    var isGiven: Bool { identity != nil || passphraseFile != nil || knownHosts != nil }

    /// The sign-in for `address`: the agent of `SSH_AUTH_SOCK`, the key chosen, its passphrase
    /// when it is encrypted, `passwordFile`'s password, and the known-hosts file. `ask` reads a
    /// passphrase on the terminal (nil where there is none).
    /// `askPassphrase`: false when the passphrase comes another way (the background mount's pipe).
    func signIn(for address: SFTPAddress, passwordFile: String?, askPassphrase: Bool = true,
                ask: (String) -> String? = SignInOptions.askOnTerminal) throws -> SSHSignIn {
        let environment = ProcessInfo.processInfo.environment
        let home = environment["HOME"] ?? NSHomeDirectory()
        let keyFile = SSHSignIn.keyFile(explicit: identity.map(absolutePath), sshDirectory: home + "/.ssh")
        if let keyFile, !FileManager.default.isReadableFile(atPath: keyFile) {
            throw ValidationError("--identity \(keyFile) cannot be read")
        }
        var passphrase: String?
        if let passphraseFile {
            passphrase = try SignInOptions.firstLine(of: passphraseFile, option: "--passphrase-file")
        } else if askPassphrase, let keyFile, SSHKeyFile.isEncrypted(atPath: keyFile) {
            guard let typed = ask("Enter passphrase for key '\(keyFile)': ") else {
                throw ValidationError("the key \(keyFile) is encrypted and there is no terminal to ask its passphrase on: give it with --passphrase-file FILE")
            }
            passphrase = typed
        }
        let password = try passwordFile.map { try SignInOptions.firstLine(of: $0, option: "--password-file") }
        let agent = environment["SSH_AUTH_SOCK"].flatMap { $0.isEmpty ? nil : $0 }
        return SSHSignIn(user: address.user, agentSocket: agent, keyFile: keyFile, passphrase: passphrase, password: password,
                         knownHostsFile: knownHosts.map(absolutePath) ?? home + "/.ssh/known_hosts")
    }

    /// The secrets the background mount is handed on a pipe (never on its command line), or nil
    /// when there are none.
    static func secretsText(of signIn: SSHSignIn) -> String? {
        guard signIn.passphrase != nil || signIn.password != nil else { return nil }
        let secrets = Secrets(passphrase: signIn.passphrase, password: signIn.password)
        return (try? JSONEncoder().encode(secrets)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// `signIn` with the secrets `text` (from `secretsText`) holds.
    static func takeSecrets(_ text: String, into signIn: inout SSHSignIn) {
        guard let secrets = try? JSONDecoder().decode(Secrets.self, from: Data(text.utf8)) else { return }
        signIn.passphrase = secrets.passphrase
        signIn.password = secrets.password
    }

    private struct Secrets: Codable {
        var passphrase: String?
        var password: String?
    }
}
