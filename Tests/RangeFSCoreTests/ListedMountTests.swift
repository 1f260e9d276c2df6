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
    /// Answers listings from a table (each listing's validator is `"v<its child count>"`, and a
    /// request holding it is answered `.unchanged`), after `delay`; records what was asked, with
    /// which validator, and how many listings ran at once. `offline` answers every request with
    /// a refused connection.
    final class TableLister: DirectoryLister, Sendable {
        let table: Mutex<[String: Result<[WebListingEntry], FetchError>]>
        let delay: Double
        let asked = Mutex<[(url: String, held: String?)]>([])
        let running = Mutex((now: 0, most: 0))
        let offline = Atomic(false)

        init(_ table: [String: Result<[WebListingEntry], FetchError>], delay: Double = 0) {
            self.table = Mutex(table)
            self.delay = delay
        }

        var askedURLs: [String] { asked.withLock { $0.map(\.url) } }

        func list(_ url: URL, heldVersion: RemoteValidator?,
                  completion: @escaping @Sendable (Result<ListingAnswer, FetchError>) -> Void) {
            asked.withLock { $0.append((url.absoluteString, heldVersion?.etag)) }
            running.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
            let entry = table.withLock { $0[url.absoluteString] } ?? .failure(FetchError(url, .remote(.status(404))))
            let answer: Result<ListingAnswer, FetchError> = offline.load(ordering: .relaxed)
                ? .failure(FetchError(url, .remote(.transport("Couldn't connect to server"))))
                : entry.map { children in
                    let validator = RemoteValidator(etag: "\"v\(children.count)\"", lastModified: nil)
                    // The delay stands for the server's own time to answer.
                    return heldVersion == validator ? .unchanged(validator, serverTime: .seconds(delay))
                        : .listed(children, validator, from: url, serverTime: .seconds(delay))
                }
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

        convenience init(files: [String: [UInt8]], listings: (FaultServer) -> [String: Result<[WebListingEntry], FetchError>],
                         delay: Double = 0, settings: ListedDirectories.Settings = ListedDirectories.Settings()) throws {
            let engine = try FetchEngineHarness(files: files, entries: [], statedSizesAreExact: true)
            try self.init(engine: engine, lister: TableLister(listings(engine.server), delay: delay), settings: settings)
        }

        /// A mount of the same server, cache and lister, as the next mount would be.
        func remount(settings: ListedDirectories.Settings = ListedDirectories.Settings()) throws -> ListedHarness {
            try ListedHarness(engine: try engine.remount(), lister: lister, settings: settings)
        }

        init(engine: FetchEngineHarness, lister: TableLister, settings: ListedDirectories.Settings) throws {
            self.engine = engine
            self.lister = lister
            let catalog = engine.catalog
            let store = engine.store
            let box = Mutex<MountedFilesystem?>(nil)
            var logger = Logger(label: "rangefs-test")
            logger.logLevel = .critical
            directories = ListedDirectories(root: engine.server.url("top/"), lister: lister, settings: settings,
                                            stored: try store.allListings(), logger: logger,
                                            save: { url, listing in try? store.saveListing(listing, url: url.absoluteString) }) { snapshot in
                let indices = catalog.replaceManifest(with: snapshot.manifest)
                box.withLock { $0 }?.replaceTree(with: MountedTree(manifest: snapshot.manifest, catalogIndices: indices,
                                                                   directories: snapshot.directories))
                catalog.filesChangedOnServer(snapshot.changedFiles)
            }
            let known = directories.snapshot
            let mount = engine.mount
            let indices = catalog.replaceManifest(with: known.manifest)
            let tree = MountedTree(manifest: known.manifest, catalogIndices: indices, directories: known.directories)
            filesystem = MountedFilesystem(tree: tree, catalog: catalog,
                                           directories: directories, fileStatus: { mount.fileStatus(ofEntry: $0) },
                                           controlSocketPath: nil, logger: logger)
            box.withLock { $0 = filesystem }
        }

        func lookup(_ name: String, in parent: InodeNumber = Namespace.rootInode) throws -> Result<NodeAttributes, FilesystemError> {
            try FilesystemHarness.wait { filesystem.lookup(parent: parent, name: name, completion: $0) }
        }

        /// Opens `inode`, reads `size` bytes from its start and closes it again.
        func read(_ inode: InodeNumber, size: Int) throws -> [UInt8] {
            let opened = try FilesystemHarness.wait { filesystem.open(inode, flags: O_RDONLY, completion: $0) }.get()
            defer { _ = filesystem.closeHandle(opened.handle) }
            let ready = try FilesystemHarness.wait {
                filesystem.read(handle: opened.handle, offset: 0, size: size, completion: $0)
            }.get()
            return try ready.file.read(count: ready.range.count, at: ready.range.lowerBound)
        }

        func names(of directory: InodeNumber) throws -> [String] {
            _ = try FilesystemHarness.wait { filesystem.openDirectory(directory, completion: $0) }.get()
            return try filesystem.listDirectory(directory).get().map(\.name).filter { $0 != "." && $0 != ".." }
        }
    }

    static let song = FetchEngineHarness.bytes(100_000, seed: 3)

    static func listings(_ server: FaultServer) -> [String: Result<[WebListingEntry], FetchError>] {
        [
            server.url("top/").absoluteString: .success([
                WebListingEntry(name: "Artist", url: server.url("top/Artist/"), isDirectory: true),
                WebListingEntry(name: "intro.mp3", url: server.url("intro.mp3"), isDirectory: false),
                WebListingEntry(name: "Broken", url: server.url("top/Broken/"), isDirectory: true),
            ]),
            server.url("top/Artist/").absoluteString: .success([
                WebListingEntry(name: "Album", url: server.url("top/Artist/Album/"), isDirectory: true),
            ]),
            server.url("top/Artist/Album/").absoluteString: .success([
                WebListingEntry(name: "song.mp3", url: server.url("song.mp3"), isDirectory: false),
            ]),
        ]
    }

    @Test func directoriesAreListedWhenFirstLookedAtAndTheirFilesRead() throws {
        let mount = try ListedHarness(files: ["intro.mp3": Self.song, "song.mp3": Self.song], listings: Self.listings)
        #expect(mount.lister.askedURLs.isEmpty, "nothing is listed at mount")
        #expect(try mount.names(of: Namespace.rootInode) == ["Artist", "Broken", "intro.mp3"])
        #expect(mount.lister.askedURLs.count == 1, "only the top directory")

        let artist = try #require(try mount.lookup("Artist").value)
        let album = try #require(try mount.lookup("Album", in: artist.inode).value, "a lookup waits for its directory's listing")
        let song = try #require(try mount.lookup("song.mp3", in: album.inode).value)
        #expect(song.size == UInt64(Self.song.count))
        #expect(mount.lister.askedURLs.count == 3)

        #expect(try mount.read(song.inode, size: 100_000) == Self.song)
    }

    @Test func aDirectoryWhoseListingFailsGivesEIOAndIsAskedAgainNextTime() throws {
        let mount = try ListedHarness(files: [:], listings: Self.listings)
        let broken = try #require(try mount.lookup("Broken").value)
        let failure = try FilesystemHarness.wait { mount.filesystem.openDirectory(broken.inode, completion: $0) }
        #expect(failure.error?.errno == EIO)
        #expect(try mount.lookup("anything", in: broken.inode).error?.errno == EIO)
        let asked = mount.lister.askedURLs
        #expect(asked.filter { $0.hasSuffix("/top/Broken/") }.count == 2, "\(asked)")
    }

    @Test func aListingPastTheMountsLimitOfNamesGivesEIOAndTheOthersStayShown() throws {
        var settings = ListedDirectories.Settings()
        // The top's three names and Artist's one fit; Album's one more does not.
        settings.maxEntries = 4
        let mount = try ListedHarness(files: ["song.mp3": Self.song], listings: Self.listings, settings: settings)
        let artist = try #require(try mount.lookup("Artist").value)
        let album = try #require(try mount.lookup("Album", in: artist.inode).value)
        let refused = try FilesystemHarness.wait { mount.filesystem.openDirectory(album.inode, completion: $0) }
        #expect(refused.error?.errno == EIO)
        #expect(try mount.lookup("song.mp3", in: album.inode).error?.errno == EIO)
        #expect(try mount.names(of: Namespace.rootInode) == ["Artist", "Broken", "intro.mp3"])
        #expect(try mount.names(of: artist.inode) == ["Album"])
    }

    /// `listings`, but Broken's page came and is no listing.
    static func listingsWithAnUnreadablePage(_ server: FaultServer) -> [String: Result<[WebListingEntry], FetchError>] {
        var table = listings(server)
        let broken = server.url("top/Broken/")
        table[broken.absoluteString] = .failure(FetchError(broken, .unreadableListing("not a directory listing")))
        return table
    }

    @Test func aPageThatCannotBeReadIsNotAskedForAgainUntilTheListingsAgeLimit() throws {
        let mount = try ListedHarness(files: [:], listings: Self.listingsWithAnUnreadablePage)
        let broken = try #require(try mount.lookup("Broken").value)
        for _ in 0..<3 {
            let failure = try FilesystemHarness.wait { mount.filesystem.openDirectory(broken.inode, completion: $0) }
            #expect(failure.error?.errno == EIO)
        }
        let asked = mount.lister.askedURLs
        #expect(asked.filter { $0.hasSuffix("/top/Broken/") }.count == 1, "the same page would come again: \(asked)")

        var settings = ListedDirectories.Settings()
        settings.maxAge = .zero
        let again = try ListedHarness(files: [:], listings: Self.listingsWithAnUnreadablePage, settings: settings)
        let brokenAgain = try #require(try again.lookup("Broken").value)
        for _ in 0..<2 { _ = try FilesystemHarness.wait { again.filesystem.openDirectory(brokenAgain.inode, completion: $0) } }
        #expect(again.lister.askedURLs.filter { $0.hasSuffix("/top/Broken/") }.count == 2, "past the age limit it is asked again")
    }

    @Test func manyLooksAtOneDirectoryListItOnceAndListingsRunABoundedNumberAtOnce() throws {
        let mount = try ListedHarness(files: [:], listings: { server in
            var table: [String: Result<[WebListingEntry], FetchError>] = [:]
            let names = (0..<12).map { "d\($0)" }
            table[server.url("top/").absoluteString] = .success(names.map {
                WebListingEntry(name: $0, url: server.url("top/\($0)/"), isDirectory: true)
            })
            for name in names { table[server.url("top/\(name)/").absoluteString] = .success([]) }
            return table
        }, delay: 0.05, settings: { var settings = ListedDirectories.Settings(); settings.maxInFlight = 3; return settings }())
        let group = DispatchGroup()
        for _ in 0..<5 {
            group.enter()
            mount.filesystem.lookup(parent: Namespace.rootInode, name: "d0") { _ in group.leave() }
        }
        #expect(group.wait(timeout: .now() + 10) == .success)
        #expect(mount.lister.askedURLs.count == 1, "five looks, one listing of the top")

        let inodes = try (0..<12).map { try #require(try mount.lookup("d\($0)").value).inode }
        for inode in inodes {
            group.enter()
            mount.filesystem.openDirectory(inode) { _ in group.leave() }
        }
        #expect(group.wait(timeout: .now() + 10) == .success)
        #expect(mount.lister.askedURLs.count == 13)
        #expect(mount.lister.running.withLock { $0.most } <= 3)
        #expect(try mount.names(of: inodes[0]).isEmpty, "an empty directory lists empty")
    }

    @Test func aRemountShowsTheLastKnownTreeAtOnceAndServesItOffline() throws {
        let first = try ListedHarness(files: ["intro.mp3": Self.song, "song.mp3": Self.song], listings: Self.listings)
        let artist = try #require(try first.lookup("Artist").value)
        let album = try #require(try first.lookup("Album", in: artist.inode).value)
        let song = try #require(try first.lookup("song.mp3", in: album.inode).value)
        first.engine.drainCommits()
        let asked = first.lister.askedURLs.count

        first.lister.offline.store(true, ordering: .relaxed)
        let again = try first.remount()
        #expect(try again.names(of: Namespace.rootInode) == ["Artist", "Broken", "intro.mp3"])
        let known = try #require(try again.lookup("song.mp3", in: album.inode).value, "the same inode, shown at once")
        #expect(known.inode == song.inode && known.size == song.size)
        #expect(again.lister.askedURLs.count == asked, "nothing asked of the server")
        #expect(try again.lookup("anything", in: try #require(try again.lookup("Broken").value).inode).error?.errno == EIO,
                "a directory never listed cannot be listed offline")
    }

    @Test func aListingOlderThanTheLimitIsShownAtOnceAndAskedAgainWithItsValidator() throws {
        var settings = ListedDirectories.Settings()
        settings.maxAge = .zero
        let mount = try ListedHarness(files: [:], listings: Self.listings, settings: settings)
        #expect(try mount.names(of: Namespace.rootInode) == ["Artist", "Broken", "intro.mp3"])
        // Looked at again: answered from what is known, and checked with If-None-Match.
        #expect(try mount.lookup("intro.mp3").error?.errno == EIO, "known, though its file is not on the server")
        #expect(FilesystemHarness.eventually(timeout: 10) { mount.lister.asked.withLock { $0.count } >= 2 })
        #expect(mount.lister.asked.withLock { $0[1].held } == "\"v3\"", "the held validator")

        // The server's listing changes: the next check shows it.
        let server = mount.engine.server
        mount.lister.table.withLock {
            $0[server.url("top/").absoluteString] = .success([WebListingEntry(name: "new.mp3", url: server.url("new.mp3"), isDirectory: false)])
        }
        #expect(FilesystemHarness.eventually(timeout: 10) {
            (try? mount.names(of: Namespace.rootInode)) == ["new.mp3"]
        })
    }

    /// A file read whole, then changed on the server: the next listing of its directory states
    /// another size, so what was cached is discarded (the kernel forgets it) and the next read
    /// brings the server's new bytes, though nothing else asked the server.
    @Test func aFileWhoseListingStatesAnotherSizeIsFetchedAgain() throws {
        var settings = ListedDirectories.Settings()
        settings.maxAge = .zero
        let first = FetchEngineHarness.bytes(100_000, seed: 5)
        let second = FetchEngineHarness.bytes(120_000, seed: 6)
        let mount = try ListedHarness(files: ["song.mp3": first], listings: { server in
            [server.url("top/").absoluteString: .success([
                WebListingEntry(name: "song.mp3", url: server.url("song.mp3"), isDirectory: false, size: 100_000),
            ])]
        }, settings: settings)
        let kernel = RecordingKernel()
        mount.filesystem.attach(kernel)
        let song = try #require(try mount.lookup("song.mp3").value)
        #expect(try mount.read(song.inode, size: 100_000) == first)

        let server = mount.engine.server
        server.publish("song.mp3", bytes: second)
        // Another file beside it: the table's listing then has another validator, as a server's would.
        mount.lister.table.withLock {
            $0[server.url("top/").absoluteString] = .success([
                WebListingEntry(name: "song.mp3", url: server.url("song.mp3"), isDirectory: false, size: 120_000),
                WebListingEntry(name: "new.mp3", url: server.url("new.mp3"), isDirectory: false, size: 1),
            ])
        }
        // Looked at again (the listing is past its age at once): the relisting shows the new size.
        #expect(FilesystemHarness.eventually(timeout: 10) {
            _ = try? mount.names(of: Namespace.rootInode)
            return (try? mount.lookup("song.mp3").value?.size) == 120_000
        }, "the listing's new size is shown")
        #expect(FilesystemHarness.eventually(timeout: 5) { kernel.recorded.inodes.contains(song.inode) },
                "the kernel forgets what it cached of the old version")
        let again = try #require(try mount.lookup("song.mp3").value)
        #expect(try mount.read(again.inode, size: 120_000) == second, "the server's new bytes, not the cached old ones")
    }

    /// The same for a file cached by an earlier mount and not loaded in this one: the kept
    /// listing is the one the new listing is compared with.
    @Test func aFileCachedByAnEarlierMountIsFetchedAgainWhenItsListingStatesAnotherSize() throws {
        var settings = ListedDirectories.Settings()
        settings.maxAge = .zero
        let first = FetchEngineHarness.bytes(100_000, seed: 7)
        let second = FetchEngineHarness.bytes(90_000, seed: 8)
        let earlier = try ListedHarness(files: ["song.mp3": first], listings: { server in
            [server.url("top/").absoluteString: .success([
                WebListingEntry(name: "song.mp3", url: server.url("song.mp3"), isDirectory: false, size: 100_000),
            ])]
        }, settings: settings)
        let song = try #require(try earlier.lookup("song.mp3").value)
        #expect(try earlier.read(song.inode, size: 100_000) == first)

        let server = earlier.engine.server
        server.publish("song.mp3", bytes: second)
        earlier.lister.table.withLock {
            $0[server.url("top/").absoluteString] = .success([
                WebListingEntry(name: "song.mp3", url: server.url("song.mp3"), isDirectory: false, size: 90_000),
                WebListingEntry(name: "new.mp3", url: server.url("new.mp3"), isDirectory: false, size: 1),
            ])
        }
        let mount = try earlier.remount(settings: settings)
        #expect(FilesystemHarness.eventually(timeout: 10) {
            _ = try? mount.names(of: Namespace.rootInode)
            return (try? mount.lookup("song.mp3").value?.size) == 90_000
        }, "the listing's new size is shown")
        let again = try #require(try mount.lookup("song.mp3").value)
        #expect(try mount.read(again.inode, size: 90_000) == second, "the server's new bytes, not the cached old ones")
    }

    /// `ls -l` and `find` of a listing that states sizes cost no request per file, nor does
    /// opening one: its first range request goes out at once. A size that changed since the
    /// listing is a change: the kernel forgets the listing's size, the server's is asked next,
    /// and the handle, which had read nothing yet, reads the server's version.
    @Test func sizesTheListingStatesAreShownAndOpenedWithoutARequestUntilTheServerRefutesOne() throws {
        let mount = try ListedHarness(files: ["intro.mp3": Self.song, "song.mp3": Self.song], listings: { server in
            [server.url("top/").absoluteString: .success([
                WebListingEntry(name: "intro.mp3", url: server.url("intro.mp3"), isDirectory: false, size: 100_000),
                WebListingEntry(name: "stale.mp3", url: server.url("song.mp3"), isDirectory: false, size: 5),
            ])]
        })
        let kernel = RecordingKernel()
        mount.filesystem.attach(kernel)
        #expect(try mount.names(of: Namespace.rootInode) == ["intro.mp3", "stale.mp3"])
        let intro = try #require(try mount.lookup("intro.mp3").value)
        let stale = try #require(try mount.lookup("stale.mp3").value)
        #expect(intro.size == 100_000 && stale.size == 5, "as the listing states")
        #expect(mount.engine.server.requests.filter { $0.method == "HEAD" }.isEmpty, "no request per file")

        let opened = try FilesystemHarness.wait { mount.filesystem.open(stale.inode, flags: O_RDONLY, completion: $0) }.get()
        #expect(mount.engine.server.requests.isEmpty, "nor one to open a file")
        let refuted = try FilesystemHarness.wait { mount.filesystem.read(handle: opened.handle, offset: 0, size: 5, completion: $0) }
        let firstBytes = try refuted.get()
        #expect(try firstBytes.file.read(count: firstBytes.range.count, at: firstBytes.range.lowerBound) == Array(Self.song.prefix(5)),
                "the listing's size is not the file's: the handle reads the server's version")
        #expect(FilesystemHarness.eventually(timeout: 5) { kernel.recorded.inodes.contains(stale.inode) },
                "the kernel is told to forget the listing's size")
        _ = mount.filesystem.closeHandle(opened.handle)
        #expect(try FilesystemHarness.wait { mount.filesystem.attributes(of: stale.inode, completion: $0) }.get().size == 100_000,
                "the server's size, asked once the listing's was refuted")
        #expect(mount.engine.server.requests(for: "song.mp3").map(\.method).prefix(2) == ["GET", "HEAD"])

        #expect(try mount.read(stale.inode, size: 100_000) == Self.song, "the new version, reopened")
    }

    /// `find` opens a directory's subdirectories one after another: opening one lists the next
    /// four too; opening one of those (a walk) lists twice as many past it, each once; and a
    /// directory a caller waits for goes before those listed ahead.
    @Test func openingADirectoryListsItsNextSiblingsAheadAndAWalkMore() throws {
        let mount = try ListedHarness(files: [:], listings: { server in
            var table: [String: Result<[WebListingEntry], FetchError>] = [:]
            let names = (0..<40).map { String(format: "d%02d", $0) }
            table[server.url("top/").absoluteString] = .success(names.map {
                WebListingEntry(name: $0, url: server.url("top/\($0)/"), isDirectory: true)
            })
            for name in names { table[server.url("top/\(name)/").absoluteString] = .success([]) }
            return table
        })
        #expect(try mount.names(of: Namespace.rootInode).count == 40)
        let d00 = try #require(try mount.lookup("d00").value)
        #expect(try mount.names(of: d00.inode).isEmpty)
        let listedAhead = { mount.lister.askedURLs.map { URL(string: $0)!.lastPathComponent } }
        #expect(FilesystemHarness.eventually(timeout: 5) { Set(listedAhead()).isSuperset(of: ["d01", "d02", "d03", "d04"]) },
                "\(listedAhead())")
        #expect(!listedAhead().contains("d05"))
        let d01 = try #require(try mount.lookup("d01").value)
        #expect(try mount.names(of: d01.inode).isEmpty)
        // d01 was listed ahead: a walk. The window doubles to 8 past d01: d02 to d09.
        #expect(FilesystemHarness.eventually(timeout: 5) { Set(listedAhead()).isSuperset(of: ["d05", "d06", "d07", "d08", "d09"]) },
                "\(listedAhead())")
        #expect(!listedAhead().contains("d10"), "\(listedAhead())")
        let counts = Dictionary(listedAhead().map { ($0, 1) }, uniquingKeysWith: +)
        #expect(counts.values.allSatisfy { $0 == 1 }, "each directory listed once: \(counts)")
    }

    /// A walk that opens each directory as `find` does finds every file, however the listings
    /// asked for ahead and the ones waited for interleave (each answer is shown before the
    /// directory opens).
    @Test(arguments: 0..<5)
    func aWalkFindsEveryFileWhileListingsRunAhead(round: Int) throws {
        let mount = try ListedHarness(files: [:], listings: { server in
            var table: [String: Result<[WebListingEntry], FetchError>] = [:]
            let directories = (0..<20).map { "d\($0)" }
            table[server.url("top/").absoluteString] = .success(directories.map {
                WebListingEntry(name: $0, url: server.url("top/\($0)/"), isDirectory: true)
            })
            for directory in directories {
                table[server.url("top/\(directory)/").absoluteString] = .success((0..<5).map {
                    WebListingEntry(name: "f\($0)", url: server.url("\(directory)-f\($0)"), isDirectory: false, size: 1)
                })
            }
            return table
        }, delay: Double(round) * 0.002)
        var found = 0
        for name in try mount.names(of: Namespace.rootInode) {
            let directory = try #require(try mount.lookup(name).value)
            found += try mount.names(of: directory.inode).count
        }
        #expect(found == 100)
    }
}
