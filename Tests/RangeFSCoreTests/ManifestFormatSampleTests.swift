import Foundation
import Testing
@testable import RangeFSCore

// The sample manifests in examples/formats, read from disk, and the date parsers.

private let examples = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("examples")

private func sample(_ name: String) -> String {
    examples.appendingPathComponent(name).path
}

private let demo = "http://127.0.0.1:8089"

@Test func samplePlaylist() throws {
    let manifest = try Manifest.load(path: sample("formats/playlist.m3u8"))
    #expect(manifest.entries.map(\.path.description) == [
        "RangeFS demo - Episode 1: a tone.mp3", "RangeFS demo - Episode 2: another tone.mp3",
    ])
    #expect(manifest.entries.map(\.url.absoluteString) == ["\(demo)/podcast/episode-01.mp3", "\(demo)/podcast/episode-02.mp3"])
    #expect(manifest.entries.map(\.line) == [10, 12])
}

@Test func samplePodcastFeed() throws {
    let manifest = try Manifest.load(path: sample("formats/podcast.rss"))
    #expect(manifest.entries.map(\.path.description) == ["2024-10-08 Episode 2: another tone.mp3", "2024-10-01 Episode 1: a tone.mp3"])
    #expect(manifest.entries.map(\.url.absoluteString) == ["\(demo)/podcast/episode-02.mp3", "\(demo)/podcast/episode-01.mp3"])
    #expect(manifest.entries.map(\.size) == [nil, nil])  // length="0" says nothing
    #expect(manifest.entries.map(\.modified?.timeIntervalSince1970) == [1_728_374_400, 1_727_769_600])
}

@Test func sampleCollections() throws {
    let json = try Manifest.load(path: sample("formats/collection.json"))
    let yaml = try Manifest.load(path: sample("formats/collection.yaml"))
    for manifest in [json, yaml] {
        #expect(manifest.entries.map(\.path.description) == ["podcast/episode-01.mp3", "podcast/episode-02.mp3", "big.bin"])
        #expect(manifest.entries.map(\.size) == [nil, nil, 64 << 20])
        #expect(manifest.entries.map(\.modified?.timeIntervalSince1970) == [1_727_769_600, 1_728_374_400, nil])
    }
    #expect(json.entries.map(\.headers) == [
        ["X-Collection": "rangefs-demo"], ["X-Collection": "rangefs-demo"], ["X-Collection": "rangefs-demo-big"],
    ])
    #expect(json.entries.map(\.line) == [6, 11, 16])
    #expect(yaml.entries.map(\.line) == [5, 9, 14])
    // Every structured sample mounts what the demo's plain-text manifest mounts.
    let text = try Manifest.load(path: sample("media.txt"))
    #expect(json.entries.map(\.url) == text.entries.map(\.url))
    #expect(yaml.entries.map(\.path) == text.entries.map(\.path))
}

@Test func sampleMetalink() throws {
    let manifest = try Manifest.load(path: sample("formats/collection.meta4"))
    #expect(manifest.entries.map(\.path.description) == ["podcast/episode-01.mp3", "podcast/episode-02.mp3", "big.bin", "pattern.bin"])
    #expect(manifest.entries.map(\.line) == [14, 18, 22, 28])
    // The demo's files first, each also under /mirror/; the ftp URL and the torrent are read past.
    let text = try Manifest.load(path: sample("media.txt"))
    #expect(manifest.entries.prefix(3).map(\.url) == text.entries.map(\.url))
    #expect(manifest.entries.map { $0.mirrors.map(\.absoluteString) } == ["podcast/episode-01.mp3", "podcast/episode-02.mp3", "big.bin", "pattern.bin"]
        .map { ["\(demo)/mirror/\($0)"] })
    #expect(manifest.entries.map(\.size) == [nil, nil, 64 << 20, 1_000_000])
    let pattern = manifest.entries[3]
    #expect(pattern.url.absoluteString == "\(demo)/pattern.bin")
    #expect(pattern.sha256 == "fefbbf46f7785ed8982ad5050ec4d3f3c7715101e13846e4d2ddf47c26927d01")
    #expect(pattern.pieces?.pieceLength == 262_144)
    #expect(pattern.pieces.map { pieces in (0..<pieces.count).map(pieces.hexDigest(ofPiece:)) }?.last
        == "79ea00b615b7250b1d198832fec1788bff03a22071cfe5b8c97fae66238c9125")
}

@Test func loadTakesAFormatOrDetectsOne() throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("manifest-format-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }

    let unnamed = directory.appendingPathComponent("manifest")
    try Data("[{\"url\": \"http://h/a.mp3\", \"path\": \"x/a.mp3\"}]".utf8).write(to: unnamed)
    #expect(try Manifest.load(path: unnamed.path).entries.map(\.path.description) == ["x/a.mp3"])
    let asText = #expect(throws: ManifestError.self) { try Manifest.load(path: unnamed.path, format: .text) }
    #expect(asText?.line == 1)
    #expect(asText?.source == unnamed.path)

    let playlist = directory.appendingPathComponent("mix.M3U8")
    try Data("#EXTM3U\n#EXTINF:1,Song\nhttp://h/1.mp3\n".utf8).write(to: playlist)
    #expect(try Manifest.load(path: playlist.path).entries.map(\.path.description) == ["Song.mp3"])

    let missing = directory.appendingPathComponent("missing.json").path
    let error = #expect(throws: ManifestError.self) { try Manifest.load(path: missing, format: .json) }
    #expect(error?.description == "\(missing): cannot read manifest: no such file")
}

// MARK: Dates

@Test(arguments: [
    ("2024-05-01T12:00:00Z", 1_714_564_800.0, "2024-05-01"),
    ("2024-05-01t12:00:00z", 1_714_564_800.0, "2024-05-01"),
    ("2024-05-01 12:00", 1_714_564_800.0, "2024-05-01"),
    ("2024-05-01T14:00:00+02:00", 1_714_564_800.0, "2024-05-01"),
    ("2024-05-01T07:00:00-0500", 1_714_564_800.0, "2024-05-01"),
    ("2024-05-01T13:00:00+01", 1_714_564_800.0, "2024-05-01"),
    ("2024-05-01T12:00:00.125Z", 1_714_564_800.125, "2024-05-01"),
    ("2024-05-01", 1_714_521_600.0, "2024-05-01"),
    ("1970-01-01T00:00:00Z", 0.0, "1970-01-01"),
    ("1969-12-31T23:59:59Z", -1.0, "1969-12-31"),
    ("2000-02-29T00:00:00Z", 951_782_400.0, "2000-02-29"),
] as [(String, Double, String)])
func iso8601Timestamps(_ text: String, _ seconds: Double, _ day: String) throws {
    let parsed = try #require(ISO8601Timestamp.parse(text))
    #expect(parsed.date.timeIntervalSince1970 == seconds)
    #expect(parsed.day.isoText == day)
}

@Test(arguments: ["", "2024", "2024-5-1", "2024-13-01", "2023-02-29", "2024-05-01T24:00:00Z", "2024-05-01T12:00:00X",
                  "2024-05-01T12:00:00.Z", "2024-05-01T12Z", "01/05/2024", "2024-05-01T12:00:00+0"])
func iso8601Rejects(_ text: String) {
    #expect(ISO8601Timestamp.parse(text) == nil)
}

@Test(arguments: [
    ("Tue, 01 Oct 2024 08:00:00 +0000", 1_727_769_600.0, "2024-10-01"),
    ("Tue, 01 Oct 2024 23:30:00 -0700", 1_727_850_600.0, "2024-10-01"),
    ("01 Oct 2024 08:00:00 GMT", 1_727_769_600.0, "2024-10-01"),
    ("Tuesday, 1 October 2024 04:00:00 EDT", 1_727_769_600.0, "2024-10-01"),
    ("Tue, 01 Oct 24 08:00 UT", 1_727_769_600.0, "2024-10-01"),
    ("Tue,01 Oct 2024 10:00:00 +02:00", 1_727_769_600.0, "2024-10-01"),
    ("Tue, 01 Oct 2024 08:00:00", 1_727_769_600.0, "2024-10-01"),
    ("Tue, 01 Oct 2024", 1_727_740_800.0, "2024-10-01"),
    ("Fri, 31 Dec 99 00:00:00 GMT", 946_598_400.0, "1999-12-31"),
] as [(String, Double, String)])
func rfc822Dates(_ text: String, _ seconds: Double, _ day: String) throws {
    let parsed = try #require(RFC822Date.parse(text))
    #expect(parsed.date.timeIntervalSince1970 == seconds)
    #expect(parsed.day.isoText == day)
}

@Test(arguments: ["", "someday", "Tue, 32 Oct 2024 08:00:00 GMT", "Tue, 01 Foo 2024", "Tue, 01 Oct 2024 25:00:00 GMT",
                  "Tue, 29 Feb 2023 08:00:00 GMT", "2024-10-01T08:00:00Z"])
func rfc822Rejects(_ text: String) {
    #expect(RFC822Date.parse(text) == nil)
}

@Test func feedsInADeclaredLatin1EncodingAreRead() throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("manifest-format-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }

    func feed(_ encoding: String, title: [UInt8]) -> Data {
        Data("<?xml version=\"1.0\" encoding=\"\(encoding)\"?>\n<rss><channel><item><title>".utf8) + Data(title)
            + Data("</title><enclosure url=\"http://h/1.mp3\"/></item></channel></rss>\n".utf8)
    }
    let latin1 = directory.appendingPathComponent("latin1.rss")
    try feed("ISO-8859-1", title: [0x43, 0x61, 0x66, 0xE9]).write(to: latin1)  // "Café"
    #expect(try Manifest.load(path: latin1.path).entries.map(\.path.description) == ["Café.mp3"])

    let windows = directory.appendingPathComponent("cp1252.xml")
    try feed("windows-1252", title: [0x93, 0x51, 0x94]).write(to: windows)  // curly quotes
    #expect(try Manifest.load(path: windows.path).entries.map(\.path.description) == ["\u{201C}Q\u{201D}.mp3"])

    // Without a declaration, bytes that are not UTF-8 are still an error, not a guess.
    let undeclared = directory.appendingPathComponent("undeclared.rss")
    try (Data("<rss><channel><item><title>".utf8) + Data([0xE9]) + Data("</title></item></channel></rss>".utf8)).write(to: undeclared)
    let error = #expect(throws: ManifestError.self) { try Manifest.load(path: undeclared.path) }
    #expect(error?.reason == "not valid UTF-8 text")
}
