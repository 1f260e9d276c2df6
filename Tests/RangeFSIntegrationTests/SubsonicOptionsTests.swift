import ArgumentParser
import Foundation
import Testing
@testable import rangefs

/// Where a Subsonic mount's user and password come from, and what is refused, through the
/// command-line parser alone: no server, no mount.
@Suite("Subsonic options")
struct SubsonicOptionsTests {
    private static func parsed(_ arguments: [String]) throws -> (SubsonicOptions, SignInOptions) {
        let subsonic = try SubsonicOptions.parse(arguments.filter { $0.hasPrefix("--subsonic") || $0 == "id3" || $0 == "folders" })
        let signIn = try SignInOptions.parse(arguments.filter { !$0.hasPrefix("--subsonic") && $0 != "id3" && $0 != "folders" })
        return (subsonic, signIn)
    }

    private static func passwordFile(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("subsonic-\(UUID().uuidString)").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    private static func neverAsk(_ prompt: String) -> String? {
        Issue.record("asked on the terminal: \(prompt)")
        return nil
    }

    @Test("the password comes from --password-file, else RANGEFS_PASSWORD, else the terminal; the user from the address or --user")
    func passwordAndUser() throws {
        let file = try Self.passwordFile("from file\nsecond line\n")
        defer { try? FileManager.default.removeItem(atPath: file) }
        let (options, signIn) = try Self.parsed(["--password-file", file])
        let fromFile = try #require(try options.server(for: "subsonic+https://alice@music.example/", signIn: signIn,
                                                       environment: ["RANGEFS_PASSWORD": "from env"], ask: Self.neverAsk))
        #expect(fromFile.password == "from file" && fromFile.user == "alice" && fromFile.layout == .id3)
        #expect(fromFile.rootURL.absoluteString == "https://music.example/id3/")

        let (plain, noFile) = try Self.parsed(["--user", "bob", "--subsonic-layout", "folders"])
        let fromEnvironment = try #require(try plain.server(for: "subsonic+http://alice@music.example:4533/", signIn: noFile,
                                                            environment: ["RANGEFS_PASSWORD": "from env"], ask: Self.neverAsk))
        #expect(fromEnvironment.password == "from env" && fromEnvironment.user == "bob" && fromEnvironment.layout == .folders)
        #expect(fromEnvironment.rootURL.absoluteString == "http://music.example:4533/folders/")

        let typed = try #require(try plain.server(for: "subsonic+https://music.example/", signIn: noFile, environment: [:]) { prompt in
            #expect(prompt.contains("bob@music.example"))
            return "typed"
        })
        #expect(typed.password == "typed")
    }

    @Test("no user, no password without a terminal, --netrc, a layout unknown or given without a Subsonic address: refused, saying what to give")
    func refusals() throws {
        let (options, signIn) = try Self.parsed([])
        #expect(throws: ValidationError.self) {
            try options.server(for: "subsonic+https://music.example/", signIn: signIn, environment: ["RANGEFS_PASSWORD": "x"], ask: Self.neverAsk)
        }
        do {
            _ = try options.server(for: "subsonic+https://alice@music.example/", signIn: signIn, environment: [:]) { _ in nil }
            Issue.record("mounted without a password")
        } catch let error as ValidationError {
            #expect(error.message.contains("--password-file") && error.message.contains("RANGEFS_PASSWORD"))
        }
        let (netrc, netrcSignIn) = try Self.parsed(["--netrc"])
        #expect(throws: ValidationError.self) {
            try netrc.server(for: "subsonic+https://alice@music.example/", signIn: netrcSignIn, environment: ["RANGEFS_PASSWORD": "x"], ask: Self.neverAsk)
        }
        #expect(throws: (any Error).self) { try SubsonicOptions.parse(["--subsonic-layout", "genres"]) }
        let (folders, plain) = try Self.parsed(["--subsonic-layout", "folders"])
        #expect(throws: ValidationError.self) { try folders.server(for: "https://example.com/music/", signIn: plain, ask: Self.neverAsk) }
        #expect(try options.server(for: "https://example.com/music/", signIn: signIn, ask: Self.neverAsk) == nil)
        #expect(throws: CommandFailure.self) {
            try options.server(for: "subsonic+https://alice:pw@music.example/", signIn: signIn, ask: Self.neverAsk)
        }
    }
}
