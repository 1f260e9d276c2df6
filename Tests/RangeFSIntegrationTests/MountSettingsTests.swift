import ArgumentParser
import Foundation
import Testing
@testable import rangefs
import RangeFSCore

/// The one list of mount settings: every flag of `rangefs mount` that is a setting has a row,
/// and every row is a flag, an `-o` key, and arguments that hand its value to the background
/// mount process unchanged. No mount: these drive the command-line parser only.
@Suite("Mount settings")
struct MountSettingsTests {
    static let placeholders = ["/manifest", "/mountpoint"]

    /// Flags of `rangefs mount` that are not settings: repeatable or secret (`--header`,
    /// `-o` itself; `--user` and `--password-file`, which become an `Authorization` header, and
    /// `user` is mount(8)'s; `--passphrase-file`, read by the launching command and handed on
    /// through a pipe), the positive form of `--no-passthrough`, and the built-in help.
    static let notSettings: Set<String> = ["--header", "-o", "--user", "--password-file", "--passphrase-file", "--passthrough", "-f", "--help", "-h"]

    /// The visible flags of `rangefs mount`, as the argument parser describes them.
    static func declaredFlags() throws -> Set<String> {
        let json = try JSONSerialization.jsonObject(with: Data(MountCommand._dumpHelp().utf8))
        let command = try #require((json as? [String: Any])?["command"] as? [String: Any])
        let arguments = try #require(command["arguments"] as? [[String: Any]])
        var flags: Set<String> = []
        for argument in arguments where argument["shouldDisplay"] as? Bool == true {
            for name in argument["names"] as? [[String: Any]] ?? [] {
                guard let kind = name["kind"] as? String, let text = name["name"] as? String else { continue }
                flags.insert((kind == "short" ? "-" : "--") + text)
            }
        }
        return flags
    }

    /// A value the setting accepts: its `-o` example, or for a file that must exist, a file.
    static func sample(for setting: MountSetting, readableFile: String) -> String? {
        guard case .value(let example) = setting.kind else { return nil }
        return setting.flag == "--ca-file" ? readableFile : example
    }

    static func temporaryFile() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("settings-\(UUID().uuidString).pem").path
        try Data("not checked when parsing\n".utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test("Every flag of rangefs mount is a setting in the list or named as not one, and every setting is a flag")
    func everyFlagHasARow() throws {
        let declared = try Self.declaredFlags()
        let rows = Set(MountSettings.all.map(\.flag))
        #expect(rows.count == MountSettings.all.count, "no setting listed twice")
        #expect(declared.subtracting(Self.notSettings) == rows,
                "flags without a row: \(declared.subtracting(Self.notSettings).subtracting(rows)); rows without a flag: \(rows.subtracting(declared))")
        #expect(Set(MountSettings.all.map(\.key)).count == MountSettings.all.count, "no -o key shared")
        #expect(MountCommand.helpMessage().contains("settings of the flags below: format, cache_dir,"),
                "the help names the -o keys: \(MountSettings.keyList)")
    }

    @Test("Every setting reaches the background mount process with its value, which parses back to the same arguments")
    func everySettingRoundTripsToTheBackgroundProcess() throws {
        let file = try Self.temporaryFile()
        defer { try? FileManager.default.removeItem(atPath: file) }
        let defaults = MountSettings.backgroundArguments(of: try MountCommand.parse(Self.placeholders))
        for setting in MountSettings.all where setting.flag != "--foreground" {
            let given = Self.sample(for: setting, readableFile: file).map { [setting.flag, $0] } ?? [setting.flag]
            let command = try MountCommand.parse(Self.placeholders + given)
            let background = MountSettings.backgroundArguments(of: command)
            #expect(setting.backgroundArguments(command) == given, "\(setting.flag) reaches the background process as given")
            #expect(Self.contains(background, given), "\(given) among \(background)")
            let reparsed = try MountCommand.parse(Self.placeholders + background)
            #expect(MountSettings.backgroundArguments(of: reparsed) == background, "\(setting.flag): \(background)")
            if setting.isSwitch {
                #expect(!Self.contains(defaults, given), "\(setting.flag) is off unless given: \(defaults)")
            }
        }
    }

    @Test("Every setting is also an -o key, written with _ or -, that means the same as its flag")
    func everySettingIsAnOptionKey() throws {
        let file = try Self.temporaryFile()
        defer { try? FileManager.default.removeItem(atPath: file) }
        for setting in MountSettings.all {
            let value = Self.sample(for: setting, readableFile: file)
            let byFlag = try MountCommand.parse(Self.placeholders + [setting.flag] + (value.map { [$0] } ?? []))
            for key in [setting.key, setting.key.replacingOccurrences(of: "_", with: "-")] {
                let option = value.map { "\(key)=\($0)" } ?? key
                let normalized = try MountInvocation.normalize(Self.placeholders + ["-o", option], subcommands: ["mount"])
                let byOption = try MountCommand.parse(Array(normalized.dropFirst()))
                #expect(MountSettings.backgroundArguments(of: byOption) == MountSettings.backgroundArguments(of: byFlag),
                        "-o \(option) means \(setting.flag): \(normalized)")
                #expect(byOption.foreground == byFlag.foreground, "-o \(option): \(normalized)")
            }
        }
    }

    @Test("-o foreground keeps the mount in front; the background process is never told to stay in front")
    func foregroundIsNeverPassedOn() throws {
        let normalized = try MountInvocation.normalize(Self.placeholders + ["-o", "foreground"], subcommands: ["mount"])
        let command = try MountCommand.parse(Array(normalized.dropFirst()))
        #expect(command.foreground)
        #expect(!MountSettings.backgroundArguments(of: command).contains("--foreground"))
    }

    @Test("Sizes, durations, policies and levels are parsed once into their types, and a value that does not parse is refused with the option's name and what it takes")
    func typedValues() throws {
        let command = try MountCommand.parse(Self.placeholders + [
            "--block-size", "1M", "--max-rate", "2M", "--cache-max-size", "20G", "--dir-cache-time", "30s",
            "--prefetch", "opened", "--log-level", "debug", "--metrics-address", "9464", "--subsonic-layout", "folders"])
        #expect(command.blockSize.bytes == 1 << 20 && command.maxRate?.bytes == 2 << 20 && command.cacheMaxSize?.bytes == 20 << 30)
        #expect(command.dirCacheTime.duration == .seconds(30) && command.prefetch == .opened && command.logLevel == .debug)
        #expect(command.metricsAddress?.description == "127.0.0.1:9464" && command.subsonicOptions.subsonicLayout == .folders)
        let defaults = try MountCommand.parse(Self.placeholders)
        #expect(defaults.blockSize.bytes == 256 << 10 && defaults.dirCacheTime.duration == .seconds(300))
        #expect(defaults.prefetch == .all && defaults.logLevel == .info && defaults.maxRate == nil)
        let refusals: [(arguments: [String], message: String)] = [
            (["--block-size", "12Q"], "'12Q' is invalid for '--block-size <size>'"),
            (["--block-size", "1G"], "--block-size must be between 4K and 64M"),
            (["--max-rate", "0"], "--max-rate must be a positive number"),
            (["--cache-min-free", "lots"], "'lots' is invalid for '--cache-min-free <size>'"),
            (["--dir-cache-time", "5x"], "'5x' is invalid for '--dir-cache-time <duration>'"),
            (["--prefetch", "sometimes"], "Please provide one of 'all', 'opened' or 'none'"),
            (["--log-level", "loud"], "'loud' is invalid for '--log-level <log-level>'"),
            (["--metrics-address", "abc:"], "the port must be a number"),
            (["--subsonic-layout", "tree"], "'tree' is invalid for '--subsonic-layout"),
        ]
        for refusal in refusals {
            do {
                _ = try MountCommand.parse(Self.placeholders + refusal.arguments)
                Issue.record("\(refusal.arguments) was taken")
            } catch {
                let message = MountCommand.message(for: error)
                #expect(message.contains(refusal.message), "\(refusal.arguments): \(message)")
            }
        }
    }

    /// Whether `arguments` holds `part` as consecutive elements.
    static func contains(_ arguments: [String], _ part: [String]) -> Bool {
        guard part.count <= arguments.count else { return false }
        return (0...(arguments.count - part.count)).contains { Array(arguments[$0..<($0 + part.count)]) == part }
    }
}

/// `--user` and `--password-file`: HTTP Basic credentials that never sit on the command line.
@Suite("Signing in")
struct SignInOptionsTests {
    static func options(_ arguments: [String]) throws -> SignInOptions {
        try SignInOptions.parse(arguments)
    }

    static func passwordFile(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("rangefs-password-\(UUID().uuidString)").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test("--user with --password-file makes the Authorization header from the file's first line")
    func fromFile() throws {
        let file = try Self.passwordFile("pa ss:word\nsecond line\n")
        defer { try? FileManager.default.removeItem(atPath: file) }
        let headers = try Self.options(["--user", "me", "--password-file", file])
            .adding(to: ["X-Other": "1"], for: URL(string: "https://host/dav/"), ask: { _ in Issue.record("asked"); return nil })
        #expect(headers["Authorization"] == "Basic " + Data("me:pa ss:word".utf8).base64EncodedString())
        #expect(headers["X-Other"] == "1")
    }

    @Test("the URL's user is taken when --user is not given; without a file the password is asked, and a missing terminal is an error")
    func urlUserAndPrompt() throws {
        let asked = try Self.options([]).adding(to: [:], for: URL(string: "davs://alice@host/")) { _ in "typed" }
        #expect(asked == [:], "nothing given, nothing made: the URL's user alone is libcurl's")
        let prompted = try Self.options(["--user", "bob"]).adding(to: [:], for: URL(string: "https://host/")) { prompt in
            #expect(prompt.contains("bob@host"))
            return "typed"
        }
        #expect(prompted["Authorization"] == "Basic " + Data("bob:typed".utf8).base64EncodedString())
        let file = try Self.passwordFile("pw\r\n")
        defer { try? FileManager.default.removeItem(atPath: file) }
        let fromURL = try Self.options(["--password-file", file]).adding(to: [:], for: URL(string: "https://alice@host/"))
        #expect(fromURL["Authorization"] == "Basic " + Data("alice:pw".utf8).base64EncodedString())
        #expect(throws: ValidationError.self) {
            try Self.options(["--user", "bob"]).adding(to: [:], for: nil) { _ in nil }
        }
    }

    @Test("a user with ':', no user at all, an Authorization header beside, and an unreadable or empty file are refused")
    func refusals() throws {
        let file = try Self.passwordFile("pw\n")
        let empty = try Self.passwordFile("\nnext\n")
        defer { try? FileManager.default.removeItem(atPath: file); try? FileManager.default.removeItem(atPath: empty) }
        let url = URL(string: "https://host/")
        #expect(throws: ValidationError.self) { try Self.options(["--user", "a:b", "--password-file", file]).adding(to: [:], for: url) }
        #expect(throws: ValidationError.self) { try Self.options(["--password-file", file]).adding(to: [:], for: url) }
        #expect(throws: ValidationError.self) {
            try Self.options(["--user", "me", "--password-file", file]).adding(to: ["authorization": "Bearer x"], for: url)
        }
        #expect(throws: ValidationError.self) { try Self.options(["--user", "me", "--password-file", "/no/such/file"]).adding(to: [:], for: url) }
        #expect(throws: ValidationError.self) { try Self.options(["--user", "me", "--password-file", empty]).adding(to: [:], for: url) }
    }

    @Test("--netrc-file names the file libcurl reads, as an absolute path; one that cannot be read is an error, not a silent nothing")
    func netrcFile() throws {
        let file = try Self.passwordFile("machine host login me password pw\n")
        defer { try? FileManager.default.removeItem(atPath: file) }
        #expect(try Self.options([]).netrcPath() == nil)
        #expect(try Self.options(["--netrc-file", file]).netrcPath() == file)
        #expect(throws: ValidationError.self) { try Self.options(["--netrc-file", "/no/such/netrc"]).netrcPath() }
    }
}

/// `--identity`, `--passphrase-file`, `--known-hosts` and `--password-file` for an `sftp://`
/// mount: the sign-in they make, and the secrets handed to the background mount on its pipe.
@Suite("SSH sign-in options")
struct SSHOptionsTests {
    private let address = try! SFTPAddress.parse("sftp://me@127.0.0.1:2222/srv/", localUser: "local")!

    @Test("the key, its passphrase from the file, the password and the known-hosts file are taken; nothing is asked")
    func fromFiles() throws {
        let passphrase = try SignInOptionsTests.passwordFile("phrase one\n")
        let password = try SignInOptionsTests.passwordFile("word two\n")
        defer {
            try? FileManager.default.removeItem(atPath: passphrase)
            try? FileManager.default.removeItem(atPath: password)
        }
        let options = try SSHOptions.parse(["--identity", passphrase, "--passphrase-file", passphrase, "--known-hosts", "/kh"])
        let signIn = try options.signIn(for: address, passwordFile: password, ask: { _ in Issue.record("asked"); return nil })
        #expect(signIn.user == "me" && signIn.keyFile == passphrase && signIn.knownHostsFile == "/kh")
        #expect(signIn.passphrase == "phrase one" && signIn.password == "word two")
    }

    @Test("the secrets go to the background mount and come back whole; none, no pipe")
    func secretsRoundTrip() throws {
        let given = SSHSignIn(user: "me", agentSocket: nil, keyFile: "/k", passphrase: "a \"quoted\"\nphrase", password: "p:w",
                              knownHostsFile: "/kh")
        let text = try #require(SSHOptions.secretsText(of: given))
        var taken = SSHSignIn(user: "me", agentSocket: nil, keyFile: "/k", knownHostsFile: "/kh")
        SSHOptions.takeSecrets(text, into: &taken)
        #expect(taken.passphrase == given.passphrase && taken.password == given.password)
        #expect(SSHOptions.secretsText(of: SSHSignIn(user: "me", agentSocket: nil, keyFile: nil, knownHostsFile: "/kh")) == nil)
    }
}
