import ArgumentParser
import Foundation
import RangeFSCore

extension MountCommand {
    /// The SFTP directory `argument` names and how to sign in to its server, or nil for any
    /// other argument. HTTP's own options mean nothing there and are refused.
    func sftpSource(_ argument: String) throws -> (address: SFTPAddress, signIn: SSHSignIn)? {
        let address: SFTPAddress?
        do {
            address = try SFTPAddress.parse(argument, localUser: ProcessInfo.processInfo.environment["USER"] ?? NSUserName())
        } catch {
            throw CommandFailure("\(error)")
        }
        guard let address else {
            if sshOptions.isGiven { throw ValidationError("--identity, --passphrase-file and --known-hosts are for sftp:// addresses") }
            return nil
        }
        guard format == .auto else { throw CommandFailure("--format does not go with an sftp:// address") }
        guard headers.isEmpty, signIn.user == nil, !signIn.netrc, signIn.netrcFile == nil else {
            throw ValidationError("--header, --user and --netrc are for web servers: an sftp:// mount signs in as USER of the address, with the ssh-agent, a key (--identity) or --password-file")
        }
        let secrets = try sshSecretsFd.map { try BackgroundLaunch.readPrivateInput(from: $0) }
        var signIn = try sshOptions.signIn(for: address, passwordFile: secrets == nil ? signIn.passwordFile : nil,
                                          askPassphrase: secrets == nil)
        if let secrets { SSHOptions.takeSecrets(secrets, into: &signIn) }
        return (address, signIn)
    }
}
