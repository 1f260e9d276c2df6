import Foundation
import Testing
@testable import RangeFSCore

/// A manifest that must be rejected, and the exact message it must produce.
struct BadManifestCase: Sendable, CustomTestStringConvertible {
    let label: String
    let text: String
    let message: String

    var testDescription: String { label }
}

private let badManifests: [BadManifestCase] = [
    BadManifestCase(
        label: "unparseable URL",
        text: "http://host:port/a.mp3",
        message: "m.txt:1: malformed URL 'http://host:port/a.mp3'"),
    BadManifestCase(
        label: "URL without host",
        text: "http:///a.mp3",
        message: "m.txt:1: malformed URL 'http:///a.mp3': no host"),
    BadManifestCase(
        label: "URL without scheme",
        text: "example.com/a.mp3",
        message: "m.txt:1: malformed URL 'example.com/a.mp3': no scheme (expected http:// or https://)"),
    BadManifestCase(
        label: "space instead of TAB",
        text: "song.mp3 http://h/a.mp3",
        message: "m.txt:1: malformed URL 'song.mp3 http://h/a.mp3': contains a space (write it as %20; a path and its URL are separated by a TAB)"),
    BadManifestCase(
        label: "ftp scheme",
        text: "# music\n\nftp://h/a.mp3",
        message: "m.txt:3: scheme 'ftp' is not supported (only http and https)"),
    BadManifestCase(
        label: "file scheme",
        text: "x\tfile:///etc/passwd",
        message: "m.txt:1: scheme 'file' is not supported (only http and https)"),
    BadManifestCase(
        label: "duplicate name from URLs",
        text: "http://h/a.mp3\nhttp://mirror/a.mp3",
        message: "m.txt:2: duplicate path 'a.mp3' (first defined on line 1)"),
    BadManifestCase(
        label: "duplicate path in tab form",
        text: "x/a.mp3\thttp://h/1\n# between\n\nx/a.mp3\thttp://h/2",
        message: "m.txt:4: duplicate path 'x/a.mp3' (first defined on line 1)"),
    BadManifestCase(
        label: "parent directory component",
        text: "a/../b.mp3\thttp://h/b.mp3",
        message: "m.txt:1: path 'a/../b.mp3' contains '..'"),
    BadManifestCase(
        label: "leading parent directory",
        text: "../b.mp3\thttp://h/b.mp3",
        message: "m.txt:1: path '../b.mp3' contains '..'"),
    BadManifestCase(
        label: "current directory component",
        text: "a/./b.mp3\thttp://h/b.mp3",
        message: "m.txt:1: path 'a/./b.mp3' contains '.'"),
    BadManifestCase(
        label: "absolute path",
        text: "/etc/b.mp3\thttp://h/b.mp3",
        message: "m.txt:1: path '/etc/b.mp3' is absolute (paths are relative to the mount)"),
    BadManifestCase(
        label: "empty component",
        text: "a//b.mp3\thttp://h/b.mp3",
        message: "m.txt:1: path 'a//b.mp3' has an empty component"),
    BadManifestCase(
        label: "trailing slash",
        text: "music/\thttp://h/b.mp3",
        message: "m.txt:1: path 'music/' ends with '/'"),
    BadManifestCase(
        label: "URL ending in slash",
        text: "http://h/podcasts/",
        message: "m.txt:1: cannot name an entry from URL 'http://h/podcasts/' (give a path: path<TAB>url)"),
    BadManifestCase(
        label: "URL without path",
        text: "https://h",
        message: "m.txt:1: cannot name an entry from URL 'https://h' (give a path: path<TAB>url)"),
    BadManifestCase(
        label: "name from URL decodes to a slash",
        text: "http://h/a%2Fb.mp3",
        message: "m.txt:1: cannot name an entry from URL 'http://h/a%2Fb.mp3': name 'a/b.mp3' contains '/' (give a path: path<TAB>url)"),
    BadManifestCase(
        label: "name from URL decodes to dot-dot",
        text: "http://h/%2E%2E",
        message: "m.txt:1: cannot name an entry from URL 'http://h/%2E%2E': name '..' contains '..' (give a path: path<TAB>url)"),
    BadManifestCase(
        label: "name from URL is not UTF-8",
        text: "http://h/a%FF.mp3",
        message: "m.txt:1: cannot name an entry from URL 'http://h/a%FF.mp3': its last segment is not valid UTF-8 once decoded (give a path: path<TAB>url)"),
    BadManifestCase(
        label: "control character in path",
        text: "a\u{01}b.mp3\thttp://h/b.mp3",
        message: "m.txt:1: path 'a\\x01b.mp3' contains a control character (0x01)"),
    BadManifestCase(
        label: "delete character in path",
        text: "ab\u{7F}.mp3\thttp://h/b.mp3",
        message: "m.txt:1: path 'ab\\x7F.mp3' contains a control character (0x7F)"),
    BadManifestCase(
        label: "control character in name from URL",
        text: "http://h/a%0Ab.mp3",
        message: "m.txt:1: cannot name an entry from URL 'http://h/a%0Ab.mp3': name 'a\\x0Ab.mp3' contains a control character (0x0A) (give a path: path<TAB>url)"),
    BadManifestCase(
        label: "component longer than NAME_MAX",
        text: String(repeating: "x", count: 256) + "\thttp://h/b.mp3",
        message: "m.txt:1: path '\(String(repeating: "x", count: 256))' has a component of 256 bytes (at most 255)"),
    BadManifestCase(
        label: "file used as a directory later",
        text: "a\thttp://h/1\na/b.mp3\thttp://h/2",
        message: "m.txt:2: path 'a/b.mp3' needs 'a' to be a directory, but line 1 defines it as a file"),
    BadManifestCase(
        label: "directory used as a file later",
        text: "a/b/c.mp3\thttp://h/1\na/b\thttp://h/2",
        message: "m.txt:2: path 'a/b' is a file here, but line 1 uses it as a directory ('a/b/c.mp3')"),
    BadManifestCase(
        label: "two TABs",
        text: "a\tb\thttp://h/1",
        message: "m.txt:1: expected 'path<TAB>url' but the line has 2 TABs"),
    BadManifestCase(
        label: "first error wins",
        text: "http://h/ok.mp3\nftp://h/x\n/abs\thttp://h/y",
        message: "m.txt:2: scheme 'ftp' is not supported (only http and https)"),
]

@Test(arguments: badManifests)
func badManifestIsRejectedWithExactMessage(_ bad: BadManifestCase) {
    #expect(throws: ManifestError.self) { try Manifest.parsePlainText(bad.text, source: "m.txt") }
    do {
        _ = try Manifest.parsePlainText(bad.text, source: "m.txt")
    } catch {
        #expect(error.description == bad.message)
    }
}

@Test func errorCarriesSourceLineAndReason() {
    do {
        _ = try Manifest.parsePlainText("\n\nftp://h/x\n", source: "media.txt")
        Issue.record("expected an error")
    } catch {
        #expect(error == ManifestError(source: "media.txt", line: 3, reason: "scheme 'ftp' is not supported (only http and https)"))
        #expect(error.description == "media.txt:3: scheme 'ftp' is not supported (only http and https)")
    }
}

@Test(arguments: [
    "http://user:secret@/a.mp3",                      // no host
    "http://user:secret@host:port/a.mp3",             // unparseable
    "http://user:secret@h/podcasts/",                 // cannot name
    "http://user:se cret@h/a.mp3",                    // space
    "http://user:secret\u{01}@h/a.mp3",               // control character
    "ftp://user:secret@h/a.mp3",                      // scheme
    "http://user:secret@h/a.mp3\nhttp://user:secret@h/a.mp3",  // duplicate
    "user:secret@h/a.mp3",                            // no scheme
])
func credentialsNeverAppearInMessages(_ text: String) {
    do {
        _ = try Manifest.parsePlainText(text, source: "m.txt")
        Issue.record("expected an error")
    } catch {
        #expect(!error.description.contains("secret"), "\(error.description)")
    }
}

@Test func credentialMessagesShowTheRedactedURL() throws {
    let noHost = #expect(throws: ManifestError.self) {
        try Manifest.parsePlainText("http://user:secret@/a.mp3", source: "m.txt")
    }
    #expect(noHost?.reason == "malformed URL 'http://***@/a.mp3': no host")
    let unnamed = #expect(throws: ManifestError.self) {
        try Manifest.parsePlainText("https://user:secret@h/dir/", source: "m.txt")
    }
    #expect(unnamed?.reason == "cannot name an entry from URL 'https://***@h/dir/' (give a path: path<TAB>url)")
}

@Test func redactedForDisplayHidesTheUserinfoAndEveryQueryValue() throws {
    #expect(try #require(URL(string: "https://user:secret@h/a.mp3")).redactedForDisplay == "https://***@h/a.mp3")
    #expect(try #require(URL(string: "https://token@h:8443/a.mp3?x=1")).redactedForDisplay == "https://***@h:8443/a.mp3?x=***")
    #expect(try #require(URL(string: "https://h/a.mp3")).redactedForDisplay == "https://h/a.mp3")
    // An "@" in the path is not a credential.
    #expect(try #require(URL(string: "https://h/@bob/a.mp3")).redactedForDisplay == "https://h/@bob/a.mp3")
    // Every value, whatever its name; the names stay. A part without a name is hidden whole.
    let signed = try #require(URL(string: "https://b.s3.example/k.bin?X-Amz-Credential=AKIA%2F1&X-Amz-Signature=ab12&sig=s&token=t&list-type=2&empty=&&bare"))
    #expect(signed.redactedForDisplay == "https://b.s3.example/k.bin?X-Amz-Credential=***&X-Amz-Signature=***&sig=***&token=***&list-type=***&empty=&&***")
    #expect(try #require(URL(string: "https://h/a.mp3#access_token=abc")).redactedForDisplay == "https://h/a.mp3#***")
    #expect(try #require(URL(string: "https://u:p@h/a?token=abc#f")).redactedForDisplay == "https://***@h/a?token=***#***")
    #expect(try #require(URL(string: "https://h/a.mp3")).carriesSecret == false)
    #expect(try #require(URL(string: "https://h/a.mp3?token=x")).carriesSecret)
    // Text that did not parse is redacted the same way.
    #expect(CredentialRedactor.redactingLoosely("ht tp://u:p@h/a?token=abc") == "ht tp://***@h/a?token=***")
}

@Test func emptyManifestIsValid() throws {
    #expect(try Manifest.parsePlainText("", source: "m.txt").entries.isEmpty)
    #expect(try Manifest.parsePlainText("# nothing yet\n\n   \n\t# indented comment\n", source: "m.txt").entries.isEmpty)
}

@Test func urlLinesAreNamedAfterTheirLastSegment() throws {
    let manifest = try Manifest.parsePlainText("""
        # podcasts
        http://h/a/My%20Song.mp3

        https://h/feed/ep%C3%A9%201.mp3?token=1#t=10
        https://h/caf%C3%A9.ogg
        http://h/M\u{FC}sik.flac
        """, source: "m.txt")
    #expect(manifest.source == "m.txt")
    #expect(manifest.entries.map(\.path.description) == ["My Song.mp3", "epé 1.mp3", "café.ogg", "Müsik.flac"])
    #expect(manifest.entries.map(\.line) == [2, 4, 5, 6])
    #expect(manifest.entries[0].url.absoluteString == "http://h/a/My%20Song.mp3")
    #expect(manifest.entries[0].size == nil)
    #expect(manifest.entries[0].sha256 == nil)
    #expect(manifest.entries[0].headers.isEmpty)
}

@Test func tabFormGivesPathsAndNestedDirectories() throws {
    let manifest = try Manifest.parsePlainText(
        "  music/rock/a.mp3 \t http://h/1.mp3  \nmusic/b.mp3\thttps://user:pw@h/2.mp3\n",
        source: "m.txt")
    #expect(manifest.entries.map(\.path.components) == [["music", "rock", "a.mp3"], ["music", "b.mp3"]])
    #expect(manifest.entries.map(\.url.absoluteString) == ["http://h/1.mp3", "https://user:pw@h/2.mp3"])
    #expect(manifest.entries.map(\.line) == [1, 2])
}

@Test func crlfAndByteOrderMarkAreAccepted() throws {
    let manifest = try Manifest.parsePlainText(
        "\u{FEFF}# list\r\nhttp://h/a.mp3\r\n\r\nb/c.mp3\thttp://h/c.mp3\r\n",
        source: "m.txt")
    #expect(manifest.entries.map(\.path.description) == ["a.mp3", "b/c.mp3"])
    #expect(manifest.entries.map(\.line) == [2, 4])
    #expect(manifest.entries.map(\.url.absoluteString) == ["http://h/a.mp3", "http://h/c.mp3"])
}

@Test func lastLineWithoutNewlineCounts() throws {
    let manifest = try Manifest.parsePlainText("http://h/a.mp3\nhttp://h/b.mp3", source: "m.txt")
    #expect(manifest.entries.map(\.path.description) == ["a.mp3", "b.mp3"])
}

@Test func namesDifferingOnlyInNormalizationAreDistinct() throws {
    // Linux compares names byte for byte: NFC "é" and NFD "e\u{301}" are two files.
    let manifest = try Manifest.parsePlainText("caf\u{E9}\thttp://h/1\ncafe\u{301}\thttp://h/2", source: "m.txt")
    #expect(manifest.entries.count == 2)
}

@Test func entryPathValidation() throws {
    #expect(try EntryPath(validating: "a/b c/d.mp3").components == ["a", "b c", "d.mp3"])
    #expect(try EntryPath(validating: "a/b c/d.mp3").description == "a/b c/d.mp3")
    #expect(try EntryPath(validating: "...").components == ["..."])
    #expect(try EntryPath(validating: String(repeating: "é", count: 127)).components.count == 1)
    for bad in ["", "/x", "a/../b", "a//b", "a/", ".", "..", "a\0b", String(repeating: "é", count: 128)] {
        #expect(throws: EntryPathError.self, "\(bad.debugDescription)") { try EntryPath(validating: bad) }
    }
    #expect(throws: EntryPathError(reason: "path is empty")) { try EntryPath(validating: "") }
}

@Test func loadReadsAFileAndNamesItInMessages() throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("manifest-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }

    let good = directory.appendingPathComponent("media.txt")
    try Data("http://h/a.mp3\n".utf8).write(to: good)
    let manifest = try Manifest.load(path: good.path)
    #expect(manifest.entries.map(\.path.description) == ["a.mp3"])
    #expect(manifest.source == good.path)

    let bad = directory.appendingPathComponent("bad.txt")
    try Data("http://h/a.mp3\nftp://h/b.mp3\n".utf8).write(to: bad)
    let badError = #expect(throws: ManifestError.self) { try Manifest.load(path: bad.path) }
    #expect(badError?.line == 2)

    let missing = directory.appendingPathComponent("missing.txt").path
    let missingError = #expect(throws: ManifestError.self) { try Manifest.load(path: missing) }
    #expect(missingError?.description == "\(missing): cannot read manifest: no such file")

    let notUTF8 = directory.appendingPathComponent("latin1.txt")
    try Data([0x68, 0x0A, 0x63, 0x61, 0x66, 0xE9, 0x0A]).write(to: notUTF8)
    let encodingError = #expect(throws: ManifestError.self) { try Manifest.load(path: notUTF8.path) }
    #expect(encodingError?.line == 2)
    #expect(encodingError?.reason == "not valid UTF-8 text")

    let directoryError = #expect(throws: ManifestError.self) { try Manifest.load(path: directory.path) }
    #expect(directoryError?.description == "\(directory.path): cannot read manifest: it is a directory")
}

@Test func textLinesSplitLikeTheFormatSays() {
    func lines(_ text: String) -> [String] { TextLines(text).map(String.init) }
    #expect(lines("") == [])
    #expect(lines("a") == ["a"])
    #expect(lines("a\n") == ["a"])
    #expect(lines("a\n\n") == ["a", ""])
    #expect(lines("\n") == [""])
    #expect(lines("a\r\nb\r\n") == ["a", "b"])
    #expect(lines("a\nb") == ["a", "b"])
    #expect(lines("\r") == [])
    #expect(lines("a\n\r") == ["a"])
    #expect(lines("\u{FEFF}a\n\u{FEFF}b") == ["a", "\u{FEFF}b"])
    // A combining mark after the newline stays on its own line.
    #expect(lines("e\n\u{301}x") == ["e", "\u{301}x"])
    #expect(TextLines("a\nb\n").countUpperBound >= 2)
    #expect(TextLines("").first == nil)
    #expect(TextLines("\n\nx").first == "")
}

@Test func entryDetailsReadBackAndCompareByValue() throws {
    let path = try EntryPath(validating: "a.mp3")
    let url = URL(string: "http://h/a.mp3")!
    var entry = ManifestEntry(path: path, url: url, line: 1)
    #expect(entry.size == nil && entry.sha256 == nil && entry.headers.isEmpty && entry.modified == nil)
    let copy = entry
    entry.headers = ["X-Token": "1"]
    entry.size = 10
    #expect(entry.headers == ["X-Token": "1"])
    #expect(entry.size == 10)
    #expect(copy.headers.isEmpty && copy.size == nil)
    #expect(entry == ManifestEntry(path: path, url: url, size: 10, headers: ["X-Token": "1"], line: 1))
    entry.headers = [:]
    entry.size = nil
    #expect(entry == copy)
    #expect(entry.hashValue == copy.hashValue)
    let dated = ManifestEntry(path: path, url: url, sha256: "ab", modified: Date(timeIntervalSince1970: 5), line: 1)
    #expect(dated.sha256 == "ab" && dated.modified == Date(timeIntervalSince1970: 5))
    // Plain-text manifests state none of the details: an entry stays ten words (path and URL,
    // each a prefix and a rest, 8; line; details).
    #expect(MemoryLayout<ManifestEntry>.stride <= 80)
}

@Test func entryPathPartsAndByteEquality() throws {
    let path = try EntryPath(validating: "a/b c/d.mp3")
    #expect(path.lastComponent == "d.mp3")
    #expect(path.enclosingDirectories.map(\.description) == ["a/b c", "a"])
    #expect(path.enclosingDirectories.map(\.components) == [["a", "b c"], ["a"]])
    #expect(try EntryPath(validating: "top.mp3").enclosingDirectories.map(\.description) == [])
    #expect(try EntryPath(validating: "top.mp3").lastComponent == "top.mp3")
    #expect(EntryPath(trustedComponents: ["a", "b c", "d.mp3"]) == path)
    #expect(EntryPath(trustedComponents: ["a", "b c", "d.mp3"]).hashValue == path.hashValue)
    #expect(path.enclosingDirectories.first(where: { _ in true }) == EntryPath(trustedComponents: ["a", "b c"]))
    // Canonically equivalent, different bytes: different paths, also as dictionary keys.
    let composed = try EntryPath(validating: "d/caf\u{E9}")
    let decomposed = try EntryPath(validating: "d/cafe\u{301}")
    #expect(composed != decomposed)
    #expect(Set([composed, decomposed]).count == 2)
    #expect(try EntryPath(validating: "ab") != EntryPath(validating: "a/b"))
    let deep = try EntryPath(validating: "x/y\u{301}/z/w.mp3")
    #expect(deep.enclosingDirectories.map(\.description) == ["x/y\u{301}/z", "x/y\u{301}", "x"])
    #expect(deep.components == ["x", "y\u{301}", "z", "w.mp3"])
    #expect(deep.lastComponent == "w.mp3")
}

@Test func urlTextSplitsAtTheLastSlashAndComparesBytes() throws {
    let texts = ["http://h/a/b.mp3", "http://h/a/", "nohost", "", "http://h/a/b.mp3?q=1/2", "http://h/caf\u{E9}/x"]
    for text in texts {
        #expect(SharedPrefixText(text).description == text)
        #expect(SharedPrefixText(text) == SharedPrefixText(text))
        #expect(SharedPrefixText(text).hashValue == SharedPrefixText(text).hashValue)
    }
    #expect(SharedPrefixText("http://h/caf\u{E9}/x") != SharedPrefixText("http://h/cafe\u{301}/x"))
    #expect(SharedPrefixText("http://h/a/bc") != SharedPrefixText("http://h/a/b/c"))
    var prefixes = SharedPrefixes()
    var first = SharedPrefixText("http://h/caf\u{E9}/1.mp3")
    var second = SharedPrefixText("http://h/cafe\u{301}/1.mp3")
    first.sharePrefix(in: &prefixes)
    second.sharePrefix(in: &prefixes)
    // Sharing never merges prefixes that differ in their bytes.
    #expect(first.description == "http://h/caf\u{E9}/1.mp3")
    #expect(second.description == "http://h/cafe\u{301}/1.mp3")
}

@Test func parsedEntriesKeepTheirURLText() throws {
    let text = (0..<300).map { "d\($0 % 3)/f\($0).mp3\thttp://h/album \($0 % 3)/f\($0).mp3".replacingOccurrences(of: " ", with: "%20") }
    let manifest = try Manifest.parsePlainText(text.joined(separator: "\n"), source: "m.txt")
    #expect(manifest.entries.count == 300)
    for (index, entry) in manifest.entries.enumerated() {
        #expect(entry.urlString == "http://h/album%20\(index % 3)/f\(index).mp3")
        #expect(entry.url.absoluteString == entry.urlString)
        #expect(entry.urlText == SharedPrefixText(entry.urlString))
    }
}

@Test func sameUTF8ComparesBytes() {
    #expect("caf\u{E9}".hasSameUTF8(as: "caf\u{E9}"))
    #expect(!"caf\u{E9}".hasSameUTF8(as: "cafe\u{301}"))
    #expect("".hasSameUTF8(as: ""))
    #expect(!"a".hasSameUTF8(as: "ab"))
    #expect(!"ab".hasSameUTF8(as: "ac"))
    let long = String(repeating: "x", count: 40)
    #expect(long.hasSameUTF8(as: String(repeating: "x", count: 40)))
    #expect(!long.hasSameUTF8(as: String(repeating: "x", count: 39) + "y"))
    // A bridged or substring-made copy compares by its bytes too.
    #expect(String(Substring("zcaf\u{E9}").dropFirst()).hasSameUTF8(as: "caf\u{E9}"))
}
