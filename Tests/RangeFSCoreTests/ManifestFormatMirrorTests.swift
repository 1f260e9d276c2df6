import Foundation
import Testing
@testable import RangeFSCore

// Files with several sources: Metalink 4 and 3.0 documents, and "urls" lists in JSON and YAML.

private let sha = "3d6fece8033d146d8611eab4f032df738c8c1283620fd02a1f2bfec6e27d590d"
private let pieceA = String(repeating: "a", count: 64)
private let pieceB = String(repeating: "b", count: 64)
private let pieceC = String(repeating: "C", count: 64)

private func urls(_ entry: ManifestEntry) -> [String] {
    entry.urls.map(\.absoluteString)
}

// MARK: Metalink 4

@Test func metalink4ReadsURLsBestFirstWithSizeHashAndPieces() throws {
    let manifest = try Manifest.parse("""
        <?xml version="1.0" encoding="UTF-8"?>
        <metalink xmlns="urn:ietf:params:xml:ns:metalink">
          <published>2024-05-01T12:00:00Z</published>
          <file name="images/disk.iso">
            <size>600000</size>
            <identity>Disk</identity>
            <hash type="md5">d41d8cd98f00b204e9800998ecf8427e</hash>
            <hash type="SHA-256">\(sha.uppercased())</hash>
            <pieces length="262144" type="sha-1"><hash>da39a3ee5e6b4b0d3255bfef95601890afd80709</hash></pieces>
            <pieces length="262144" type="sha-256">
              <hash>\(pieceA)</hash>
              <hash>\(pieceB)</hash>
              <hash>\(pieceC)</hash>
            </pieces>
            <url location="de" priority="1">ftp://ftp.example.com/disk.iso</url>
            <url>https://last.example.com/disk.iso</url>
            <url location="fr" priority="20">http://second.example.com/disk.iso</url>
            <metaurl mediatype="torrent" priority="1">http://example.com/disk.iso.torrent</metaurl>
            <url priority="2">
              https://first.example.com/disk.iso
            </url>
            <url priority="20">http://third.example.com/disk.iso</url>
          </file>
          <file name="notes.txt">
            <url><![CDATA[http://example.com/notes.txt]]></url>
          </file>
        </metalink>
        """, source: "c.meta4")
    #expect(manifest.entries.map(\.path.description) == ["images/disk.iso", "notes.txt"])
    #expect(manifest.entries.map(\.line) == [4, 24])
    let disk = manifest.entries[0]
    // Lower priorities first, equal ones in document order, none at all last; ftp and the torrent are not used.
    #expect(urls(disk) == ["https://first.example.com/disk.iso", "http://second.example.com/disk.iso",
                           "http://third.example.com/disk.iso", "https://last.example.com/disk.iso"])
    #expect(disk.url.absoluteString == "https://first.example.com/disk.iso")
    #expect(disk.size == 600_000)
    #expect(disk.sha256 == sha)
    let pieces = try #require(disk.pieces)
    #expect(pieces.pieceLength == 262_144)
    #expect(pieces.count == 3)
    #expect((0..<3).map(pieces.hexDigest(ofPiece:)) == [pieceA, pieceB, pieceC.lowercased()])
    #expect(pieces.digest(ofPiece: 1).elementsEqual(Array(repeating: 0xBB, count: 32)))
    #expect(pieces.range(ofPiece: 2, fileSize: 600_000) == 524_288..<600_000)

    let notes = manifest.entries[1]
    #expect(urls(notes) == ["http://example.com/notes.txt"])
    #expect(notes.mirrors.isEmpty && notes.size == nil && notes.sha256 == nil && notes.pieces == nil)
}

@Test func metalinkPiecesCoverTheFileExactly() throws {
    func document(size: UInt64, length: Int, hashes: Int) -> String {
        """
        <metalink xmlns="urn:ietf:params:xml:ns:metalink"><file name="a.bin"><size>\(size)</size>
        <pieces length="\(length)" type="sha-256">\(String(repeating: "<hash>\(pieceA)</hash>", count: hashes))</pieces>
        <url>http://h/a.bin</url></file></metalink>
        """
    }
    // A size that is a multiple of the length, one that is not, and an empty file.
    #expect(try Manifest.parse(document(size: 1024, length: 512, hashes: 2), source: "a.meta4").entries[0].pieces?.count == 2)
    #expect(try Manifest.parse(document(size: 1025, length: 512, hashes: 3), source: "a.meta4").entries[0].pieces?.count == 3)
    #expect(try Manifest.parse(document(size: 0, length: 512, hashes: 0), source: "a.meta4").entries[0].pieces?.count == 0)
    let error = #expect(throws: ManifestError.self) { try Manifest.parse(document(size: 1025, length: 512, hashes: 2), source: "a.meta4") }
    #expect(error?.description == "a.meta4:2: file 'a.bin': <pieces> has 2 hashes, but 1025 bytes in pieces of 512 need 3")
}

@Test func metalink4WithAPrefixAndWithoutNamespaceDeclarationsElsewhere() throws {
    let manifest = try Manifest.parse("""
        <!-- made by a mirror manager -->
        <ml:metalink xmlns:ml="urn:ietf:params:xml:ns:metalink" xmlns:x="urn:example:extension">
          <ml:file name="a.bin"><x:note>ignored</x:note><ml:url priority="5">http://b.example/a.bin</ml:url>
          <ml:url priority="4">http://a.example/a.bin</ml:url></ml:file>
        </ml:metalink>
        """, source: "prefixed.meta4")
    #expect(manifest.entries.map(urls) == [["http://a.example/a.bin", "http://b.example/a.bin"]])
}

@Test func metalinkReadsOnlyItsOwnPlacesInAFile() throws {
    // A <hash>, <url>, <size> or <pieces> inside another element is not the file's; nor is a <file> in a <file>.
    let manifest = try Manifest.parse("""
        <metalink xmlns="urn:ietf:params:xml:ns:metalink" xmlns:x="urn:example:extension">
          <file name="a.bin">
            <size>1</size><pieces length="1" type="sha-256"><hash>\(pieceB)</hash></pieces>
            <x:extra><url>http://elsewhere/a.bin</url><size>7</size><hash type="sha-256">\(sha)</hash>
              <pieces length="1" type="sha-256"><hash>\(pieceA)</hash></pieces></x:extra>
            <url>http://h/a.bin<x:note>not part of the URL</x:note></url>
            <file name="inner.bin"><url>http://h/inner.bin</url></file>
          </file>
        </metalink>
        """, source: "a.meta4")
    #expect(manifest.entries.map(\.path.description) == ["a.bin"])
    #expect(manifest.entries.map(urls) == [["http://h/a.bin"]])
    #expect(manifest.entries[0].size == 1 && manifest.entries[0].sha256 == nil)
    let pieces = try #require(manifest.entries[0].pieces)
    #expect(pieces.count == 1 && pieces.hexDigest(ofPiece: 0) == pieceB)
}

// MARK: Metalink 3.0

@Test func metalink3ReadsResourcesByPreference() throws {
    let manifest = try Manifest.parse("""
        <?xml version="1.0" encoding="utf-8"?>
        <metalink version="3.0" xmlns="http://www.metalinker.org/">
          <files>
            <file name="dir/a.tar.gz">
              <size>5</size>
              <verification>
                <hash type="sha1">da39a3ee5e6b4b0d3255bfef95601890afd80709</hash>
                <hash type="sha256">\(sha)</hash>
                <pieces length="3" type="sha256">
                  <hash piece="0">\(pieceA)</hash>
                  <hash piece="1">\(pieceB)</hash>
                </pieces>
              </verification>
              <resources>
                <url type="ftp" preference="100">ftp://ftp.example.com/a.tar.gz</url>
                <url type="bittorrent" preference="100">http://example.com/a.tar.gz.torrent</url>
                <url type="http" preference="10">http://low.example.com/a.tar.gz</url>
                <url type="https" preference="90">https://high.example.com/a.tar.gz</url>
                <url>http://none.example.com/a.tar.gz</url>
              </resources>
            </file>
          </files>
        </metalink>
        """, source: "c.metalink")
    let entry = try #require(manifest.entries.first)
    #expect(manifest.entries.count == 1)
    #expect(entry.path.description == "dir/a.tar.gz")
    #expect(entry.line == 4)
    // Higher preferences first, none at all last; the ftp and torrent resources are not used.
    #expect(urls(entry) == ["https://high.example.com/a.tar.gz", "http://low.example.com/a.tar.gz", "http://none.example.com/a.tar.gz"])
    #expect(entry.size == 5 && entry.sha256 == sha)
    #expect(entry.pieces.map { ($0.pieceLength, $0.count) } ?? (0, 0) == (3, 2))

    // A 3.0 document that forgets its namespace is still recognised by its version.
    let bare = try Manifest.parse("<metalink version=\"3.0\"><files><file name=\"b\"><resources><url>http://h/b</url></resources></file></files></metalink>",
                                  source: "bare.metalink")
    #expect(bare.entries.map(urls) == [["http://h/b"]])
}

// MARK: Detection

@Test(arguments: [
    DetectionCase(path: "c.meta4", text: "", format: .metalink),
    DetectionCase(path: "C.METALINK", text: "http://h/a", format: .metalink),
    DetectionCase(path: nil, text: "<?xml version=\"1.0\"?>\n<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\"/>", format: .metalink),
    DetectionCase(path: "download", text: "\u{FEFF}<?xml version=\"1.0\"?>\r\n<!-- mirrors -->\r\n<metalink version=\"3.0\">", format: .metalink),
    DetectionCase(path: nil, text: "<ml:metalink xmlns:ml=\"urn:ietf:params:xml:ns:metalink\">", format: .metalink),
    DetectionCase(path: "feed", text: "<?xml version=\"1.0\"?>\n<!-- a feed --><rss version=\"2.0\">", format: .rss),
    DetectionCase(path: nil, text: "<?xml version=\"1.0\"?>\n<metalinks/>", format: .rss),
])
func metalinkDetection(_ detection: DetectionCase) {
    #expect(ManifestFormat.detect(path: detection.path, text: detection.text) == detection.format)
}

// MARK: JSON and YAML

@Test func jsonAndYAMLURLListsGiveMirrorsBestFirst() throws {
    let json = try Manifest.parse("""
        [
          {"urls": ["https://a.example/iso/disk.iso", "http://b.example/disk.iso"], "size": 10},
          {"path": "x/one.bin", "urls": ["http://h/one"]},
          {"url": "http://h/two.bin", "urls": null}
        ]
        """, source: "c.json")
    let yaml = try Manifest.parse("""
        - urls:
            - https://a.example/iso/disk.iso
            - http://b.example/disk.iso
          size: 10
        - path: x/one.bin
          urls: [http://h/one]
        - url: http://h/two.bin
          urls:
        """, source: "c.yaml")
    for manifest in [json, yaml] {
        // Named after the first URL when no path is given.
        #expect(manifest.entries.map(\.path.description) == ["disk.iso", "x/one.bin", "two.bin"], "\(manifest.source)")
        #expect(manifest.entries.map(urls) == [["https://a.example/iso/disk.iso", "http://b.example/disk.iso"],
                                               ["http://h/one"], ["http://h/two.bin"]], "\(manifest.source)")
        #expect(manifest.entries[0].size == 10)
    }
    #expect(json.entries.map(\.mirrors.count) == [1, 0, 0])
}

// MARK: Entries stay small

@Test func mirrorsAndPiecesLiveOutOfLine() throws {
    // Two texts (path and URL), the line and one pointer to what only some manifests state.
    #expect(MemoryLayout<ManifestEntry>.size <= 2 * MemoryLayout<SharedPrefixText>.size + 2 * MemoryLayout<Int>.size)
    let url = try #require(URL(string: "http://h/a"))
    var entry = ManifestEntry(path: try EntryPath(validating: "a"), url: url, line: 1)
    let plain = entry
    entry.mirrors = [try #require(URL(string: "http://mirror/a"))]
    #expect(entry != plain)
    entry.mirrors = []
    // Nothing stated again: equal to an entry that never had mirrors.
    #expect(entry == plain)
}

// MARK: Rejections

private let expectedRoot = "expected <metalink xmlns=\"urn:ietf:params:xml:ns:metalink\"> (Metalink 4) or <metalink xmlns=\"http://www.metalinker.org/\" version=\"3.0\">"

/// A Metalink 4 document around `files`, whose first line is the document's second.
private func meta4(_ files: String) -> String {
    "<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\">\n\(files)\n</metalink>"
}

/// Checked by `badManifestInAnyFormatIsRejectedWithExactMessage` with the other formats' cases.
let badMirrorCases: [BadFormatCase] = [
    // Metalink: the document
    BadFormatCase(label: "another root element", source: "m.meta4", text: "<rss><channel/></rss>",
                  message: "m.meta4: not a Metalink document: the root element is <rss> (\(expectedRoot))"),
    BadFormatCase(label: "unknown namespace", source: "m.meta4", text: "<metalink xmlns=\"urn:example\"><file name=\"a\"/></metalink>",
                  message: "m.meta4: not a Metalink document: <metalink> has namespace 'urn:example' (\(expectedRoot))"),
    BadFormatCase(label: "no namespace and no version", source: "m.metalink", text: "<metalink><files/></metalink>",
                  message: "m.metalink: not a Metalink document: <metalink> has no namespace (\(expectedRoot))"),
    BadFormatCase(label: "no files", source: "m.meta4", text: meta4("<published>2024-05-01T12:00:00Z</published>"),
                  message: "m.meta4: the Metalink has no <file> (nothing to mount)"),
    BadFormatCase(label: "not XML", source: "m.meta4", text: "http://h/a.iso\n",
                  message: "m.meta4:1: malformed XML: the document is empty"),
    BadFormatCase(label: "unclosed file", source: "m.meta4", text: meta4("<file name=\"a\">\n<url>http://h/a</url>"),
                  message: "m.meta4:4: malformed XML: closing tag does not match the open element"),
    BadFormatCase(label: "undeclared entity", source: "m.meta4", text: meta4("<file name=\"a&nbsp;b\"><url>http://h/a</url></file>"),
                  message: "m.meta4:2: malformed XML: undeclared entity (XML defines only &amp; &lt; &gt; &quot; &apos; and numeric references)"),
    BadFormatCase(label: "DTD internal subset", source: "m.meta4",
                  text: "<?xml version=\"1.0\"?>\n<!DOCTYPE metalink [<!ENTITY e \"http://h/a\">]>\n" + meta4("<file name=\"a\"><url>&e;</url></file>"),
                  message: "m.meta4:2: unsupported XML: DTD declarations (<!DOCTYPE … [ … ]>, <!ENTITY …>)"),
    BadFormatCase(label: "processing instruction without data", source: "m.meta4", text: meta4("<file name=\"a\">\n<?a?></file>"),
                  message: "m.meta4:3: unsupported XML: a processing instruction without data (<?…?>)"),
    // Metalink: names
    BadFormatCase(label: "file without a name", source: "m.meta4", text: meta4("<file name=\"a\"><url>http://h/a</url></file>\n<file><url>http://h/b</url></file>"),
                  message: "m.meta4:3: file 2: <file> has no name attribute"),
    BadFormatCase(label: "name with ..", source: "m.meta4", text: meta4("<file name=\"a/../../etc/passwd\"><url>http://h/a</url></file>"),
                  message: "m.meta4:2: file 'a/../../etc/passwd': path 'a/../../etc/passwd' contains '..'"),
    BadFormatCase(label: "absolute name", source: "m.meta4", text: meta4("<file name=\"/etc/passwd\"><url>http://h/a</url></file>"),
                  message: "m.meta4:2: file '/etc/passwd': path '/etc/passwd' is absolute (paths are relative to the mount)"),
    BadFormatCase(label: "duplicate name", source: "m.meta4",
                  text: meta4("<file name=\"a.iso\"><url>http://h/a</url></file>\n<file name=\"a.iso\"><url>http://h/b</url></file>"),
                  message: "m.meta4:3: file 'a.iso': duplicate path 'a.iso' (first defined on line 2)"),
    BadFormatCase(label: "file used as a directory", source: "m.meta4",
                  text: meta4("<file name=\"a\"><url>http://h/a</url></file>\n<file name=\"a/b\"><url>http://h/b</url></file>"),
                  message: "m.meta4:3: file 'a/b': path 'a/b' needs 'a' to be a directory, but line 2 defines it as a file"),
    // Metalink: URLs
    BadFormatCase(label: "no http URL", source: "m.meta4",
                  text: meta4("<file name=\"a.iso\">\n<url>ftp://h/a.iso</url>\n<metaurl mediatype=\"torrent\">http://h/a.torrent</metaurl>\n</file>"),
                  message: "m.meta4:2: file 'a.iso': no http or https <url> (other sources, such as ftp and torrents, are not used)"),
    BadFormatCase(label: "no URL at all", source: "m.metalink",
                  text: "<metalink version=\"3.0\" xmlns=\"http://www.metalinker.org/\"><files>\n<file name=\"a.iso\"><size>1</size></file></files></metalink>",
                  message: "m.metalink:2: file 'a.iso': no http or https <url> (other sources, such as ftp and torrents, are not used)"),
    BadFormatCase(label: "URL without a host", source: "m.meta4", text: meta4("<file name=\"a\">\n<url>http://user:secret@/a</url></file>"),
                  message: "m.meta4:3: file 'a': malformed URL 'http://***@/a': no host"),
    BadFormatCase(label: "relative URL", source: "m.meta4", text: meta4("<file name=\"a\">\n<url>mirror/a</url></file>"),
                  message: "m.meta4:3: file 'a': malformed URL 'mirror/a': no scheme (expected http:// or https://)"),
    BadFormatCase(label: "URL listed twice", source: "m.meta4",
                  text: meta4("<file name=\"a\">\n<url>http://h/a</url>\n<url priority=\"3\">http://h/a</url></file>"),
                  message: "m.meta4:4: file 'a': URL 'http://h/a' is listed twice (first on line 3)"),
    BadFormatCase(label: "priority 0", source: "m.meta4", text: meta4("<file name=\"a\">\n<url priority=\"0\">http://h/a</url></file>"),
                  message: "m.meta4:3: file 'a': priority must be a whole number from 1 to 999999 (got '0')"),
    BadFormatCase(label: "priority in words", source: "m.meta4", text: meta4("<file name=\"a\"><url priority=\"high\">http://h/a</url></file>"),
                  message: "m.meta4:2: file 'a': priority must be a whole number from 1 to 999999 (got 'high')"),
    BadFormatCase(label: "preference above 100", source: "m.metalink",
                  text: "<metalink version=\"3.0\"><files><file name=\"a\"><resources>\n<url preference=\"101\">http://h/a</url></resources></file></files></metalink>",
                  message: "m.metalink:2: file 'a': preference must be a whole number from 0 to 100 (got '101')"),
    // Metalink: size and hashes
    BadFormatCase(label: "negative size", source: "m.meta4", text: meta4("<file name=\"a\">\n<size>-1</size><url>http://h/a</url></file>"),
                  message: "m.meta4:3: file 'a': <size> must be a whole number from 0 to 4611686018427387904 (got '-1')"),
    BadFormatCase(label: "size above 2^62", source: "m.meta4", text: meta4("<file name=\"a\"><size>4611686018427387905</size><url>http://h/a</url></file>"),
                  message: "m.meta4:2: file 'a': <size> must be a whole number from 0 to 4611686018427387904 (got '4611686018427387905')"),
    BadFormatCase(label: "size twice", source: "m.meta4", text: meta4("<file name=\"a\"><size>1</size>\n<size>1</size><url>http://h/a</url></file>"),
                  message: "m.meta4:3: file 'a': <size> is given twice"),
    BadFormatCase(label: "short sha-256", source: "m.meta4", text: meta4("<file name=\"a\">\n<hash type=\"sha-256\">abc</hash><url>http://h/a</url></file>"),
                  message: "m.meta4:3: file 'a': a sha-256 <hash> must be 64 hexadecimal digits"),
    BadFormatCase(label: "two different sha-256", source: "m.meta4",
                  text: meta4("<file name=\"a\">\n<hash type=\"sha-256\">\(sha)</hash>\n<hash type=\"sha-256\">\(pieceA)</hash><url>http://h/a</url></file>"),
                  message: "m.meta4:4: file 'a': a second, different sha-256 <hash> (the first is on line 3)"),
    BadFormatCase(label: "pieces without a size", source: "m.meta4",
                  text: meta4("<file name=\"a\">\n<pieces length=\"4\" type=\"sha-256\"><hash>\(pieceA)</hash></pieces><url>http://h/a</url></file>"),
                  message: "m.meta4:3: file 'a': <pieces> needs the file's <size> (to know how many pieces there are)"),
    BadFormatCase(label: "too many piece hashes", source: "m.meta4",
                  text: meta4("<file name=\"a\"><size>4</size>\n<pieces length=\"4\" type=\"sha-256\"><hash>\(pieceA)</hash><hash>\(pieceB)</hash></pieces><url>http://h/a</url></file>"),
                  message: "m.meta4:3: file 'a': <pieces> has 2 hashes, but 4 bytes in pieces of 4 need 1"),
    BadFormatCase(label: "pieces of length 0", source: "m.meta4",
                  text: meta4("<file name=\"a\"><size>4</size>\n<pieces length=\"0\" type=\"sha-256\"></pieces><url>http://h/a</url></file>"),
                  message: "m.meta4:3: file 'a': <pieces length> must be a whole number from 1 to 4611686018427387904 (got '0')"),
    BadFormatCase(label: "pieces without a length", source: "m.meta4",
                  text: meta4("<file name=\"a\"><size>4</size>\n<pieces type=\"sha-256\"></pieces><url>http://h/a</url></file>"),
                  message: "m.meta4:3: file 'a': <pieces length> must be a whole number from 1 to 4611686018427387904 (got '')"),
    BadFormatCase(label: "bad piece hash", source: "m.meta4",
                  text: meta4("<file name=\"a\"><size>4</size><pieces length=\"4\" type=\"sha-256\">\n<hash>\(sha.dropLast())g</hash></pieces><url>http://h/a</url></file>"),
                  message: "m.meta4:3: file 'a': a sha-256 <hash> must be 64 hexadecimal digits"),
    BadFormatCase(label: "two sha-256 pieces", source: "m.meta4",
                  text: meta4("<file name=\"a\"><size>4</size><pieces length=\"4\" type=\"sha-256\"><hash>\(pieceA)</hash></pieces>\n<pieces length=\"2\" type=\"sha-256\"/><url>http://h/a</url></file>"),
                  message: "m.meta4:3: file 'a': a second sha-256 <pieces>"),
    BadFormatCase(label: "piece hashes out of order", source: "m.metalink",
                  text: "<metalink version=\"3.0\"><files><file name=\"a\"><size>8</size><verification><pieces length=\"4\" type=\"sha256\">\n<hash piece=\"1\">\(pieceA)</hash><hash piece=\"0\">\(pieceB)</hash></pieces></verification><resources><url>http://h/a</url></resources></file></files></metalink>",
                  message: "m.metalink:2: file 'a': <hash piece=\"1\"> is out of order (expected piece 0)"),

    // JSON and YAML "urls"
    BadFormatCase(label: "url and urls", source: "c.json", text: "[{\"url\": \"http://h/a\",\n \"urls\": [\"http://h/b\"]}]",
                  message: "c.json:2: entry 1: give either \"url\" or \"urls\", not both"),
    BadFormatCase(label: "empty urls", source: "c.json", text: "[{\"urls\": []}]",
                  message: "c.json:1: entry 1: \"urls\" is empty (give at least one URL)"),
    BadFormatCase(label: "urls not a list", source: "c.json", text: "[{\"urls\": \"http://h/a\"}]",
                  message: "c.json:1: entry 1: \"urls\" must be a list of URL strings (got a string)"),
    BadFormatCase(label: "urls holding a number", source: "c.json", text: "[{\"urls\": [\"http://h/a\",\n 5]}]",
                  message: "c.json:2: entry 1: \"urls\" must hold URL strings (got a number)"),
    BadFormatCase(label: "ftp in urls", source: "c.json", text: "[{\"urls\": [\"http://h/a\",\n \"ftp://h/a\"]}]",
                  message: "c.json:2: entry 1: scheme 'ftp' is not supported (only http and https)"),
    BadFormatCase(label: "URL twice in urls", source: "c.json", text: "[{\"urls\": [\"http://u:secret@h/a\",\n \"http://u:secret@h/a\"]}]",
                  message: "c.json:2: entry 1: \"urls\" lists 'http://***@h/a' twice"),
    BadFormatCase(label: "misspelt urls", source: "c.json", text: "[{\"urrls\": [\"http://h/a\"]}]",
                  message: "c.json:1: entry 1: unknown field \"urrls\" (did you mean \"urls\"? expected url, urls, path, size, sha256, headers or mtime)"),
    BadFormatCase(label: "empty urls", source: "c.yaml", text: "- path: a\n  urls: []\n",
                  message: "c.yaml:2: entry 1: \"urls\" is empty (give at least one URL)"),
    BadFormatCase(label: "URL twice in urls", source: "c.yaml", text: "- urls:\n  - http://h/a\n  - http://h/a\n",
                  message: "c.yaml:3: entry 1: \"urls\" lists 'http://h/a' twice"),
    BadFormatCase(label: "URL list that names nothing", source: "c.yaml", text: "- urls: [http://h/dir/]\n",
                  message: "c.yaml:1: entry 1: cannot name an entry from URL 'http://h/dir/' (give a \"path\")"),
]
