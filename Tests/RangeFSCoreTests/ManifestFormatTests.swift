import Foundation
import Testing
@testable import RangeFSCore

// Format detection, the JSON and YAML formats, and the rejection table for every format.

/// Parses with the format chosen by `source`'s extension (or the content).
private func parsed(_ text: String, source: String, format: ManifestFormat? = nil) throws -> Manifest {
    try Manifest.parse(text, source: source, format: format)
}

// MARK: Detection

struct DetectionCase: Sendable, CustomTestStringConvertible {
    let path: String?
    let text: String
    let format: ManifestFormat
    var testDescription: String { "\(path ?? "<no path>") \(text.prefix(20).debugDescription) → \(format)" }
}

@Test(arguments: [
    // The extension decides, whatever the content.
    DetectionCase(path: "media.txt", text: "#EXTM3U\nhttp://h/a.mp3", format: .text),
    DetectionCase(path: "media.list", text: "[]", format: .text),
    DetectionCase(path: "c.json", text: "", format: .json),
    DetectionCase(path: "dir.v2/C.JSON", text: "http://h/a", format: .json),
    DetectionCase(path: "c.yaml", text: "{}", format: .yaml),
    DetectionCase(path: "c.yml", text: "", format: .yaml),
    DetectionCase(path: "p.m3u", text: "http://h/a.mp3", format: .m3u),
    DetectionCase(path: "p.M3U8", text: "", format: .m3u),
    DetectionCase(path: "feed.rss", text: "", format: .rss),
    DetectionCase(path: "feed.xml", text: "", format: .rss),
    // Otherwise the content does.
    DetectionCase(path: "/dev/fd/63", text: "#EXTM3U\n#EXTINF:1,A\nhttp://h/a.mp3", format: .m3u),
    DetectionCase(path: "playlist", text: "\u{FEFF}#EXTM3U\r\nhttp://h/a.mp3", format: .m3u),
    DetectionCase(path: nil, text: "  \n{\"entries\": []}", format: .json),
    DetectionCase(path: nil, text: "[{\"url\": \"http://h/a\"}]", format: .json),
    DetectionCase(path: "manifest", text: "<?xml version=\"1.0\"?>\n<rss/>", format: .rss),
    DetectionCase(path: nil, text: "<rss version=\"2.0\"></rss>", format: .rss),
    DetectionCase(path: nil, text: "# my files\n- url: http://h/a.mp3\n", format: .yaml),
    DetectionCase(path: nil, text: "-\n  url: http://h/a.mp3\n", format: .yaml),
    DetectionCase(path: nil, text: "---\n- http://h/a.mp3\n", format: .yaml),
    DetectionCase(path: nil, text: "entries:\n  - url: http://h/a.mp3\n", format: .yaml),
    DetectionCase(path: nil, text: "headers:\n  A: b\nentries: []\n", format: .yaml),
    DetectionCase(path: "media.conf", text: "# list\nhttp://h/a.mp3\n", format: .text),
    DetectionCase(path: nil, text: "a.mp3\thttp://h/a.mp3", format: .text),
    DetectionCase(path: nil, text: "", format: .text),
    DetectionCase(path: ".json", text: "http://h/a", format: .text),  // a hidden file, not an extension
])
func formatDetection(_ detection: DetectionCase) {
    #expect(ManifestFormat.detect(path: detection.path, text: detection.text) == detection.format)
}

@Test func formatNamesAndExtensions() {
    #expect(ManifestFormat.allCases.map(\.rawValue) == ["text", "json", "yaml", "m3u", "rss", "metalink"])
    #expect(ManifestFormat(rawValue: "yaml") == .yaml)
    #expect(ManifestFormat(fileExtensionOf: "a/b/c.yml") == .yaml)
    #expect(ManifestFormat(fileExtensionOf: "a.b/c") == nil)
    #expect(ManifestFormat(fileExtensionOf: "c.mp3") == nil)
}

@Test func explicitFormatOverridesDetection() throws {
    // A playlist saved as .txt is plain text unless told otherwise.
    let text = "#EXTM3U\n#EXTINF:1,Song\nhttp://h/a.mp3\n"
    #expect(try parsed(text, source: "p.txt").entries.map(\.path.description) == ["a.mp3"])
    #expect(try parsed(text, source: "p.txt", format: .m3u).entries.map(\.path.description) == ["Song.mp3"])
}

// MARK: JSON

@Test func jsonListOfEntries() throws {
    let manifest = try parsed("""
        [
          {"url": "https://h/podcast/ep%201.mp3"},
          {"path": "music/rock/a.mp3", "url": "http://h/1", "size": 1234,
           "sha256": "ABCDEF0123456789abcdef0123456789ABCDEF0123456789abcdef0123456789"},
          "http://h/bare.bin",
          {"url": "http://h/x", "path": "caf\\u00e9 \\ud83c\\udfb5.mp3", "size": 0, "sha256": null, "headers": null, "mtime": null}
        ]
        """, source: "c.json")
    #expect(manifest.source == "c.json")
    #expect(manifest.entries.map(\.path.description) == ["ep 1.mp3", "music/rock/a.mp3", "bare.bin", "café 🎵.mp3"])
    #expect(manifest.entries.map(\.line) == [2, 3, 5, 6])
    #expect(manifest.entries.map(\.size) == [nil, 1234, nil, 0])
    #expect(manifest.entries[1].sha256 == "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789")
    #expect(manifest.entries[0].url.absoluteString == "https://h/podcast/ep%201.mp3")
    #expect(manifest.entries.allSatisfy { $0.headers.isEmpty && $0.modified == nil })
}

@Test func jsonEntriesWithSharedHeaders() throws {
    let manifest = try parsed("""
        {"headers": {"Authorization": "Bearer abc", "X-Client": "rangefs"},
         "entries": [
           {"url": "http://h/a.mp3"},
           {"url": "http://h/b.mp3", "headers": {"authorization": "Bearer other", "X-Extra": "1"}}
         ]}
        """, source: "c.json")
    #expect(manifest.entries[0].headers == ["Authorization": "Bearer abc", "X-Client": "rangefs"])
    // The entry's header wins, whatever the case of its name.
    #expect(manifest.entries[1].headers == ["authorization": "Bearer other", "X-Client": "rangefs", "X-Extra": "1"])
    #expect(manifest.entries.map(\.line) == [3, 4])
}

@Test func jsonLimitsAndTimes() throws {
    let manifest = try parsed("""
        {"entries": [
          {"url": "http://h/a", "size": 4611686018427387904, "mtime": "2024-05-01T12:00:00Z"},
          {"url": "http://h/b", "mtime": 1714564800},
          {"url": "http://h/c", "mtime": "2024-05-01T14:00:00.500+02:00"},
          {"url": "http://h/d", "mtime": "2024-05-01"},
          {"url": "http://h/e", "mtime": 1714564800.25}
        ]}
        """, source: "c.json")
    #expect(manifest.entries[0].size == 1 << 62)
    #expect(manifest.entries.map(\.modified?.timeIntervalSince1970) == [1_714_564_800, 1_714_564_800, 1_714_564_800.5, 1_714_521_600, 1_714_564_800.25])
}

@Test func jsonEmptyListAndByteOrderMark() throws {
    #expect(try parsed("[]", source: "c.json").entries.isEmpty)
    #expect(try parsed("\u{FEFF}{\"entries\": []}\n", source: "c.json").entries.isEmpty)
}

// MARK: YAML

@Test func yamlListOfEntries() throws {
    let manifest = try parsed("""
        # my files
        - url: https://h/podcast/ep%201.mp3
        - path: music/rock/a.mp3
          url: http://h/1
          size: 1234
          sha256: ABCDEF0123456789abcdef0123456789ABCDEF0123456789abcdef0123456789
          mtime: 2024-05-01T12:00:00Z
        - http://h/bare.bin
        - {url: "http://h/x", path: "2024", size: ~, sha256: null}
        """, source: "c.yaml")
    #expect(manifest.entries.map(\.path.description) == ["ep 1.mp3", "music/rock/a.mp3", "bare.bin", "2024"])
    #expect(manifest.entries.map(\.line) == [2, 3, 8, 9])
    #expect(manifest.entries.map(\.size) == [nil, 1234, nil, nil])
    #expect(manifest.entries[1].sha256 == "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789")
    #expect(manifest.entries[1].modified == Date(timeIntervalSince1970: 1_714_564_800))
}

@Test func yamlEntriesWithSharedHeadersAndAliases() throws {
    let manifest = try parsed("""
        headers:
          X-Api-Version: 2
          Accept: '*/*'
        entries:
          - url: http://h/a.mp3
            headers: &auth
              Authorization: Bearer abc
          - url: http://h/b.mp3
            headers: *auth
          - url: http://h/c.mp3
            headers:
              x-api-version: "3"
        """, source: "c.yaml")
    #expect(manifest.entries[0].headers == ["X-Api-Version": "2", "Accept": "*/*", "Authorization": "Bearer abc"])
    #expect(manifest.entries[1].headers == manifest.entries[0].headers)
    #expect(manifest.entries[2].headers == ["x-api-version": "3", "Accept": "*/*"])
    #expect(manifest.entries.map(\.line) == [5, 8, 10])
}

@Test func yamlAliasBombIsRefusedQuickly() throws {
    // Nine aliases to nine aliases, six deep: 531 441 URLs from seven lines.
    var lines = ["a0: &a0 [" + Array(repeating: "'http://h/x'", count: 9).joined(separator: ", ") + "]"]
    for level in 1..<6 {
        lines.append("a\(level): &a\(level) [" + Array(repeating: "*a\(level - 1)", count: 9).joined(separator: ", ") + "]")
    }
    lines.append("entries: *a5")
    let started = ContinuousClock.now
    let error = #expect(throws: ManifestError.self) { try parsed(lines.joined(separator: "\n"), source: "bomb.yaml") }
    #expect(error?.reason == "YAML aliases (*name) expand the document to too many values")
    #expect(ContinuousClock.now - started < .seconds(5))
}

@Test func jsonAndYAMLGiveTheSameEntries() throws {
    let json = try parsed("""
        {"headers": {"A": "1"}, "entries": [{"url": "http://h/a.mp3", "path": "x/a.mp3", "size": 5}]}
        """, source: "c.json")
    let yaml = try parsed("headers: {A: '1'}\nentries: [{url: 'http://h/a.mp3', path: x/a.mp3, size: 5}]", source: "c.yaml")
    #expect(json.entries.map { ManifestEntry(path: $0.path, url: $0.url, size: $0.size, headers: $0.headers, line: 2) } == yaml.entries)
}

// MARK: Rejections

/// A manifest in some format that must be rejected, and the exact message.
struct BadFormatCase: Sendable, CustomTestStringConvertible {
    let label: String
    /// Its extension picks the format.
    let source: String
    let text: String
    let message: String
    var testDescription: String { "\(source): \(label)" }
}

private let allowedHeaderCharacters = "(allowed: letters, digits and !#$%&'*+-.^_`|~)"
private let entryFields = "url, urls, path, size, sha256, headers or mtime"

private let badFormatCases: [BadFormatCase] = [
    // JSON: entry fields
    BadFormatCase(label: "missing url", source: "c.json", text: "[\n  {\"path\": \"a.mp3\"}\n]",
                  message: "c.json:2: entry 1: missing \"url\""),
    BadFormatCase(label: "null url", source: "c.json", text: "[{\"url\": null}]",
                  message: "c.json:1: entry 1: missing \"url\""),
    BadFormatCase(label: "url not a string", source: "c.json", text: "[{\"url\": 5}]",
                  message: "c.json:1: entry 1: \"url\" must be a string (got a number)"),
    BadFormatCase(label: "negative size", source: "collection.json",
                  text: "[\n {\"url\": \"http://h/a\"},\n {\"url\": \"http://h/b\"},\n {\"url\": \"http://h/c\",\n  \"size\": -1}\n]",
                  message: "collection.json:5: entry 3: \"size\" must be a non-negative integer"),
    BadFormatCase(label: "fractional size", source: "c.json", text: "[{\"url\": \"http://h/a\", \"size\": 1.5}]",
                  message: "c.json:1: entry 1: \"size\" must be a non-negative integer"),
    BadFormatCase(label: "exponent size", source: "c.json", text: "[{\"url\": \"http://h/a\", \"size\": 1e3}]",
                  message: "c.json:1: entry 1: \"size\" must be a non-negative integer"),
    BadFormatCase(label: "size as a string", source: "c.json", text: "[{\"url\": \"http://h/a\", \"size\": \"12\"}]",
                  message: "c.json:1: entry 1: \"size\" must be a non-negative integer (got a string)"),
    BadFormatCase(label: "size above 2^62", source: "c.json", text: "[{\"url\": \"http://h/a\", \"size\": 4611686018427387905}]",
                  message: "c.json:1: entry 1: \"size\" must be at most 4611686018427387904 (2^62)"),
    BadFormatCase(label: "size above UInt64", source: "c.json", text: "[{\"url\": \"http://h/a\", \"size\": 99999999999999999999999}]",
                  message: "c.json:1: entry 1: \"size\" must be at most 4611686018427387904 (2^62)"),
    BadFormatCase(label: "short sha256", source: "c.json", text: "[{\"url\": \"http://h/a\", \"sha256\": \"abc\"}]",
                  message: "c.json:1: entry 1: \"sha256\" must be 64 hexadecimal digits"),
    BadFormatCase(label: "sha256 with a non-hex digit", source: "c.json",
                  text: "[{\"url\": \"http://h/a\", \"sha256\": \"\(String(repeating: "a", count: 63))g\"}]",
                  message: "c.json:1: entry 1: \"sha256\" must be 64 hexadecimal digits"),
    BadFormatCase(label: "sha256 as a number", source: "c.json", text: "[{\"url\": \"http://h/a\", \"sha256\": 12}]",
                  message: "c.json:1: entry 1: \"sha256\" must be a string of 64 hexadecimal digits (got a number)"),
    BadFormatCase(label: "misspelt field", source: "c.json", text: "[{\"url\": \"http://h/a\",\n \"szie\": 1}]",
                  message: "c.json:2: entry 1: unknown field \"szie\" (did you mean \"size\"? expected \(entryFields))"),
    BadFormatCase(label: "field in the wrong case", source: "c.json", text: "[{\"URL\": \"http://h/a\"}]",
                  message: "c.json:1: entry 1: unknown field \"URL\" (did you mean \"url\"? expected \(entryFields))"),
    BadFormatCase(label: "unknown field", source: "c.json", text: "[{\"url\": \"http://h/a\", \"comment\": \"x\"}]",
                  message: "c.json:1: entry 1: unknown field \"comment\" (expected \(entryFields))"),
    BadFormatCase(label: "repeated field", source: "c.json", text: "[{\"url\": \"http://h/a\",\n \"url\": \"http://h/b\"}]",
                  message: "c.json:2: entry 1: duplicate field \"url\""),
    BadFormatCase(label: "bad mtime", source: "c.json", text: "[{\"url\": \"http://h/a\", \"mtime\": \"yesterday\"}]",
                  message: "c.json:1: entry 1: \"mtime\" must be an ISO 8601 date-time (2024-05-01T12:00:00Z) or unix seconds"),
    BadFormatCase(label: "mtime on a day that does not exist", source: "c.json", text: "[{\"url\": \"http://h/a\", \"mtime\": \"2023-02-29\"}]",
                  message: "c.json:1: entry 1: \"mtime\" must be an ISO 8601 date-time (2024-05-01T12:00:00Z) or unix seconds"),
    BadFormatCase(label: "entry that is a number", source: "c.json", text: "[\"http://h/a\", 5]",
                  message: "c.json:1: entry 2: expected an object with \"url\", or a URL string (got a number)"),
    BadFormatCase(label: "path with ..", source: "c.json", text: "[{\"url\": \"http://h/a\", \"path\": \"a/../b\"}]",
                  message: "c.json:1: entry 1: path 'a/../b' contains '..'"),
    BadFormatCase(label: "URL that names nothing", source: "c.json", text: "[{\"url\": \"http://h/dir/\"}]",
                  message: "c.json:1: entry 1: cannot name an entry from URL 'http://h/dir/' (give a \"path\")"),
    // JSON: headers
    BadFormatCase(label: "CRLF in a header value", source: "c.json",
                  text: "[{\"url\": \"http://h/a\",\n  \"headers\": {\"X-A\": \"1\\r\\nHost: evil\"}}]",
                  message: "c.json:2: entry 1: header \"X-A\" has a line break (CR or LF) in its value"),
    BadFormatCase(label: "LF in a header name", source: "c.json", text: "[{\"url\": \"http://h/a\", \"headers\": {\"X-A\\nB\": \"1\"}}]",
                  message: "c.json:1: entry 1: header name \"X-A\\x0AB\" contains a line break (CR or LF) \(allowedHeaderCharacters)"),
    BadFormatCase(label: "NUL in a header value", source: "c.json", text: "[{\"url\": \"http://h/a\", \"headers\": {\"X-A\": \"a\\u0000b\"}}]",
                  message: "c.json:1: entry 1: header \"X-A\" has a control character (0x00) in its value"),
    BadFormatCase(label: "colon in a header name", source: "c.json", text: "[{\"url\": \"http://h/a\", \"headers\": {\"X:A\": \"1\"}}]",
                  message: "c.json:1: entry 1: header name \"X:A\" contains the character ':' \(allowedHeaderCharacters)"),
    BadFormatCase(label: "space in a header name", source: "c.json", text: "[{\"url\": \"http://h/a\", \"headers\": {\"X A\": \"1\"}}]",
                  message: "c.json:1: entry 1: header name \"X A\" contains the character 0x20 \(allowedHeaderCharacters)"),
    BadFormatCase(label: "empty header name", source: "c.json", text: "[{\"url\": \"http://h/a\", \"headers\": {\"\": \"1\"}}]",
                  message: "c.json:1: entry 1: header name is empty"),
    BadFormatCase(label: "Range header", source: "c.json", text: "[{\"url\": \"http://h/a\", \"headers\": {\"range\": \"bytes=0-\"}}]",
                  message: "c.json:1: entry 1: header \"range\" is set by RangeFS itself and cannot be given"),
    BadFormatCase(label: "header given twice", source: "c.json", text: "[{\"url\": \"http://h/a\", \"headers\": {\"Accept\": \"a\", \"accept\": \"b\"}}]",
                  message: "c.json:1: entry 1: header \"accept\" is given twice (header names ignore case)"),
    BadFormatCase(label: "header value not a string", source: "c.json", text: "[{\"url\": \"http://h/a\", \"headers\": {\"X-V\": 2}}]",
                  message: "c.json:1: entry 1: header \"X-V\" must be a string (got a number)"),
    BadFormatCase(label: "headers not an object", source: "c.json", text: "[{\"url\": \"http://h/a\", \"headers\": [\"X-V: 2\"]}]",
                  message: "c.json:1: entry 1: \"headers\" must be an object of header names to values (got a list)"),
    BadFormatCase(label: "CRLF in a top-level header", source: "c.json",
                  text: "{\"headers\": {\n  \"X-A\": \"1\\r\\nX-B: 2\"},\n \"entries\": []}",
                  message: "c.json:2: header \"X-A\" has a line break (CR or LF) in its value"),
    // JSON: top level
    BadFormatCase(label: "root is a string", source: "c.json", text: "\"http://h/a\"",
                  message: "c.json:1: expected a list of entries or an object with \"entries\" (got a string)"),
    BadFormatCase(label: "no entries", source: "c.json", text: "{\"headers\": {}}",
                  message: "c.json:1: missing \"entries\" (expected a list of entries or an object with \"entries\")"),
    BadFormatCase(label: "entries not a list", source: "c.json", text: "{\n\"entries\": {}}",
                  message: "c.json:2: \"entries\" must be a list (got an object)"),
    BadFormatCase(label: "misspelt top-level field", source: "c.json", text: "{\"entries\": [],\n\"entrys\": []}",
                  message: "c.json:2: unknown top-level field \"entrys\" (did you mean \"entries\"? expected entries or headers)"),
    // JSON: syntax
    BadFormatCase(label: "trailing comma", source: "c.json", text: "[\n  {\"url\": \"http://h/a\"},\n]",
                  message: "c.json:3: malformed JSON: trailing comma before ']'"),
    BadFormatCase(label: "missing comma", source: "c.json", text: "[\n  {\"url\": \"http://h/a\"}\n  {\"url\": \"http://h/b\"}\n]",
                  message: "c.json:3: malformed JSON: unexpected character '{' (expected ',' or ']')"),
    BadFormatCase(label: "unterminated string", source: "c.json", text: "[\n  {\"url\": \"http://h/a}\n]",
                  message: "c.json:2: malformed JSON: unterminated string (a line break must be written as \\n)"),
    BadFormatCase(label: "single quotes", source: "c.json", text: "[{'url': 'http://h/a'}]",
                  message: "c.json:1: malformed JSON: unexpected character ''' (expected a key in double quotes)"),
    BadFormatCase(label: "comment", source: "c.json", text: "// files\n[]",
                  message: "c.json:1: malformed JSON: unexpected character '/' (expected a value)"),
    BadFormatCase(label: "truncated", source: "c.json", text: "{\"entries\": [\n",
                  message: "c.json:2: malformed JSON: unexpected end of the document (expected a value)"),
    BadFormatCase(label: "two documents", source: "c.json", text: "[]\n[]",
                  message: "c.json:2: malformed JSON: unexpected character '[' after the end of the document"),
    BadFormatCase(label: "empty", source: "c.json", text: "",
                  message: "c.json:1: malformed JSON: unexpected end of the document (expected a value)"),
    BadFormatCase(label: "bad escape", source: "c.json", text: "[\"http://h/\\q\"]",
                  message: "c.json:1: malformed JSON: invalid escape '\\q' in a string"),
    BadFormatCase(label: "lone surrogate", source: "c.json", text: "[\"http://h/\\ud800\"]",
                  message: "c.json:1: malformed JSON: invalid \\u escape in a string (unpaired surrogate)"),
    BadFormatCase(label: "leading zero", source: "c.json", text: "[{\"url\": \"http://h/a\", \"size\": 012}]",
                  message: "c.json:1: malformed JSON: invalid number (leading zero)"),
    BadFormatCase(label: "nested too deeply", source: "c.json", text: String(repeating: "[", count: 100),
                  message: "c.json:1: malformed JSON: values are nested more than 64 levels deep"),

    // YAML
    BadFormatCase(label: "missing url", source: "c.yaml", text: "- url: http://h/a\n- path: a.mp3\n",
                  message: "c.yaml:2: entry 2: missing \"url\""),
    BadFormatCase(label: "negative size", source: "c.yaml", text: "- url: http://h/a\n  size: -1\n",
                  message: "c.yaml:2: entry 1: \"size\" must be a non-negative integer"),
    BadFormatCase(label: "hexadecimal size", source: "c.yaml", text: "- url: http://h/a\n  size: 0x10\n",
                  message: "c.yaml:2: entry 1: \"size\" must be a non-negative integer"),
    BadFormatCase(label: "quoted size", source: "c.yaml", text: "- url: http://h/a\n  size: '12'\n",
                  message: "c.yaml:2: entry 1: \"size\" must be a non-negative integer (got a string)"),
    BadFormatCase(label: "bad sha256", source: "c.yaml", text: "- url: http://h/a\n  sha256: xyz\n",
                  message: "c.yaml:2: entry 1: \"sha256\" must be 64 hexadecimal digits"),
    BadFormatCase(label: "misspelt field", source: "c.yaml", text: "- url: http://h/a\n  heders: {}\n",
                  message: "c.yaml:2: entry 1: unknown field \"heders\" (did you mean \"headers\"? expected \(entryFields))"),
    BadFormatCase(label: "CRLF in a header value", source: "c.yaml",
                  text: "- url: http://h/a\n  headers:\n    X-A: \"1\\r\\nHost: evil\"\n",
                  message: "c.yaml:3: entry 1: header \"X-A\" has a line break (CR or LF) in its value"),
    BadFormatCase(label: "header value that is a list", source: "c.yaml", text: "- url: http://h/a\n  headers:\n    X-A: [1]\n",
                  message: "c.yaml:3: entry 1: header \"X-A\" must be a string (got a list)"),
    BadFormatCase(label: "entry that is a list", source: "c.yaml", text: "- [http://h/a]\n",
                  message: "c.yaml:1: entry 1: expected a mapping with \"url\", or a URL string (got a list)"),
    BadFormatCase(label: "root is a scalar", source: "c.yaml", text: "http://h/a\n",
                  message: "c.yaml:1: expected a list of entries or a mapping with \"entries\" (got a scalar)"),
    BadFormatCase(label: "entries not a list", source: "c.yaml", text: "entries:\n  url: http://h/a\n",
                  message: "c.yaml:2: \"entries\" must be a list (got a mapping)"),
    BadFormatCase(label: "empty document", source: "c.yaml", text: "# nothing\n",
                  message: "c.yaml: the document is empty (expected a list of entries or a mapping with \"entries\")"),
    BadFormatCase(label: "repeated key", source: "c.yaml", text: "- url: http://h/a\n  url: http://h/b\n",
                  message: "c.yaml:1: duplicate key \"url\" in one mapping"),
    BadFormatCase(label: "unclosed flow list", source: "c.yaml", text: "- url: http://h/a\n- [http://h/b\n",
                  message: "c.yaml:3: malformed YAML: did not find expected ',' or ']'"),
    BadFormatCase(label: "bad indentation", source: "c.yaml", text: "- url: http://h/a\n   size: 1\n",
                  message: "c.yaml:2: malformed YAML: mapping values are not allowed in this context"),
    BadFormatCase(label: "tab indentation", source: "c.yaml", text: "- url: http://h/a\n\tsize: 1\n",
                  message: "c.yaml:2: malformed YAML: found a tab character that violates indentation"),

    // Rules every format shares
    BadFormatCase(label: "duplicate path", source: "c.json", text: "[{\"url\": \"http://h/a.mp3\"},\n {\"url\": \"http://mirror/a.mp3\"}]",
                  message: "c.json:2: entry 2: duplicate path 'a.mp3' (first defined on line 1)"),
    BadFormatCase(label: "duplicate path", source: "c.yaml", text: "- url: http://h/a.mp3\n- path: a.mp3\n  url: http://mirror/x\n",
                  message: "c.yaml:2: entry 2: duplicate path 'a.mp3' (first defined on line 1)"),
    BadFormatCase(label: "duplicate path", source: "c.txt", text: "http://h/a.mp3\na.mp3\thttp://mirror/x",
                  message: "c.txt:2: duplicate path 'a.mp3' (first defined on line 1)"),
    BadFormatCase(label: "file used as a directory", source: "c.json",
                  text: "[{\"url\": \"http://h/1\", \"path\": \"a\"},\n {\"url\": \"http://h/2\", \"path\": \"a/b.mp3\"}]",
                  message: "c.json:2: entry 2: path 'a/b.mp3' needs 'a' to be a directory, but line 1 defines it as a file"),
    BadFormatCase(label: "ftp scheme", source: "c.json", text: "[{\"url\": \"ftp://h/a.mp3\"}]",
                  message: "c.json:1: entry 1: scheme 'ftp' is not supported (only http and https)"),
    BadFormatCase(label: "ftp scheme", source: "c.yaml", text: "- ftp://h/a.mp3\n",
                  message: "c.yaml:1: entry 1: scheme 'ftp' is not supported (only http and https)"),
    BadFormatCase(label: "file scheme", source: "p.m3u", text: "#EXTM3U\n#EXTINF:1,A\nfile:///home/me/a.mp3\n",
                  message: "p.m3u:3: scheme 'file' is not supported (only http and https)"),
    BadFormatCase(label: "ftp scheme", source: "f.rss",
                  text: "<rss><channel>\n<item><enclosure url=\"http://h/a.mp3\"/></item>\n<item><title>B</title>\n<enclosure url=\"ftp://h/b.mp3\"/></item>\n</channel></rss>",
                  message: "f.rss:4: item 2: scheme 'ftp' is not supported (only http and https)"),
    BadFormatCase(label: "credentials redacted", source: "c.json", text: "[{\"url\": \"http://user:secret@/a.mp3\"}]",
                  message: "c.json:1: entry 1: malformed URL 'http://***@/a.mp3': no host"),
    BadFormatCase(label: "credentials redacted", source: "c.yaml", text: "- url: https://user:secret@h/dir/\n",
                  message: "c.yaml:1: entry 1: cannot name an entry from URL 'https://***@h/dir/' (give a \"path\")"),
    BadFormatCase(label: "credentials redacted", source: "p.m3u8", text: "#EXTM3U\n//user:secret@h/a.mp3\n",
                  message: "p.m3u8:2: relative URL '//***@h/a.mp3' is not supported yet (write absolute http:// or https:// URLs)"),
    BadFormatCase(label: "credentials redacted", source: "f.rss",
                  text: "<rss><channel><item><enclosure url=\"http://user:secret@host:port/a.mp3\"/></item></channel></rss>",
                  message: "f.rss:1: item 1: malformed URL 'http://***@host:port/a.mp3'"),

    // M3U
    BadFormatCase(label: "relative URL", source: "p.m3u8", text: "#EXTM3U\n#EXTINF:1,A\nmusic/a.mp3\n",
                  message: "p.m3u8:3: relative URL 'music/a.mp3' is not supported yet (write absolute http:// or https:// URLs)"),
    BadFormatCase(label: "local path", source: "p.m3u", text: "#EXTM3U\n/home/me/Music/a.mp3\n",
                  message: "p.m3u:2: '/home/me/Music/a.mp3' is a local file path, not a URL (only http and https URLs can be mounted)"),
    BadFormatCase(label: "Windows path", source: "p.m3u", text: "#EXTM3U\r\nC:\\Music\\a.mp3\r\n",
                  message: "p.m3u:2: 'C:\\Music\\a.mp3' is a local file path, not a URL (only http and https URLs can be mounted)"),
    BadFormatCase(label: "URL without a name or title", source: "p.m3u", text: "#EXTM3U\nhttp://radio.example/\n",
                  message: "p.m3u:2: cannot name the file for 'http://radio.example/': it has no #EXTINF title and the URL has no file name"),

    // RSS
    BadFormatCase(label: "no enclosure", source: "f.rss",
                  text: "<?xml version=\"1.0\"?>\n<rss><channel><item><title>News</title></item></channel></rss>",
                  message: "f.rss: no <item> in the feed has an <enclosure> (nothing to mount)"),
    BadFormatCase(label: "no items", source: "f.rss", text: "<rss><channel><title>Empty</title></channel></rss>",
                  message: "f.rss: the feed has no <item> (nothing to mount)"),
    BadFormatCase(label: "Atom feed", source: "f.xml", text: "<feed xmlns=\"http://www.w3.org/2005/Atom\"><entry/></feed>",
                  message: "f.xml: the feed has no <item> (nothing to mount); the root element is <feed>, and only RSS feeds are read"),
    BadFormatCase(label: "enclosure without url", source: "f.rss",
                  text: "<rss><channel>\n<item>\n<enclosure length=\"5\"/></item></channel></rss>",
                  message: "f.rss:3: item 1: <enclosure> has no url attribute"),
    BadFormatCase(label: "undeclared entity", source: "f.rss",
                  text: "<rss><channel>\n<item>\n<title>A&nbsp;B</title></item></channel></rss>",
                  message: "f.rss:3: malformed XML: undeclared entity (XML defines only &amp; &lt; &gt; &quot; &apos; and numeric references)"),
    BadFormatCase(label: "unclosed element", source: "f.rss", text: "<rss><channel>\n<item>\n",
                  message: "f.rss:2: malformed XML: the document ends early, or has content after its root element"),
    BadFormatCase(label: "mismatched tag", source: "f.rss", text: "<rss><channel>\n<item></channel>\n</rss>",
                  message: "f.rss:2: malformed XML: closing tag does not match the open element"),
    BadFormatCase(label: "not XML", source: "f.rss", text: "http://h/a.mp3\n",
                  message: "f.rss:1: malformed XML: the document is empty"),
    // FoundationXML crashes the process on these, so they never reach it. libxml2 reads on
    // after errors, so even what looks like a comment is checked.
    BadFormatCase(label: "processing instruction without data", source: "f.rss",
                  text: "<rss><channel>\n<item>\n<?a?></item></channel></rss>",
                  message: "f.rss:3: unsupported XML: a processing instruction without data (<?…?>)"),
    BadFormatCase(label: "processing instruction without data after an error", source: "f.rss",
                  text: "<rss><channel><item>\n<?a b\u{06} <?c?></item></channel></rss>",
                  message: "f.rss:2: unsupported XML: a processing instruction without data (<?…?>)"),
    BadFormatCase(label: "processing instruction without data in a comment", source: "f.rss",
                  text: "<rss>\n<!-- \u{06} <?a?> --></rss>",
                  message: "f.rss:2: unsupported XML: a processing instruction without data (<?…?>)"),
    BadFormatCase(label: "fuzzer's crash", source: "f.rss",
                  text: "<?x:l versiosString?><n<?x:l ?x:l versi)os\u{06}<?xilString?><n<?x:l ver ver",
                  message: "f.rss:1: unsupported XML: a processing instruction without data (<?…?>)"),
    BadFormatCase(label: "DTD internal subset", source: "f.rss",
                  text: "<?xml version=\"1.0\"?>\n<!DOCTYPE rss [<!ENTITY e \"&#60;?a?&#62;\">]>\n<rss><channel><item>&e;</item></channel></rss>",
                  message: "f.rss:2: unsupported XML: DTD declarations (<!DOCTYPE … [ … ]>, <!ENTITY …>)"),
    BadFormatCase(label: "DTD declaration outside a DOCTYPE", source: "f.rss",
                  text: "<rss>\n\n<!ATTLIST a b CDATA #IMPLIED></rss>",
                  message: "f.rss:3: unsupported XML: DTD declarations (<!DOCTYPE … [ … ]>, <!ENTITY …>)"),
]

@Test(arguments: badFormatCases + badMirrorCases)
func badManifestInAnyFormatIsRejectedWithExactMessage(_ bad: BadFormatCase) {
    let error = #expect(throws: ManifestError.self) { try Manifest.parse(bad.text, source: bad.source) }
    #expect(error?.description == bad.message)
    #expect(error.map { !$0.description.contains("secret") } ?? true)
}

@Test func headersFromOutsideTheManifest() throws {
    let manifest = try parsed("""
        [{"url": "http://h/a.mp3", "headers": {"authorization": "mine"}}, {"url": "http://h/b.mp3"}]
        """, source: "c.json")
    let added = manifest.addingHeaders(["Authorization": "global", "X-Client": "cli"])
    #expect(added.entries.map(\.headers) == [["authorization": "mine", "X-Client": "cli"], ["Authorization": "global", "X-Client": "cli"]])
    #expect(Manifest.headerProblem(name: "X-Client", value: "a b") == nil)
    #expect(Manifest.headerProblem(name: "X-Client", value: "a\r\nb") == "header \"X-Client\" has a line break (CR or LF) in its value")
    #expect(Manifest.headerProblem(name: "If-Range", value: "x") == "header \"If-Range\" is set by RangeFS itself and cannot be given")
}
