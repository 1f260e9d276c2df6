import Foundation
import Testing
@testable import RangeFSCore

/// Documents nested deeper than any real one: refused with their line before a parser that
/// recurses (libxml2, Yams, the trees built from them) sees them, never a crash.
@Suite("Nesting depth")
struct NestingDepthTests {
    static let depth = 100_000

    @Test func aBucketPage100000ElementsDeepIsRefusedWithAClearError() {
        let page = "<ListBucketResult>" + String(repeating: "<a>", count: Self.depth) + String(repeating: "</a>", count: Self.depth)
            + "</ListBucketResult>"
        #expect(page.utf8.count > 700_000)
        #expect {
            try BucketListingPage.parse(Data(page.utf8))
        } throws: { error in
            "\(error)".contains("nested more than \(NestingDepthGuard.maxDepth) levels deep")
        }
    }

    @Test func xmlAtTheDepthLimitIsRead() throws {
        let depth = NestingDepthGuard.maxDepth
        let text = String(repeating: "<a x='>'>", count: depth) + "<!-- <b><b><b> --><c/>" + String(repeating: "</a>", count: depth)
        try NestingDepthGuard.checkXML(Array(text.utf8))
        #expect(throws: DocumentSyntaxError.self) {
            try NestingDepthGuard.checkXML(Array(("<r>" + text + "</r>").utf8))
        }
    }

    @Test(arguments: ["[", "{\"a\":"])
    func aJSONManifest100000DeepIsRefused(_ opener: String) {
        let text = String(repeating: opener, count: Self.depth)
        #expect(throws: (any Error).self) { try Manifest.parse(text, source: "deep.json") }
    }

    @Test(arguments: ["[", "- ", "{a: "])
    func aYAMLManifest100000DeepIsRefused(_ opener: String) {
        let text = "files:\n  " + String(repeating: opener, count: Self.depth) + "x\n"
        #expect {
            try Manifest.parse(text, source: "deep.yaml")
        } throws: { error in
            "\(error)".contains("nested more than")
        }
    }

    @Test func anOrdinaryYAMLManifestPassesTheDepthCheck() throws {
        let text = "files:\n  - path: a/b.mp3\n    url: \"http://example.com/b.mp3\" # [not counted\n    headers: {X-A: '1', X-B: \"[2]\"}\n"
        try NestingDepthGuard.checkYAML(Array(text.utf8))
    }
}
