import Foundation
import Testing
@testable import RangeFSCore

/// What `rangefs manifest` writes reads back as the same entries.
@Suite("Manifest writer")
struct ManifestWriterTests {
    static func entry(_ path: String, _ url: String, size: UInt64? = nil, modified: Date? = nil) throws -> ManifestEntry {
        ManifestEntry(path: try EntryPath(validating: path), url: URL(string: url)!, size: size, modified: modified, line: 0)
    }

    static func entries() throws -> [ManifestEntry] {
        [
            try entry("a b/c#d.txt", "http://h/a%20b/c%23d.txt", size: 3, modified: Date(timeIntervalSince1970: 1_767_323_045)),
            try entry("ünï [x]&y.mp3", "http://h/%C3%BCn%C3%AF%20%5Bx%5D%26y.mp3"),
            try entry("z/ inner space .bin", "http://h/z/%20inner%20space%20.bin", size: 0),
        ]
    }

    @Test func textKeepsPathsAndURLs() throws {
        let written = try ManifestWriter.text(Self.entries())
        let read = try Manifest.parse(written, source: "m.txt", format: .text)
        #expect(read.entries.map(\.path) == (try Self.entries()).map(\.path))
        #expect(read.entries.map(\.urlString) == (try Self.entries()).map(\.urlString))
    }

    @Test func jsonKeepsSizesAndDatesToo() throws {
        let written = ManifestWriter.json(try Self.entries())
        let read = try Manifest.parse(written, source: "m.json", format: .json)
        let expected = try Self.entries()
        #expect(read.entries.map(\.path) == expected.map(\.path))
        #expect(read.entries.map(\.urlString) == expected.map(\.urlString))
        #expect(read.entries.map(\.size) == expected.map(\.size))
        #expect(read.entries.map(\.modified) == expected.map(\.modified))
    }

    @Test func aPathTheTextFormatCannotHoldIsRefusedWithTheWayOut() throws {
        for path in ["#hash.txt", " lead.txt", "dir/trail.txt "] {
            let error = #expect(throws: ManifestError.self) { try ManifestWriter.text([try Self.entry(path, "http://h/x")]) }
            #expect(error?.reason.contains("use --format json") == true, "\(path)")
            #expect(ManifestWriter.json([try Self.entry(path, "http://h/x")]).contains("\"path\" : \"\(path)\""))
        }
    }
}
