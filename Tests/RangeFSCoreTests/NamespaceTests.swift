import Foundation
import Testing
@testable import RangeFSCore

private func manifest(_ paths: [String]) throws -> Manifest {
    let entries = try paths.enumerated().map { index, path in
        ManifestEntry(path: try EntryPath(validating: path), url: URL(string: "http://h/\(index)")!, line: index + 1)
    }
    return Manifest(source: "test", entries: entries)
}

/// Every node reachable from the root, by path.
private func inodesByPath(_ namespace: Namespace) -> [String: InodeNumber] {
    var result: [String: InodeNumber] = [:]
    var pending = [Namespace.rootInode]
    while let directory = pending.popLast() {
        for child in namespace.children(of: directory) {
            result[namespace.path(of: child)] = child.inode
            if child.isDirectory { pending.append(child.inode) }
        }
    }
    return result
}

@Test func treeShapeAndLookups() throws {
    let namespace = Namespace(manifest: try manifest(["music/rock/b.mp3", "podcast.mp3", "music/a.mp3"]))
    #expect(namespace.fileCount == 3)
    #expect(namespace.directoryCount == 3)  // root, music, music/rock

    let root = try #require(namespace.node(Namespace.rootInode))
    #expect(root.kind == .directory)
    #expect(namespace.path(of: root) == "")
    #expect(root.parent == Namespace.rootInode)
    #expect(namespace.children(of: Namespace.rootInode).map(\.name) == ["music", "podcast.mp3"])

    let music = try #require(namespace.lookup(parent: Namespace.rootInode, name: "music"))
    #expect(music.kind == .directory)
    #expect(namespace.path(of: music) == "music")
    #expect(music.parent == Namespace.rootInode)
    #expect(namespace.children(of: music.inode).map(\.name) == ["a.mp3", "rock"])

    let rock = try #require(namespace.lookup(parent: music.inode, name: "rock"))
    #expect(namespace.path(of: rock) == "music/rock")
    let song = try #require(namespace.lookup(parent: rock.inode, name: "b.mp3"))
    #expect(song.kind == .file(entryIndex: 0))
    #expect(namespace.path(of: song) == "music/rock/b.mp3")
    #expect(song.parent == rock.inode)
    #expect(namespace.node(song.inode) == song)

    let podcast = try #require(namespace.lookup(parent: Namespace.rootInode, name: "podcast.mp3"))
    #expect(podcast.kind == .file(entryIndex: 1))

    #expect(namespace.lookup(parent: Namespace.rootInode, name: "rock") == nil)
    #expect(namespace.lookup(parent: Namespace.rootInode, name: "Music") == nil)
    #expect(namespace.lookup(parent: podcast.inode, name: "x") == nil)
    #expect(namespace.lookup(parent: 999, name: "music") == nil)
    #expect(namespace.children(of: podcast.inode).isEmpty)
    #expect(namespace.node(0) == nil)
}

@Test func emptyManifestGivesAnEmptyRoot() {
    let namespace = Namespace(manifest: Manifest(source: "test", entries: []))
    #expect(namespace.fileCount == 0)
    #expect(namespace.directoryCount == 1)
    #expect(namespace.children(of: Namespace.rootInode).isEmpty)
    #expect(namespace.node(Namespace.rootInode)?.kind == .directory)
}

@Test func childrenAreSortedByBytes() throws {
    let names = ["b", "é", "B", "a", "e\u{301}", "Z", "a b", "a/c", "10", "9"]
    let namespace = Namespace(manifest: try manifest(names))
    #expect(namespace.children(of: Namespace.rootInode).map(\.name) == ["10", "9", "B", "Z", "a", "a b", "b", "e\u{301}", "é"])
    let a = try #require(namespace.lookup(parent: Namespace.rootInode, name: "a"))
    #expect(a.isDirectory)
    #expect(namespace.children(of: a.inode).map(namespace.path(of:)) == ["a/c"])
}

@Test func namesDifferingOnlyInNormalizationAreSeparateNodes() throws {
    let namespace = Namespace(manifest: try manifest(["caf\u{E9}", "cafe\u{301}"]))
    let composed = try #require(namespace.lookup(parent: Namespace.rootInode, name: "caf\u{E9}"))
    let decomposed = try #require(namespace.lookup(parent: Namespace.rootInode, name: "cafe\u{301}"))
    #expect(composed.inode != decomposed.inode)
    #expect(composed.kind == .file(entryIndex: 0))
    #expect(decomposed.kind == .file(entryIndex: 1))
}

@Test func inodesAreStableAcrossManifestOrder() throws {
    let paths = ["music/rock/b.mp3", "podcast.mp3", "music/a.mp3", "music/jazz/c.mp3", "z/y/x/w.mp3"]
    let forward = inodesByPath(Namespace(manifest: try manifest(paths)))
    let reversed = inodesByPath(Namespace(manifest: try manifest(paths.reversed())))
    #expect(forward.count == 11)  // 5 files, 6 directories
    #expect(forward == reversed)

    // Adding entries leaves existing numbers, directories included, where they were.
    let grown = inodesByPath(Namespace(manifest: try manifest(paths + ["music/rock/new.mp3", "other.mp3"])))
    for (path, inode) in forward {
        #expect(grown[path] == inode, "\(path)")
    }
}

@Test func inodesAreUniqueAndAvoidReservedNumbers() throws {
    let paths = (0..<2000).map { "d\($0 % 37)/f\($0).mp3" }
    let namespace = Namespace(manifest: try manifest(paths))
    let inodes = Array(inodesByPath(namespace).values)
    #expect(Set(inodes).count == inodes.count)
    #expect(inodes.allSatisfy { $0 >= 2 && $0 <= StableInodeAllocator.inodeMask })
}

@Test func inodesAreDerivedFromThePathHash() throws {
    let namespace = Namespace(manifest: try manifest(["music/rock/b.mp3"]))
    let music = try #require(namespace.lookup(parent: Namespace.rootInode, name: "music"))
    #expect(music.inode == PathHash(path: "music").value & StableInodeAllocator.inodeMask)
    let rock = try #require(namespace.lookup(parent: music.inode, name: "rock"))
    let song = try #require(namespace.lookup(parent: rock.inode, name: "b.mp3"))
    #expect(song.inode == PathHash(path: "music/rock/b.mp3").value & StableInodeAllocator.inodeMask)
    #expect(PathHash(path: "a/b").value == PathHash.root.appending("a").appending("b").value)
    #expect(PathHash(path: "a/b").value != PathHash(path: "ab").value)
}

@Test func inodeCollisionsProbeToTheNextFreeNumber() {
    var taken: Set<InodeNumber> = []
    let path = PathHash(path: "same")
    let first = StableInodeAllocator.inode(for: path) { taken.contains($0) }
    taken.insert(first)
    let second = StableInodeAllocator.inode(for: path) { taken.contains($0) }
    #expect(first == path.value & StableInodeAllocator.inodeMask)
    #expect(second == (first == StableInodeAllocator.inodeMask ? 2 : first + 1))
}

@Test func clashingEntriesStillGiveAConsistentTree() throws {
    // Not producible by the parsers, which reject these; the tree must stay sound anyway.
    let namespace = Namespace(manifest: try manifest(["a", "a/b", "c", "c"]))
    let a = try #require(namespace.lookup(parent: Namespace.rootInode, name: "a"))
    #expect(a.isDirectory)
    #expect(namespace.children(of: a.inode).map(\.name) == ["b"])
    #expect(namespace.lookup(parent: Namespace.rootInode, name: "c")?.kind == .file(entryIndex: 2))
    #expect(namespace.fileCount == 2)
}

@Test func hundredThousandEntriesBuild() throws {
    let text = (0..<100_000).map { "show\($0 / 1000)/episode \($0).mp3\thttps://h/\($0).mp3" }.joined(separator: "\n")
    let parsed = try Manifest.parsePlainText(text, source: "big.txt")
    #expect(parsed.entries.count == 100_000)
    let namespace = Namespace(manifest: parsed)
    #expect(namespace.fileCount == 100_000)
    #expect(namespace.directoryCount == 101)
    #expect(namespace.children(of: Namespace.rootInode).count == 100)
    let show = try #require(namespace.lookup(parent: Namespace.rootInode, name: "show42"))
    #expect(namespace.children(of: show.inode).count == 1000)
    let episode = try #require(namespace.lookup(parent: show.inode, name: "episode 42123.mp3"))
    #expect(episode.kind == .file(entryIndex: 42123))
}

@Test func lookupMatchesExactBytesOnly() throws {
    let namespace = Namespace(manifest: try manifest(["caf\u{E9}", "a", "a b", "ab", "b/c"]))
    // Canonically equivalent, different bytes: not the same name.
    #expect(namespace.lookup(parent: Namespace.rootInode, name: "cafe\u{301}") == nil)
    #expect(namespace.lookup(parent: Namespace.rootInode, name: "caf\u{E9}")?.kind == .file(entryIndex: 0))
    #expect(namespace.lookup(parent: Namespace.rootInode, name: "a")?.kind == .file(entryIndex: 1))
    #expect(namespace.lookup(parent: Namespace.rootInode, name: "a b")?.kind == .file(entryIndex: 2))
    #expect(namespace.lookup(parent: Namespace.rootInode, name: "ab")?.kind == .file(entryIndex: 3))
    #expect(namespace.lookup(parent: Namespace.rootInode, name: "") == nil)
    #expect(namespace.lookup(parent: Namespace.rootInode, name: "a ") == nil)
    #expect(namespace.lookup(parent: Namespace.rootInode, name: "abc") == nil)
    #expect(namespace.lookup(parent: Namespace.rootInode, name: "c") == nil)
    #expect(namespace.lookup(parent: Namespace.rootInode, name: "\u{FF}") == nil)
    let b = try #require(namespace.lookup(parent: Namespace.rootInode, name: "b"))
    #expect(namespace.lookup(parent: b.inode, name: "c")?.kind == .file(entryIndex: 4))
    #expect(namespace.lookup(parent: b.inode, name: "a") == nil)
}

@Test func siblingsFollowInListingOrder() throws {
    let namespace = Namespace(manifest: try manifest(["d/e", "c", "a", "b", "d/f"]))
    let a = try #require(namespace.lookup(parent: Namespace.rootInode, name: "a"))
    #expect(namespace.siblings(after: a, count: 2).map(\.name) == ["b", "c"])
    #expect(namespace.siblings(after: a, count: 10).map(\.name) == ["b", "c", "d"])
    let c = try #require(namespace.lookup(parent: Namespace.rootInode, name: "c"))
    #expect(namespace.siblings(after: c, count: 0).isEmpty)
    let d = try #require(namespace.lookup(parent: Namespace.rootInode, name: "d"))
    #expect(namespace.siblings(after: d, count: 3).isEmpty)
    let e = try #require(namespace.lookup(parent: d.inode, name: "e"))
    #expect(namespace.siblings(after: e, count: 3).map(\.name) == ["f"])
    #expect(namespace.siblings(after: e, count: 3).map(\.parent) == [d.inode])
    let root = try #require(namespace.node(Namespace.rootInode))
    #expect(namespace.siblings(after: root, count: 3).isEmpty)
}

@Test func aFileListedAfterItsDirectoryStaysADirectory() throws {
    let namespace = Namespace(manifest: try manifest(["a/b", "a", "x", "x", "x/y"]))
    let a = try #require(namespace.lookup(parent: Namespace.rootInode, name: "a"))
    #expect(a.isDirectory)
    #expect(namespace.children(of: a.inode).map(\.name) == ["b"])
    let x = try #require(namespace.lookup(parent: Namespace.rootInode, name: "x"))
    #expect(x.isDirectory)
    #expect(namespace.children(of: Namespace.rootInode).map(\.name) == ["a", "x"])
    #expect(namespace.fileCount == 2)
    #expect(namespace.directoryCount == 3)
}

@Test func everyNodeIsFoundByItsInodeAndPath() throws {
    let paths = (0..<500).map { "d\($0 % 7)/e\($0 % 3)/f\($0).mp3" } + ["top.mp3"]
    let namespace = Namespace(manifest: try manifest(paths))
    let byPath = inodesByPath(namespace)
    #expect(byPath.count == 501 + 7 + 7 * 3)
    for (path, inode) in byPath {
        let node = try #require(namespace.node(inode))
        #expect(namespace.path(of: node) == path)
        #expect(node.inode == PathHash(path: path).value & StableInodeAllocator.inodeMask)
        let parent = try #require(namespace.node(node.parent))
        #expect(namespace.lookup(parent: parent.inode, name: node.name) == node)
        if case .file(let index) = node.kind { #expect(paths[index] == path) }
    }
}
