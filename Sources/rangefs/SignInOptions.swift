import ArgumentParser
import Foundation
import RangeFSCore
#if canImport(Glibc)
import Glibc
#endif

/// `--user` and `--password-file`: HTTP Basic credentials for a server that asks for them (a
/// WebDAV server, a protected web directory, a manifest by URL), with the password kept off the
/// command line: read from a file, else asked on the terminal. They become the `Authorization`
/// header, which goes where every `--header` goes (the origin of the URL given, and the
/// background mount through a pipe). `--netrc` and `--netrc-file` leave it to libcurl, which
/// signs each request in with the entry of its own host. Shared by `mount` and `manifest`.
struct SignInOptions: ParsableArguments {
    @Option(help: "A user name for HTTP Basic sign-in, or a Subsonic server's user (default: the user named in the URL, as in davs://USER@HOST/). The password comes from --password-file, else (Subsonic) $RANGEFS_PASSWORD, else it is asked on the terminal; never give it on the command line.")
    var user: String?

    @Option(help: "A file whose first line is the password for --user (or the URL's user); for an sftp:// server, the SSH password of the address's user.")
    var passwordFile: String?

    @Flag(help: "Sign in to each host with its entry in ~/.netrc (machine, login, password), as curl --netrc does.")
    var netrc = false

    @Option(help: "The same, with this netrc file instead of ~/.netrc.")
    var netrcFile: String?

    /// The netrc file the client reads, as an absolute path; nil for none. It must be there to
    /// be read: a typo would otherwise sign in nowhere, silently. (Checked when the command
    /// runs, not when it is parsed: the settings' tests parse every flag with an example value.)
    func netrcPath() throws -> String? {
        let path: String
        if let netrcFile {
            path = absolutePath(netrcFile)
        } else if netrc {
            path = (ProcessInfo.processInfo.environment["HOME"] ?? NSHomeDirectory()) + "/.netrc"
        } else {
            return nil
        }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw ValidationError("the netrc file \(path) cannot be read")
        }
        return path
    }

    /// `headers` with the `Authorization` these options make for `url`, or as they are when
    /// neither option is given and the URL names no user with a password file to go with it.
    /// `ask` reads a password from the terminal (the prompt given), or nil where there is none.
    func adding(to headers: [String: String], for url: URL?,
                ask: (String) -> String? = SignInOptions.askOnTerminal) throws -> [String: String] {
        guard user != nil || passwordFile != nil else { return headers }
        guard let name = user ?? url?.user(percentEncoded: false), !name.isEmpty else {
            throw ValidationError("--password-file needs a user: --user NAME, or a URL such as davs://NAME@HOST/")
        }
        guard !name.contains(":") else { throw ValidationError("--user cannot hold ':' (HTTP Basic sign-in)") }
        guard !headers.keys.contains(where: { $0.lowercased() == "authorization" }) else {
            throw ValidationError("--user and --header 'Authorization: …' both sign in: give one of them")
        }
        let password: String
        if let passwordFile {
            password = try Self.firstLine(of: passwordFile)
        } else if let typed = ask("Password for \(name)@\(url?.host ?? "the server"): ") {
            password = typed
        } else {
            throw ValidationError("--user \(name): no terminal to ask the password on; give it with --password-file FILE")
        }
        var signed = headers
        signed["Authorization"] = "Basic " + Data("\(name):\(password)".utf8).base64EncodedString()
        return signed
    }

    /// A bucket's requests are signed with its AWS keys: these options mean nothing there.
    func checkNotForBucket() throws {
        if user != nil || passwordFile != nil {
            throw ValidationError("--user and --password-file are for web servers: a bucket's requests are signed with its AWS keys")
        }
    }

    /// The first line of `--password-file`, for a server that takes the password itself (Subsonic).
    func passwordFromFile() throws -> String {
        guard let passwordFile else { throw ValidationError("no --password-file given") }
        return try Self.firstLine(of: passwordFile)
    }

    /// The password (or an SSH key's passphrase, `option`): the file's first line, without its line end.
    static func firstLine(of path: String, option: String = "--password-file") throws -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ValidationError("\(option) \(path) cannot be read")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ValidationError("\(option) \(path) is not UTF-8 text")
        }
        // "\r\n" is one Character: `isNewline` ends the line at either.
        let password = String(text.prefix { !$0.isNewline })
        guard !password.isEmpty else { throw ValidationError("\(option) \(path): its first line is empty") }
        return password
    }

    /// The password typed at the terminal, without echo; nil when there is no terminal.
    static func askOnTerminal(_ prompt: String) -> String? {
        let terminal = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard terminal >= 0 else { return nil }
        close(terminal)
        // getpass reads /dev/tty with echo off.
        guard let typed = getpass(prompt) else { return nil }
        return String(cString: typed)
    }
}
