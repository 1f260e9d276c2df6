import Foundation
import Testing
@testable import RangeFSCore

/// The mapping of keys to one directory's names, rule by rule (mountpoint-s3's documented
/// semantics plus the mount's own name check).
@Suite("S3 buckets: keys to a directory")
struct BucketDirectoryTests {
    func directory(_ prefix: String, files: [String], prefixes: [String] = []) -> BucketDirectory {
        BucketDirectory(prefix: prefix, objects: files.map { BucketObject(key: $0, size: 1) }, commonPrefixes: prefixes)
    }

    /// Names as `ls -p` shows them: directories with a trailing `/`.
    func shown(_ directory: BucketDirectory) -> [String] {
        directory.children.map { if case .directory(let sub) = $0 { sub.name + "/" } else { $0.name } }
    }

    func leftOut(_ directory: BucketDirectory) -> [String: String] {
        Dictionary(uniqueKeysWithValues: directory.leftOut.map { ($0.key, $0.reason) })
    }

    @Test func motosPhotosPrefixShowsEveryValidNameAndSaysWhyTheOthersAreNot() throws {
        let page = try BucketListingPage.parse(try s3Fixture("moto-photos-url.xml"))
        let photos = BucketDirectory(prefix: "photos/", pages: [page])
        #expect(shown(photos) == [
            "2024/", "a/", "amp&lt.jpg", "cat.jpg", "clash/", "it's \"quoted\" <angle>.jpg", "percent%41.jpg",
            "plus+sign.jpg", "question?.jpg", "tilde~.jpg", "with space.jpg", "ünïcödé-日本.jpg",
        ])
        let reasons = leftOut(photos)
        #expect(reasons.count == 4, "\(photos.leftOut)")
        #expect(reasons["photos/../"]?.contains("contains '..'") == true)
        #expect(reasons["photos/./"]?.contains("contains '.'") == true)
        #expect(reasons["photos/clash"] == "a directory of the same name is shown instead")
        // moto's photos/ object holds 7 bytes, which no name can show.
        #expect(reasons["photos/"] == "an object named like its directory; its 7 bytes are not shown")
        let cat = try #require(photos.children.first { $0.name == "cat.jpg" })
        #expect(cat == .file(.init(name: "cat.jpg", key: "photos/cat.jpg", size: 14, etag: "\"4e619f5b28df4a9744963e6700abe7ca\"",
                                   lastModified: Date(timeIntervalSince1970: 1_795_523_091))))
        #expect(photos.children.first { $0.name == "2024" } == .directory(.init(name: "2024", prefix: "photos/2024/")))
    }

    @Test func theBucketsTopIsListedWithAnEmptyPrefix() throws {
        let top = BucketDirectory(prefix: "", pages: [try BucketListingPage.parse(try s3Fixture("moto-top-url.xml"))])
        #expect(shown(top) == ["photos/", "readme.txt", "sub dir/"])
        #expect(top.leftOut.isEmpty)
    }

    @Test func anEmptyFolderObjectIsTheDirectoryItselfAndNotReported() throws {
        let page = try BucketListingPage.parse(try s3Fixture("aws-doc-delimiter.xml"))
        let photos = BucketDirectory(prefix: "photos/2006/", pages: [page])
        #expect(shown(photos) == ["February/", "January/"])
        #expect(photos.leftOut.isEmpty)
    }

    @Test func aPrefixWithAnEmptySegmentIsNotShown() throws {
        let page = try BucketListingPage.parse(try s3Fixture("moto-empty-segment-url.xml"))
        let a = BucketDirectory(prefix: "photos/a/", pages: [page])
        #expect(a.children.isEmpty)
        #expect(leftOut(a)["photos/a//"]?.contains("would be empty") == true)
    }

    @Test func dotAndDotDotAreNotShownAsFilesEither() {
        let d = directory("p/", files: ["p/.", "p/..", "p/.hidden", "p/..."])
        #expect(shown(d) == ["...", ".hidden"])
        #expect(leftOut(d)["p/."]?.contains("contains '.'") == true)
        #expect(leftOut(d)["p/.."]?.contains("contains '..'") == true)
    }

    @Test func aFileAndADirectoryOfTheSameNameShowTheDirectoryAndSayItOnce() {
        // The directory arrives on a later page than the file, and the file is listed twice.
        let first = BucketListingPage(prefix: "m/", objects: [BucketObject(key: "m/blue", size: 3)], commonPrefixes: [])
        let second = BucketListingPage(prefix: "m/", objects: [BucketObject(key: "m/blue", size: 3)], commonPrefixes: ["m/blue/"])
        let d = BucketDirectory(prefix: "m/", pages: [first, second])
        #expect(shown(d) == ["blue/"])
        #expect(d.leftOut == [.init(key: "m/blue", reason: "a directory of the same name is shown instead")])
    }

    @Test func nulControlCharactersAndSlashesAreNotInNames() {
        let d = directory("", files: ["nul\u{0}x", "bell\u{7}", "tab\tname", "a/b", "fine"])
        #expect(shown(d) == ["fine"])
        let reasons = leftOut(d)
        #expect(reasons["nul\u{0}x"] == "its name contains a NUL byte")
        #expect(reasons["bell\u{7}"]?.contains("control character (0x07)") == true)
        #expect(reasons["tab\tname"]?.contains("control character (0x09)") == true)
        #expect(reasons["a/b"]?.contains("contains '/'") == true)
    }

    @Test func aNameOf255BytesIsShownAndOneOf256IsNot() {
        let longest = String(repeating: "é", count: 127) + "x"    // 255 bytes
        let tooLong = String(repeating: "é", count: 128)           // 256 bytes
        let d = directory("long/", files: ["long/" + longest, "long/" + tooLong], prefixes: ["long/" + tooLong + "/"])
        #expect(shown(d) == [longest])
        #expect(d.leftOut.count == 2)
        #expect(d.leftOut.allSatisfy { $0.reason.contains("256 bytes (at most 255)") }, "\(d.leftOut)")
    }

    @Test func namesAreComparedByTheirBytesNotByUnicodeEquivalence() {
        let composed = "caf\u{E9}", decomposed = "cafe\u{301}"
        let d = directory("", files: [composed, decomposed], prefixes: [decomposed + "/"])
        // Two files would be one name to Swift's ==; to the kernel they are two, and only the
        // decomposed one clashes with the directory.
        #expect(d.children.count == 2)
        let names = d.children.map { Array($0.name.utf8) }
        #expect(names.contains(Array(composed.utf8)) && names.contains(Array(decomposed.utf8)))
        #expect(d.children.contains { if case .directory(let sub) = $0 { sub.prefix.utf8.elementsEqual((decomposed + "/").utf8) } else { false } })
        #expect(d.leftOut.map(\.key).elementsEqual([decomposed]) { $0.utf8.elementsEqual($1.utf8) })
    }

    @Test func keysOutsideTheListedPrefixAreLeftOut() {
        let d = directory("in/", files: ["in/x", "out/y"], prefixes: ["elsewhere/"])
        #expect(shown(d) == ["x"])
        #expect(leftOut(d)["out/y"]?.contains("does not start with that prefix") == true)
        #expect(leftOut(d)["elsewhere/"]?.contains("does not start with that prefix") == true)
    }

    @Test func childrenComeInTheByteOrderOfTheirKeysWhateverOrderTheyArrive() {
        let files = ["d/a b", "d/a", "d/Z", "d/ü", "d/a-c", "d/b"]
        let prefixes = ["d/a/", "d/B/"]
        let expected = ["B/", "Z", "a b", "a-c", "a/", "b", "ü"]
        // "a" the file clashes with "a/"; every arrival order gives the same directory.
        for seed in 0..<6 {
            let rotated = Array(files[seed...] + files[..<seed])
            let d = directory("d/", files: rotated, prefixes: seed.isMultiple(of: 2) ? prefixes : prefixes.reversed())
            #expect(shown(d) == expected, "arrival order \(rotated)")
        }
    }

    @Test func everyCapturedReplyKeepsTheInvariantsTheFuzzerChecks() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: s3Fixtures.path).filter { $0.hasSuffix(".xml") }
        #expect(files.count >= 15)
        for file in files.sorted() {
            BucketListingFuzzCheck.run(try s3Fixture(file), label: file)
        }
    }
}
