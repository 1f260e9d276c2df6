import FaultServer
import Foundation
import Logging
import Synchronization
import Testing
@testable import RangeFSCore

/// A mount grown from listings, driven through the filesystem façade without a mount: nothing
/// is listed until looked at, a look waits for its directory's listing, listings run a bounded
/// number at once, and the files found read from a real server. The listings come from a
/// table (the parsers and the listing download have tests of their own against real servers).
@Suite("Listed mount")
struct ListedMountTests {
    /// Answers listings from a table, after `delay`, and records what was asked and how many
    /// listings ran at once.
    final class TableLister: DirectoryLister, @unchecked Sendable {
        // @unchecked: every field is a lock or immutable after init.
        let table: [String: Result<[ListedChild], FetchError>]
        let delay: Double
        let asked = Mutex<[String]>([])
        let running = Mutex((now: 0, most: 0))

        init(_ table: [String: Result<[ListedChild], FetchError>], delay: Double = 0) {
            self.table = table
            self.delay = delay
        }

        func list(_ url: URL, completion: @escaping @Sendable (Result<[ListedChild], FetchError>) -> Void) {
            asked.withLock { $0.append(url.absoluteString) }
            running.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
            let answer = table[url.absoluteString] ?? .failure(FetchError(url, .remote(.status(404))))
            DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [self] in
                running.withLock { $0.now -= 1 }
                completion(answer)
            }
        }
    }

    /// The façade over a listed tree whose files are published on a `FaultServer`.
    final class ListedHarness {
        let engine: FetchEngineHarness
        let lister: TableLister
        let directories: ListedDirectories
        let filesystem: MountedFilesystem

        init(files: [String: [UInt8]], listings: (FaultServer) -> [String: Result<[ListedChild], FetchError>],
             delay: Double = 0, maxInFlight: Int = 4) throws {
            engine = try FetchEngineHarness(files: files, entries: [])
            lister = TableLister(listings(engine.server), delay: delay)
            let catalog = engine.catalog
            let box = Mutex<MountedFilesystem?>(nil)
            var logger = Logger(label: "rangefs-test")
            logger.logLevel = .critical
            directories = ListedDirectories(root: engine.server.url("top/"), lister: lister, maxInFlight: maxInFlight,
                                            logger: logger) { snapshot in
                let indices = catalog.replaceManifest(with: snapshot.manifest)
                box.withLock { $0 }?.replaceTree(with: MountedTree(manifest: snapshot.manifest, catalogIndices: indices,
                                                                   directories: snapshot.directories))
            }
            let empty = Manifest(source: "test", entries: [])
            let mount = engine.mount
            filesystem = MountedFilesystem(tree: MountedTree(manifest: empty, catalogIndices: []), catalog: catalog,
                                           directories: directories, fileStatus: { mount.fileStatus(ofEntry: $0) },
                                           controlSocketPath: nil, logger: logger)
            box.withLock { $0 = filesystem }
        }

        func lookup(_ name: String, in parent: InodeNumber = Namespace.rootInode) throws -> Result<NodeAttributes, FilesystemError> {
            try FilesystemHarness.wait { filesystem.lookup(parent: parent, name: name, completion: $0) }
        }

        func names(of directory: InodeNumber) throws -> [String] {
            _ = try FilesystemHarness.wait { filesystem.openDirectory(directory, completion: $0) }.get()
            return try filesystem.listDirectory(directory).get().map(\.name).filter { $0 != "." && $0 != ".." }
        }
    }

    static let song = FetchEngineHarness.bytes(100_000, seed: 3)

    static func listings(_ server: FaultServer) -> [String: Result<[ListedChild], FetchError>] {
        [
            server.url("top/").absoluteString: .success([
                ListedChild(name: "Artist", url: server.url("top/Artist/"), isDirectory: true),
                ListedChild(name: "intro.mp3", url: server.url("intro.mp3"), isDirectory: false),
                ListedChild(name: "Broken", url: server.url("top/Broken/"), isDirectory: true),
            ]),
            server.url("top/Artist/").absoluteString: .success([
                ListedChild(name: "Album", url: server.url("top/Artist/Album/"), isDirectory: true),
            ]),
            server.url("top/Artist/Album/").absoluteString: .success([
                ListedChild(name: "song.mp3", url: server.url("song.mp3"), isDirectory: false),
            ]),
        ]
    }

    @Test func directoriesAreListedWhenFirstLookedAtAndTheirFilesRead() throws {
        let mount = try ListedHarness(files: ["intro.mp3": Self.song, "song.mp3": Self.song], listings: Self.listings)
        #expect(mount.lister.asked.withLock { $0 }.isEmpty, "nothing is listed at mount")
        #expect(try mount.names(of: Namespace.rootInode) == ["Artist", "Broken", "intro.mp3"])
        #expect(mount.lister.asked.withLock { $0.count } == 1, "only the top directory")

        let artist = try #require(try mount.lookup("Artist").value)
        let album = try #require(try mount.lookup("Album", in: artist.inode).value, "a lookup waits for its directory's listing")
        let song = try #require(try mount.lookup("song.mp3", in: album.inode).value)
        #expect(song.size == UInt64(Self.song.count))
        #expect(mount.lister.asked.withLock { $0.count } == 3)

        let opened = try FilesystemHarness.wait { mount.filesystem.open(song.inode, flags: O_RDONLY, completion: $0) }.get()
        let ready = try FilesystemHarness.wait {
            mount.filesystem.read(handle: opened.handle, offset: 0, size: 100_000, completion: $0)
        }.get()
        #expect(try ready.file.read(count: ready.range.count, at: ready.range.lowerBound) == Self.song)
        _ = mount.filesystem.release(handle: opened.handle)
    }

    @Test func aDirectoryWhoseListingFailsGivesEIOAndIsAskedAgainNextTime() throws {
        let mount = try ListedHarness(files: [:], listings: Self.listings)
        let broken = try #require(try mount.lookup("Broken").value)
        let failure = try FilesystemHarness.wait { mount.filesystem.openDirectory(broken.inode, completion: $0) }
        #expect(failure.error?.errno == EIO)
        #expect(try mount.lookup("anything", in: broken.inode).error?.errno == EIO)
        let asked = mount.lister.asked.withLock { $0 }
        #expect(asked.filter { $0.hasSuffix("/top/Broken/") }.count == 2, "\(asked)")
    }

    @Test func manyLooksAtOneDirectoryListItOnceAndListingsRunABoundedNumberAtOnce() throws {
        let mount = try ListedHarness(files: [:], listings: { server in
            var table: [String: Result<[ListedChild], FetchError>] = [:]
            let names = (0..<12).map { "d\($0)" }
            table[server.url("top/").absoluteString] = .success(names.map {
                ListedChild(name: $0, url: server.url("top/\($0)/"), isDirectory: true)
            })
            for name in names { table[server.url("top/\(name)/").absoluteString] = .success([]) }
            return table
        }, delay: 0.05, maxInFlight: 3)
        let group = DispatchGroup()
        for _ in 0..<5 {
            group.enter()
            mount.filesystem.lookup(parent: Namespace.rootInode, name: "d0") { _ in group.leave() }
        }
        #expect(group.wait(timeout: .now() + 10) == .success)
        #expect(mount.lister.asked.withLock { $0.count } == 1, "five looks, one listing of the top")

        let inodes = try (0..<12).map { try #require(try mount.lookup("d\($0)").value).inode }
        for inode in inodes {
            group.enter()
            mount.filesystem.openDirectory(inode) { _ in group.leave() }
        }
        #expect(group.wait(timeout: .now() + 10) == .success)
        #expect(mount.lister.asked.withLock { $0.count } == 13)
        #expect(mount.lister.running.withLock { $0.most } <= 3)
        #expect(try mount.names(of: inodes[0]).isEmpty, "an empty directory lists empty")
    }
}
