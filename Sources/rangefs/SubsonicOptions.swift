import ArgumentParser
import Foundation
import RangeFSCore

/// How a `subsonic+https://USER@HOST/` address is mounted: its layout, and the password of the
/// user who signs in, from `--password-file`, else `$RANGEFS_PASSWORD`, else the terminal, never
/// the command line. The background mount gets it on a private pipe (`--password-fd`).
struct SubsonicOptions: ParsableArguments {
    @Option(help: "How a subsonic+https:// library is laid out: id3 (Artist/Album (Year)/NN Title.ext, from the tags) or folders (the server's own folders and file names).")
    var subsonicLayout: SubsonicAddress.Layout = .id3

    /// Set by the background launch: the pipe that carries the password.
    @Option(help: .hidden)
    var passwordFd: Int32?


    /// The server of a `subsonic+http(s)://` address with the user and password that sign in;
    /// nil when `argument` is no such address.
    func server(for argument: String, signIn: SignInOptions,
                environment: [String: String] = ProcessInfo.processInfo.environment,
                ask: (String) -> String? = SignInOptions.askOnTerminal) throws -> SubsonicSource? {
        let address: SubsonicAddress?
        do {
            address = try SubsonicAddress.parse(argument)
        } catch {
            throw CommandFailure("\(error)")
        }
        guard let address else {
            if subsonicLayout != .id3 {
                throw ValidationError("--subsonic-layout is for subsonic+https:// addresses (got '\(argument)')")
            }
            return nil
        }
        guard !signIn.netrc, signIn.netrcFile == nil else {
            throw ValidationError("--netrc signs in with HTTP Basic: a Subsonic server takes its user and password from --user and --password-file")
        }
        guard let user = signIn.user ?? address.user, !user.isEmpty else {
            throw ValidationError("a Subsonic server needs a user: subsonic+https://USER@HOST/ or --user NAME")
        }
        let password: String
        if let passwordFd {
            password = try BackgroundLaunch.readPrivateInput(from: passwordFd)
        } else if signIn.passwordFile != nil {
            password = try signIn.passwordFromFile()
        } else if let given = environment[SubsonicAddress.passwordVariable], !given.isEmpty {
            password = given
        } else if let typed = ask("Password for \(user)@\(address.base.host ?? "the server"): ") {
            password = typed
        } else {
            throw ValidationError("no password for \(user): give it with --password-file FILE or $\(SubsonicAddress.passwordVariable) (there is no terminal to ask on)")
        }
        return SubsonicSource(address: address, layout: subsonicLayout, user: user, password: password)
    }
}

/// A Subsonic library to list and read, and how its user signs in.
struct SubsonicSource {
    var address: SubsonicAddress
    var layout: SubsonicAddress.Layout
    var user: String
    /// Handed to the background mount on a private pipe, and to nothing else.
    var password: String

    var rootURL: URL { address.rootURL(layout) }
    var signIn: SubsonicSignIn { SubsonicSignIn(address: address, user: user, password: password) }
}
