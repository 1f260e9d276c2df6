import Foundation
import Testing
@testable import RangeFSCore

/// The rules of a tree grown from listings, without I/O: what is shown, what is refused and
/// why, and what a second listing of a directory changes.
@Suite("Listed tree")
struct ListedTreeTests {
    static let root = URL(string: "http://127.0.0.1:8080/music/")!

    static func file(_ name: String, _ href: String? = nil, size: UInt64? = nil) -> WebListingEntry {
        WebListingEntry(name: name, url: URL(string: href ?? name, relativeTo: root)!.absoluteURL, isDirectory: false, size: size)
    }

    static func directory(_ name: String, _ href: String) -> WebListingEntry {
        WebListingEntry(name: name, url: URL(string: href, relativeTo: root)!.absoluteURL, isDirectory: true)
    }

    static func paths(_ tree: ListedTree) -> (files: [String], directories: [String]) {
        let (manifest, directories) = tree.snapshot(source: "test")
        return (manifest.entries.map(\.path.description).sorted(), directories.map(\.description).sorted())
    }

    @Test("a file relisted with another size or date is changed; one relisted the same, one stated no longer, a new one, a renamed one and a directory are not")
    func aRelistedFileWithAnotherSizeOrDateIsChanged() {
        func dated(_ name: String, size: UInt64?, at seconds: TimeInterval?, href: String? = nil) -> WebListingEntry {
            var entry = Self.file(name, href, size: size)
            entry.modified = seconds.map { Date(timeIntervalSince1970: $0) }
            return entry
        }
        let earlier = [dated("same.mp3", size: 10, at: 100), dated("bigger.mp3", size: 10, at: 100),
                       dated("touched.mp3", size: 10, at: 100), dated("unstated.mp3", size: 10, at: 100),
                       dated("moved.mp3", size: 10, at: 100), Self.directory("sub", "sub/")]
        let now = [dated("same.mp3", size: 10, at: 100), dated("bigger.mp3", size: 11, at: 100),
                   dated("touched.mp3", size: 10, at: 200), dated("unstated.mp3", size: nil, at: nil),
                   dated("moved.mp3", size: 12, at: 100, href: "elsewhere/moved.mp3"), dated("new.mp3", size: 1, at: 1),
                   Self.directory("sub", "sub/")]
        let changed = ListedTree.changedFiles(from: earlier, to: now).map(\.lastPathComponent)
        #expect(changed == ["bigger.mp3", "touched.mp3"])
        #expect(ListedTree.changedFiles(from: [], to: now).isEmpty, "a first listing changes nothing")
    }

    @Test func anUnlistedTreeShowsNothingAndKnowsOnlyItsRoot() {
        let tree = ListedTree(root: Self.root)
        #expect(!tree.isListed("") && tree.url(of: "") == Self.root)
        #expect(Self.paths(tree).files.isEmpty && Self.paths(tree).directories.isEmpty)
    }

    @Test func aListingShowsItsFilesWithTheirStatedSizesAndItsDirectoriesUnlisted() {
        var tree = ListedTree(root: Self.root)
        let refused = tree.record([Self.file("b.mp3", size: 42), Self.file("a.mp3"), Self.directory("Album", "Album/")], at: "")
        #expect(refused.isEmpty)
        let (manifest, directories) = tree.snapshot(source: "test")
        #expect(manifest.entries.map(\.path.description) == ["b.mp3", "a.mp3"], "in the listing's order")
        #expect(manifest.entries.map(\.line) == [1, 2])
        #expect(manifest.entries.map(\.size) == [42, nil])
        #expect(manifest.entries[0].url.absoluteString == "http://127.0.0.1:8080/music/b.mp3")
        #expect(directories.map(\.description) == ["Album"])
        #expect(tree.isListed("") && !tree.isListed("Album"))
        #expect(tree.url(of: "Album")?.absoluteString == "http://127.0.0.1:8080/music/Album/")
    }

    @Test(arguments: [
        ("back to the root", directory("up", "/music/"), ListedTree.Refusal.alreadyShown(at: "")),
        ("the parent of the root", directory("parent", "../"), .outsideTheRoot),
        ("another host", directory("elsewhere", "http://127.0.0.2:8080/music/x/"), .outsideTheRoot),
        ("an absolute path elsewhere", directory("etc", "/etc/"), .outsideTheRoot),
        ("a name that is not a file name", file(".."), .badName("name \"..\" is not allowed")),
    ] as [(String, WebListingEntry, ListedTree.Refusal)])
    func childrenLeavingTheTreeOrLoopingAreRefused(case name: String, child: WebListingEntry, refusal: ListedTree.Refusal) {
        var tree = ListedTree(root: Self.root)
        let refused = tree.record([child, Self.file("kept.mp3")], at: "")
        #expect(refused.count == 1, "\(name)")
        if case .badName = refusal {
            if case .badName = refused.first?.refusal {} else { Issue.record("\(name): \(refused)") }
        } else {
            #expect(refused.first?.refusal == refusal, "\(name)")
        }
        #expect(Self.paths(tree).files == ["kept.mp3"])
    }

    @Test func aLinkBackToAnAncestorDeeperDownDoesNotLoop() {
        var tree = ListedTree(root: Self.root)
        _ = tree.record([Self.directory("a", "a/")], at: "")
        let refused = tree.record([Self.directory("again", "/music/a/"), Self.directory("b", "/music/a/b/")], at: "a")
        #expect(refused.map(\.refusal) == [.alreadyShown(at: "a")])
        #expect(Self.paths(tree).directories == ["a", "a/b"])
    }

    @Test func directoriesDeeperThanTheLimitAreNotShown() {
        var tree = ListedTree(root: Self.root, maxDepth: 2)
        _ = tree.record([Self.directory("1", "1/")], at: "")
        _ = tree.record([Self.directory("2", "1/2/")], at: "1")
        let refused = tree.record([Self.directory("3", "1/2/3/"), Self.file("deep.mp3", "1/2/deep.mp3")], at: "1/2")
        #expect(refused.map(\.refusal) == [.tooDeep])
        #expect(Self.paths(tree).directories == ["1", "1/2"])
        #expect(Self.paths(tree).files == ["1/2/deep.mp3"], "files at the deepest level still show")
    }

    @Test func listingADirectoryAgainDropsWhatIsGoneWithEverythingBelowIt() {
        var tree = ListedTree(root: Self.root)
        _ = tree.record([Self.directory("old", "old/"), Self.directory("kept", "kept/"), Self.file("x.mp3")], at: "")
        _ = tree.record([Self.directory("inner", "old/inner/"), Self.file("o.mp3", "old/o.mp3")], at: "old")
        _ = tree.record([Self.file("k.mp3", "kept/k.mp3")], at: "kept")
        _ = tree.record([Self.directory("kept", "kept/"), Self.file("y.mp3"), Self.directory("old2", "old/")], at: "")
        #expect(Self.paths(tree).files == ["kept/k.mp3", "y.mp3"])
        #expect(Self.paths(tree).directories == ["kept", "old2"], "the URL of a directory that went may show again under another name")
        #expect(tree.isListed("kept") && !tree.isListed("old2") && tree.url(of: "old/inner") == nil)
    }

    @Test func theNamesShownAreCountedAcrossListingsAgainstTheLimit() {
        var tree = ListedTree(root: Self.root, maxEntries: 4)
        _ = tree.record([Self.directory("old", "old/"), Self.file("a.mp3")], at: "")
        _ = tree.record([Self.file("o1.mp3", "old/o1.mp3"), Self.file("o2.mp3", "old/o2.mp3")], at: "old")
        #expect(tree.entryCount == 4)
        #expect(!tree.fits(1, at: "new") && tree.fits(2, at: "old"), "a listing replaced makes room")
        #expect(tree.fits(2, at: "") && !tree.fits(3, at: ""))
        // The top listed again without `old`: what was below it goes, and its names with it.
        _ = tree.record([Self.file("a.mp3")], at: "")
        #expect(tree.entryCount == 1 && tree.fits(3, at: "") && !tree.fits(5, at: ""))
    }

    @Test func aKeptListingPastTheLimitIsNotShownAgain() {
        let kept = StoredListing(children: [Self.file("a.mp3"), Self.file("b.mp3")], validator: nil, listedAt: Date())
        var roomy = ListedTree(root: Self.root, maxEntries: 2)
        roomy.restore(from: [Self.root.absoluteString: kept])
        #expect(roomy.isListed("") && roomy.entryCount == 2)
        var tight = ListedTree(root: Self.root, maxEntries: 1)
        tight.restore(from: [Self.root.absoluteString: kept])
        #expect(!tight.isListed("") && tight.entryCount == 0, "listed again when looked at, and refused then")
    }

    @Test func aFileAndADirectoryDifferingOnlyInCaseAreBothShown() {
        var tree = ListedTree(root: Self.root)
        _ = tree.record([Self.file("Song"), Self.directory("song", "song/")], at: "")
        #expect(Self.paths(tree).files == ["Song"] && Self.paths(tree).directories == ["song"])
    }
}
