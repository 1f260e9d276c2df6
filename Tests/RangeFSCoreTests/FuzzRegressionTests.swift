import Foundation
import Testing
@testable import RangeFSCore

/// Inputs found by the libFuzzer harnesses in fuzz/ (fuzz/run.sh), replayed as ordinary
/// tests: every file in fuzz/crashes/<Harness>/ (the inputs that once crashed or hung a
/// parser) and in the seed corpus fuzz/corpus/<Harness>/, plus hand-made hostile inputs.
/// Each goes through the same entry points and checks as the harness, with issues
/// recorded instead of a crash.
@Suite("Fuzz regressions")
struct FuzzRegressionTests {
    static var fuzzDirectory: URL {
        // .../Tests/RangeFSCoreTests/FuzzRegressionTests.swift → the package root's fuzz/.
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("fuzz")
    }

    /// Saved inputs of one harness: crashes first, then the seed corpus.
    static func savedInputs(_ harness: String) -> [(name: String, bytes: [UInt8])] {
        var inputs: [(String, [UInt8])] = []
        for folder in ["crashes", "corpus"] {
            let dir = fuzzDirectory.appendingPathComponent(folder).appendingPathComponent(harness)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
            for name in names.sorted() {
                if let data = FileManager.default.contents(atPath: dir.appendingPathComponent(name).path) {
                    inputs.append(("\(folder)/\(harness)/\(name)", [UInt8](data)))
                }
            }
        }
        return inputs
    }

    @Test("every seed of the manifest fuzzer parses or fails cleanly")
    func savedManifestInputs() {
        let inputs = Self.savedInputs("ManifestFuzzer").filter { $0.name.hasPrefix("corpus/") }
        #expect(!inputs.isEmpty, "no saved inputs under \(Self.fuzzDirectory.path)")
        for input in inputs {
            ManifestFuzzCheck.run(input.bytes, label: input.name)
        }
    }

    /// Inputs that crashed a parser run in a child process each, so that a crash that comes
    /// back fails this test instead of killing the whole test run.
    @Test("no input that once crashed the manifest parsers crashes them again",
          arguments: FuzzRegressionTests.savedInputs("ManifestFuzzer").filter { $0.name.hasPrefix("crashes/") }.map(\.name))
    func manifestCrashInputs(_ name: String) async {
        let file = Self.fuzzDirectory.appendingPathComponent(name).path
        await #expect(processExitsWith: .success, "\(name) crashes a manifest parser") { [file = file as String] in
            if let data = FileManager.default.contents(atPath: file) {
                ManifestFuzzCheck.parseOnly([UInt8](data))
            }
        }
    }

    @Test("every saved header-fuzzer input parses consistently")
    func savedHeaderInputs() {
        let inputs = Self.savedInputs("HeaderFuzzer")
        #expect(!inputs.isEmpty, "no saved inputs under \(Self.fuzzDirectory.path)")
        for input in inputs {
            HeaderFuzzCheck.run(input.bytes, label: input.name)
        }
    }

    @Test("hostile manifests fail cleanly in every format", arguments: HostileInput.manifests)
    func hostileManifests(_ input: HostileInput) {
        for selector in UInt8(0)..<11 {
            ManifestFuzzCheck.run([selector] + input.bytes, label: "\(input.name) (selector \(selector))")
        }
    }

    @Test("hostile header values parse consistently", arguments: HostileInput.headers)
    func hostileHeaders(_ input: HostileInput) {
        HeaderFuzzCheck.run(input.bytes, label: input.name)
    }

    /// A YAML "billion laughs": anchors that refer to anchors, 9 wide and 6 deep, expand to
    /// 531 441 strings. Found by hand while fuzzing; with 9 levels the expansion never ends
    /// (`rangefs mount` spins at 100% CPU, hundreds of MB and growing).
    /// Six levels still expand in seconds without a limit, so an accepted manifest (not a
    /// hang) is what shows the limit is gone.
    @Test("a YAML alias bomb is rejected instead of being expanded")
    func yamlAliasBomb() {
        let text = HostileInput.aliasBomb(levels: 6)
        let result = Result { () throws(ManifestError) -> Manifest in
            try Manifest.parse(text, source: "bomb.yaml", format: .yaml)
        }
        if case .success(let manifest) = result {
            Issue.record("an alias bomb was accepted with \(manifest.entries.count) entries")
        }
    }
}

/// The manifest harness's entry points and checks (fuzz/ManifestFuzzer/main.swift).
enum ManifestFuzzCheck {
    /// The harness's entry points without any check: for child processes.
    static func parseOnly(_ bytes: [UInt8]) {
        guard let selector = bytes.first else { return }
        let text = String(decoding: bytes.dropFirst(), as: UTF8.self)
        switch selector % 11 {
        case 10:
            _ = try? BucketListingPage.parse(Data(bytes.dropFirst()))
            _ = S3ErrorReply.parse(Data(bytes.dropFirst()))
        case 0: _ = try? Manifest.parsePlainText(text, source: "fuzz-input")
        case 1: _ = try? Manifest.parse(text, source: "fuzz-input")
        case 2: _ = try? Manifest.parse(text, source: "fuzz-input", format: .json)
        case 3: _ = try? Manifest.parse(text, source: "fuzz-input", format: .yaml)
        case 4: _ = try? Manifest.parse(text, source: "fuzz-input", format: .m3u)
        case 5: _ = try? Manifest.parse(text, source: "fuzz-input", format: .m3u, baseURL: URL(string: "http://example.com/dir/list.m3u8"))
        case 6: _ = try? Manifest.parse(text, source: "fuzz-input", format: .rss)
        case 7: _ = try? Manifest.parse(text, source: "fuzz-input", format: .text)
        case 9: _ = try? Manifest.parse(text, source: "fuzz-input", format: .metalink)
        default:
            _ = try? RemoteURLParser.parse(text)
            _ = try? EntryPath(validating: text)
        }
    }

    static func run(_ bytes: [UInt8], label: String) {
        guard let selector = bytes.first else { return }
        let text = String(decoding: bytes.dropFirst(), as: UTF8.self)
        let source = "fuzz-input"
        if selector % 11 == 10 {
            BucketListingFuzzCheck.run(Data(bytes.dropFirst()), label: label)
            return
        }
        do {
            let manifest: Manifest
            switch selector % 11 {
            case 0: manifest = try Manifest.parsePlainText(text, source: source)
            case 1: manifest = try Manifest.parse(text, source: source)
            case 2: manifest = try Manifest.parse(text, source: source, format: .json)
            case 3: manifest = try Manifest.parse(text, source: source, format: .yaml)
            case 4: manifest = try Manifest.parse(text, source: source, format: .m3u)
            case 5: manifest = try Manifest.parse(text, source: source, format: .m3u,
                                                  baseURL: URL(string: "http://example.com/dir/list.m3u8"))
            case 6: manifest = try Manifest.parse(text, source: source, format: .rss)
            case 7: manifest = try Manifest.parse(text, source: source, format: .text)
            case 9: manifest = try Manifest.parse(text, source: source, format: .metalink)
            default:
                _ = try? RemoteURLParser.parse(text)
                _ = try? EntryPath(validating: text)
                _ = PercentDecoding.decode(text)
                _ = DisplayText.quoted(text)
                _ = CredentialRedactor.redactingLoosely(text)
                _ = CredentialRedactor.redactingAuthority(of: text)
                _ = ManifestFormat(sniffing: text)
                return
            }
            check(manifest, label: label)
        } catch {
            #expect(error.description.hasPrefix(source), "\(label): an error that does not name its source: \(error)")
            #expect(error.line >= 0 && error.line <= text.utf8.count + 1, "\(label): impossible line \(error.line)")
        }
    }

    private static func check(_ manifest: Manifest, label: String) {
        var files = Set<[String]>()
        for entry in manifest.entries {
            let components = entry.path.components
            let valid = !components.isEmpty && components.allSatisfy { component in
                let bytes = Array(component.utf8)
                return !bytes.isEmpty && component != "." && component != ".." && !bytes.contains(UInt8(ascii: "/"))
                    && !bytes.contains { $0 < 0x20 || $0 == 0x7F } && bytes.count <= 255
            }
            #expect(valid, "\(label): an accepted path with a bad component: \(components)")
            for url in entry.urls {
                let scheme = url.scheme?.lowercased()
                #expect(scheme == "http" || scheme == "https", "\(label): accepted scheme \(scheme ?? "none")")
                #expect(url.host?.isEmpty == false, "\(label): accepted URL without a host")
            }
            #expect(Set(entry.urls.map(\.absoluteString)).count == entry.urls.count, "\(label): the same URL twice in one file")
            if let pieces = entry.pieces {
                #expect(entry.size.map { UInt64(pieces.count) == PieceHashes.count(forSize: $0, pieceLength: pieces.pieceLength) } == true,
                        "\(label): piece hashes that do not cover the file")
            }
            #expect(files.insert(components).inserted, "\(label): duplicate path accepted: \(components)")
            for value in entry.headers.values {
                #expect(!value.utf8.contains { $0 == 0x0A || $0 == 0x0D || $0 == 0 }, "\(label): header value with CR/LF/NUL")
            }
        }
    }
}

/// The manifest harness's checks of selector 10, an S3 ListObjectsV2 reply
/// (checkBucketListing in fuzz/ManifestFuzzer/main.swift).
enum BucketListingFuzzCheck {
    static func run(_ body: Data, label: String) {
        if let reply = S3ErrorReply.parse(body) {
            let request = S3FailedRequest(bucket: "b", operation: .listing(prefix: "p/"), region: "us-east-1", isSigned: true)
            let sentence = S3Failure.explain(status: 403, reply: reply, bucketRegionHeader: nil, request: request).sentence
            #expect(!sentence.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }, "\(label): a control character in \(sentence)")
        }
        let page: BucketListingPage
        do throws(BucketListingError) {
            page = try BucketListingPage.parse(body)
        } catch {
            #expect(!error.reason.isEmpty, "\(label): a listing refused without a reason")
            return
        }
        #expect(page.isTruncated == (page.nextContinuationToken != nil) && page.nextContinuationToken != "", "\(label): truncation and token disagree")
        let directory = BucketDirectory(prefix: page.prefix, pages: [page])
        var names = Set<[UInt8]>()
        var accounted = Set<[UInt8]>(directory.leftOut.map { Array($0.key.utf8) })
        accounted.insert(Array(page.prefix.utf8))
        for child in directory.children {
            #expect((try? EntryPath(validatingComponent: child.name)) != nil, "\(label): invalid name shown: \(child.name)")
            #expect(names.insert(Array(child.name.utf8)).inserted, "\(label): two children named \(child.name)")
            let expected: [UInt8] = switch child {
            case .file(let file): Array(page.prefix.utf8) + Array(file.name.utf8)
            case .directory(let sub): Array(page.prefix.utf8) + Array(sub.name.utf8) + [UInt8(ascii: "/")]
            }
            #expect(Array(child.listedKey.utf8) == expected, "\(label): \(child) is not its prefix and name")
            accounted.insert(expected)
        }
        for (a, b) in zip(directory.children, directory.children.dropFirst()) {
            #expect(a.listedKey.utf8.lexicographicallyPrecedes(b.listedKey.utf8), "\(label): \(a.name) before \(b.name)")
        }
        for key in page.objects.map(\.key) + page.commonPrefixes {
            #expect(accounted.contains(Array(key.utf8)), "\(label): \(key) neither shown nor left out")
        }
    }
}

/// The header harness's checks (fuzz/HeaderFuzzer/main.swift).
enum HeaderFuzzCheck {
    static func run(_ bytes: [UInt8], label: String) {
        let text = String(decoding: bytes, as: UTF8.self)
        if let parsed = ContentRange(headerValue: text) {
            #expect(!parsed.range.isEmpty, "\(label): empty Content-Range accepted")
            if let total = parsed.total {
                #expect(parsed.range.upperBound <= total, "\(label): Content-Range past its total accepted")
            }
            let canonical = "bytes \(parsed.range.lowerBound)-\(parsed.range.upperBound - 1)/\(parsed.total.map(String.init) ?? "*")"
            #expect(ContentRange(headerValue: canonical) == parsed, "\(label): \(canonical) does not round-trip")
        }
        if let total = ContentRange.unsatisfiedTotal(headerValue: text) {
            #expect(ContentRange.unsatisfiedTotal(headerValue: "bytes */\(total)") == total, "\(label)")
        }
        if let bytes = ByteSize.parse(text) {
            #expect(ByteSize.parse(String(bytes)) == bytes, "\(label): ByteSize does not round-trip")
        }
        let trimmed = text.trimmingASCIIWhitespace()
        #expect(trimmed.utf8.count <= text.utf8.count)
    }
}

/// Hand-made inputs a fuzzer is unlikely to build in a few minutes.
struct HostileInput: Sendable, CustomTestStringConvertible {
    let name: String
    let bytes: [UInt8]
    var testDescription: String { name }

    init(_ name: String, _ text: String) {
        self.name = name
        self.bytes = Array(text.utf8)
    }

    init(_ name: String, bytes: [UInt8]) {
        self.name = name
        self.bytes = bytes
    }

    static func aliasBomb(levels: Int) -> String {
        let names = (0..<levels).map { "n\($0)" }
        var lines = ["\(names[0]): &\(names[0]) [" + Array(repeating: "\"http://h/x\"", count: 9).joined(separator: ",") + "]"]
        for level in 1..<levels {
            lines.append("\(names[level]): &\(names[level]) [" + Array(repeating: "*\(names[level - 1])", count: 9).joined(separator: ",") + "]")
        }
        lines.append("entries: *\(names[levels - 1])")
        return lines.joined(separator: "\n") + "\n"
    }

    static let manifests: [HostileInput] = [
        HostileInput("deep JSON nesting", String(repeating: "[", count: 100_000)),
        HostileInput("deep JSON objects", String(repeating: "{\"a\":", count: 50_000)),
        HostileInput("deep YAML flow nesting", String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)),
        HostileInput("deep YAML block nesting", String(repeating: "- ", count: 20_000) + "x"),
        HostileInput("one 1 MB line", "http://h/" + String(repeating: "a", count: 1 << 20)),
        HostileInput("100 000 TABs", String(repeating: "\t", count: 100_000)),
        HostileInput("100 000 empty lines", String(repeating: "\n", count: 100_000)),
        HostileInput("NUL bytes", bytes: [0, 0, 0, 0x68, 0x74, 0x74, 0x70, 0x3A, 0x2F, 0x2F, 0, 0x2F]),
        HostileInput("lone surrogate escape in JSON", "[{\"url\": \"http://h/\\ud800\", \"path\": \"\\udc00\"}]"),
        HostileInput("huge JSON number", "[{\"url\": \"http://h/a\", \"size\": 1" + String(repeating: "0", count: 10_000) + "}]"),
        HostileInput("JSON exponent size", "[{\"url\": \"http://h/a\", \"size\": 1e400}]"),
        HostileInput("percent-encoded NUL and slash in a name", "http://h/a%00b\nhttp://h/c%2F..%2Fd\nhttp://h/%2e%2e"),
        HostileInput("URL with IPv6 and port 0", "http://[::1]:0/a\nhttp://[::1/b"),
        HostileInput("M3U with only titles", "#EXTM3U\n" + String(repeating: "#EXTINF:-1,\u{202E}evil\n", count: 1000)),
        HostileInput("RSS entity expansion", """
            <?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">\
            <!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">]>\
            <rss><channel><item><title>&d;</title><enclosure url="http://h/a.mp3"/></item></channel></rss>
            """),
        HostileInput("RSS external entity", """
            <?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>\
            <rss><channel><item><title>&x;</title><enclosure url="http://h/a.mp3"/></item></channel></rss>
            """),
        HostileInput("small YAML alias bomb", aliasBomb(levels: 3)),
    ]

    static let headers: [HostileInput] = [
        HostileInput("max values", "bytes 18446744073709551614-18446744073709551614/18446744073709551615"),
        HostileInput("overflowing last", "bytes 0-18446744073709551615/18446744073709551615"),
        HostileInput("21 digits", "bytes 0-1/100000000000000000000"),
        HostileInput("negative", "bytes -1-5/10"),
        HostileInput("plus sign", "bytes +1-5/10"),
        HostileInput("spaces inside", "bytes 1 - 5 / 10"),
        HostileInput("unicode digits", "bytes ١-٥/١٠"),
        HostileInput("star total and range star", "bytes */*"),
        HostileInput("only prefix", "bytes "),
        HostileInput("CRLF inside", "bytes 0-1\r\n/2"),
        HostileInput("size overflow", "18446744073709551615G"),
        HostileInput("size with unicode", "１０M"),
    ]
}
