import Foundation
import RangeFSCore

/// How `mount` starts the mount that runs in the background: the same command with the
/// settings as arguments, and what must not show in `ps` (a URL's credentials, headers, a
/// Subsonic password, SSH secrets) on private pipes, each read once.
extension MountCommand {
    /// Starts it and returns once it says it is mounted (or why it is not).
    func startBackgroundMount(loader: ManifestLoader, mountPath: String, mountOptions: [String],
                              sftp: (address: SFTPAddress, signIn: SSHSignIn)?, bucket: BucketSource?,
                              subsonic: SubsonicSource?) throws {
        var privateInputs: [BackgroundLaunch.PrivateInput] = []
        var arguments = ["mount"]
        switch loader.location {
        case .file(let path):
            arguments += [path, mountPath]
        case .remote where bucket != nil || sftp != nil:
            arguments += [manifest, mountPath]
        case .remote where subsonic != nil:
            // The user as found here (--user or the address's); the password on a pipe.
            arguments += [manifest, mountPath, "--user", subsonic!.user, "--password-fd", "6"]
            privateInputs.append(BackgroundLaunch.PrivateInput(descriptor: 6, text: subsonic!.password))
        case .remote(let url):
            let shown = Self.shownOnCommandLine(url)
            arguments += [shown, mountPath]
            if shown != url.absoluteString {
                privateInputs.append(BackgroundLaunch.PrivateInput(descriptor: 5, text: url.absoluteString))
                arguments += ["--manifest-fd", "5"]
            }
        }
        arguments += MountSettings.backgroundArguments(of: self) + ["--ready-fd", "3"]
        for option in mountOptions { arguments += ["-o", option] }
        if let secrets = sftp.flatMap({ SSHOptions.secretsText(of: $0.signIn) }) {
            arguments += ["--ssh-secrets-fd", "7"]
            privateInputs.append(BackgroundLaunch.PrivateInput(descriptor: 7, text: secrets))
        }
        if !loader.headers.isEmpty {
            arguments += ["--header-fd", "4"]
            privateInputs.append(BackgroundLaunch.PrivateInput(descriptor: 4, text: HeaderArguments.lines(loader.headers)))
        }
        try BackgroundLaunch.start(arguments: arguments, readyDescriptor: 3, privateInputs: privateInputs)
    }

    /// The manifest URL as `ps` may show it: without credentials or query.
    static func shownOnCommandLine(_ url: URL) -> String {
        var shown = url.redactedForDisplay
        if url.query != nil, let question = shown.firstIndex(of: "?") {
            shown = String(shown[..<question]) + "?***"
        }
        return shown
    }
}
