import FaultServer
import Foundation
import Testing
@testable import RangeFSCore

/// Keeping what was fetched, driven through the catalog without a mount: the sha256 check
/// before promotion, eviction under a size limit, the free-space floor's decisions, and the
/// pin, evict and verify commands.
@Suite("Fetch engine: the cache")
struct EngineCacheTests {
    static let a = FetchEngineHarness.bytes(256 * 1024, seed: 1)
    static let b = FetchEngineHarness.bytes(256 * 1024, seed: 2)
    static let whole: Range<UInt64> = 0..<262_144

    @Test func aFileMatchingItsSha256IsPromotedToComplete() throws {
        let engine = try FetchEngineHarness(files: ["a.bin": Self.a], sha256: ["a.bin": try FetchEngineHarness.sha256(of: Self.a)])
        let file = try #require(try engine.file("a.bin").value)
        #expect(try engine.read(file, Self.whole).value == Self.a)
        #expect(FilesystemHarness.eventually(timeout: 10) { file.isComplete })
        engine.drainCommits()
        let record = try #require(engine.record("a.bin"))
        #expect(record.state == .complete)
        #expect(access(engine.directory.dataPath(name: record.dataName, complete: true), F_OK) == 0)
        #expect(file.snapshot.state == .complete && !file.isRejected)
    }

    @Test func aFileFailingItsSha256IsDroppedAndStaysFailed() throws {
        let engine = try FetchEngineHarness(files: ["a.bin": Self.a], sha256: ["a.bin": try FetchEngineHarness.sha256(of: Self.b)])
        let file = try #require(try engine.file("a.bin").value)
        _ = try engine.read(file, Self.whole)
        #expect(FilesystemHarness.eventually(timeout: 10) { file.isRejected })
        engine.drainCommits()
        #expect(!file.isComplete && file.snapshot.cachedBytes == 0)
        #expect(file.snapshot.state == .failed && file.snapshot.lastFailure?.contains("sha256 mismatch") == true)
        let record = try #require(engine.record("a.bin"))
        #expect(record.state != .complete && record.failure?.contains("sha256 mismatch") == true, "\(record)")
        #expect(access(engine.directory.dataPath(name: record.dataName, complete: true), F_OK) != 0, "never promoted")
        let gets = engine.gets("a.bin").count
        #expect(try engine.read(file, 0..<4096).error != nil, "a rejected file serves nothing")
        #expect(engine.gets("a.bin").count == gets, "and fetches nothing")
    }

    @Test func aRefreshGivesALoadedFileTheSha256ItsEntryStatesNow() throws {
        let sumA = try FetchEngineHarness.sha256(of: Self.a), sumB = try FetchEngineHarness.sha256(of: Self.b)
        let engine = try FetchEngineHarness(files: ["a.bin": Self.a, "b.bin": Self.b], sha256: ["a.bin": sumB])
        let file = try #require(try engine.file("a.bin").value)
        #expect(file.expectedSHA256 == sumB.lowercased())

        // A kept entry whose sha256 changed.
        var refreshed = engine.catalog.manifest
        refreshed.entries[0].sha256 = sumA.uppercased()
        #expect(engine.catalog.replaceManifest(with: refreshed) == [0, 1], "the same entries, with what they had cached")
        #expect(file.expectedSHA256 == sumA.lowercased())

        // A new entry (another path) for the same URL states its own.
        var moved = refreshed.entries[0]
        moved.path = try EntryPath(validating: "moved/a.bin")
        moved.sha256 = sumB
        refreshed.entries.append(moved)
        #expect(engine.catalog.replaceManifest(with: refreshed) == [0, 1, 2])
        #expect(file.expectedSHA256 == sumB.lowercased())

        // Entries that did not change leave the file as it is.
        #expect(engine.catalog.replaceManifest(with: refreshed) == [0, 1, 2])
        #expect(file.expectedSHA256 == sumB.lowercased())
    }

    @Test func underASizeLimitAnIdleFileIsEvictedForAReadAndAnOpenOneIsNot() throws {
        let engine = try FetchEngineHarness(files: ["a.bin": Self.a, "b.bin": Self.b], limits: CacheLimits(maxBytes: 300 * 1024))
        let held = try #require(try engine.open("a.bin").value)
        #expect(try engine.read(held.file, Self.whole).value == Self.a)
        #expect(FilesystemHarness.eventually(timeout: 10) { held.file.isComplete })

        // `a` is open: `b` does not fit, and is served without being stored.
        let b = try #require(try engine.file("b.bin").value)
        #expect(try engine.read(b, Self.whole).value == Self.b)
        #expect(b.snapshot.cachedBytes == 0 && held.file.snapshot.cachedBytes == 262_144)
        #expect(engine.catalog.budget.status.readThroughBytes >= 262_144)

        // Closed, `a` is the one to go.
        held.close()
        #expect(try engine.read(b, Self.whole).value == Self.b)
        #expect(held.file.snapshot.cachedBytes == 0 && b.snapshot.cachedBytes == 262_144)
        #expect(engine.catalog.budget.cachedBytes <= 300 * 1024)
        engine.drainCommits()
        #expect(engine.record("a.bin")?.state == .remote)
    }

    /// An open only notes when the file was used (no database write beside the reader's first
    /// request); the time is written later, and eviction, which goes by it, writes it first.
    @Test func anOpenIsWrittenAsAUseLaterAndEvictionStillCountsIt() throws {
        var policy = FetchEngineHarness.quickPolicy
        // The noted times' own write comes no sooner than this: here eviction and the drain write them.
        policy.commitInterval = .seconds(3600)
        let c = FetchEngineHarness.bytes(256 * 1024, seed: 3)
        let engine = try FetchEngineHarness(files: ["a.bin": Self.a, "b.bin": Self.b, "c.bin": c], policy: policy,
                                            limits: CacheLimits(maxBytes: 600 * 1024))
        let a = try #require(try engine.file("a.bin").value)
        #expect(try engine.read(a, Self.whole).value == Self.a)
        let b = try #require(try engine.file("b.bin").value)
        #expect(try engine.read(b, Self.whole).value == Self.b)
        #expect(FilesystemHarness.eventually(timeout: 10) {
            engine.record("a.bin")?.state == .complete && engine.record("b.bin")?.state == .complete
        })
        let before = try #require(engine.record("a.bin")).lastAccess

        // `a` was found before `b`; opened now, it is the one used last.
        try #require(try engine.open("a.bin").value).close()
        engine.committer.sync {}
        #expect(engine.record("a.bin")?.lastAccess == before, "the open wrote nothing yet")

        // `c` does not fit beside both: the file used least recently goes, which is `b`.
        let third = try #require(try engine.file("c.bin").value)
        #expect(try engine.read(third, Self.whole).value == c)
        #expect(a.snapshot.cachedBytes == 262_144 && b.snapshot.cachedBytes == 0)
        engine.drainCommits()
        #expect(try #require(engine.record("a.bin")).lastAccess > before)
    }

    @Test func belowTheFreeSpaceFloorReadsAreServedUnstoredAndBackgroundWorkWaitsForSpace() throws {
        let path = NSTemporaryDirectory()
        let space = try #require(FilesystemSpace.of(path))
        var prefetch = Prefetcher.Configuration()
        prefetch.chunkBytes = 64 * 1024
        // A floor as large as the filesystem: no byte may be stored.
        let engine = try FetchEngineHarness(files: ["a.bin": Self.a, "b.bin": Self.b],
                                            limits: CacheLimits(minFree: .bytes(space.size)), prefetch: prefetch)
        let a = try #require(try engine.file("a.bin").value)
        let b = try #require(try engine.file("b.bin").value)
        #expect(try engine.read(a, 100_000..<200_000).value == Array(Self.a[100_000..<200_000]))
        #expect(a.snapshot.cachedBytes == 0 && engine.catalog.budget.cachedBytes == 0)
        #expect(engine.catalog.budget.status.readThroughBytes >= 100_000)

        let before = engine.gets("a.bin").count + engine.gets("b.bin").count
        engine.prefetcher.start()
        #expect(FilesystemHarness.eventually(timeout: 5) {
            a.snapshot.state == .waitingForSpace && b.snapshot.state == .waitingForSpace
        })
        #expect(engine.gets("a.bin").count + engine.gets("b.bin").count == before, "background work never digs below the floor")
        #expect(engine.mount.status().files.allSatisfy { $0.state != .failed })
    }

    @Test func aPinnedFileIsCompletedAndKeptWhateverTheLimitUntilUnpinned() throws {
        let engine = try FetchEngineHarness(files: ["a.bin": Self.a, "b.bin": Self.b], limits: CacheLimits(maxBytes: 300 * 1024))
        _ = try engine.mount.manage(.pin, paths: ["a.bin"])
        let a = try #require(try engine.file("a.bin").value)
        #expect(FilesystemHarness.eventually(timeout: 10) { a.isComplete })
        engine.drainCommits()
        #expect(engine.record("a.bin")?.pinned == true)
        #expect(engine.gets("b.bin").isEmpty, "the prefetcher (policy none) fetched only the pinned file")

        let b = try #require(try engine.file("b.bin").value)
        #expect(try engine.read(b, Self.whole).value == Self.b)
        #expect(a.snapshot.cachedBytes == 262_144 && b.snapshot.cachedBytes == 0, "a pinned file is not evicted")
        let answer = try engine.mount.manage(.evict, paths: [])
        #expect(answer.contains("except 1") && answer.contains("a.bin"), "\(answer)")
        #expect(a.isComplete)

        _ = try engine.mount.manage(.unpin, paths: ["a.bin"])
        engine.drainCommits()
        #expect(try engine.mount.manage(.evict, paths: []) == "evicted the cached data of every file")
        #expect(a.snapshot.cachedBytes == 0)
    }

    @Test func evictKeepsFilesInUseAndDropsTheRest() throws {
        let engine = try FetchEngineHarness(files: ["a.bin": Self.a, "b.bin": Self.b])
        let a = try #require(try engine.file("a.bin").value)
        #expect(try engine.read(a, Self.whole).value == Self.a)
        let held = try #require(try engine.open("b.bin").value)
        #expect(try engine.read(held.file, 0..<65_536).value == Array(Self.b[0..<65_536]))
        // `evict` goes by what the database holds: wait for both commits.
        #expect(FilesystemHarness.eventually(timeout: 10) {
            engine.record("a.bin")?.state == .complete && engine.record("b.bin")?.state == .partial
        })
        #expect(engine.catalog.evict(entries: []) == ["b.bin"])
        #expect(a.snapshot.cachedBytes == 0 && held.file.snapshot.cachedBytes == 65_536)
        engine.drainCommits()
        #expect(engine.record("a.bin")?.state == .remote)
        #expect(try engine.read(a, 0..<4096).value == Array(Self.a[0..<4096]), "an evicted file is fetched again")
        held.close()
    }

    /// A file the mount has not loaded (known only from an earlier mount's record) is evicted
    /// without being loaded: its data files go, and a later read fetches into new ones.
    @Test func aFileNotLoadedSinceTheRemountIsEvictedAndFetchedAgainIntoANewDataFile() throws {
        let first = try FetchEngineHarness(files: ["a.bin": Self.a])
        let a = try #require(try first.file("a.bin").value)
        #expect(try first.read(a, Self.whole).value == Self.a)
        #expect(FilesystemHarness.eventually(timeout: 10) { first.record("a.bin")?.state == .complete })
        let engine = try first.remount()
        let before = try #require(engine.record("a.bin"))
        let oldPath = engine.directory.dataPath(name: before.dataName, complete: true)
        #expect(access(oldPath, F_OK) == 0)

        #expect(engine.catalog.knownFile(forEntry: engine.entry("a.bin")) == nil, "not loaded by the remount")
        #expect(engine.catalog.evict(entries: []) == [])
        engine.drainCommits()
        let after = try #require(engine.record("a.bin"))
        #expect(after.state == .remote && after.dataName != before.dataName, "\(after)")
        #expect(access(oldPath, F_OK) != 0, "the old data file is gone")
        #expect(engine.catalog.budget.cachedBytes == 0)

        let gets = engine.gets("a.bin").count
        let reloaded = try #require(try engine.file("a.bin").value)
        #expect(try engine.read(reloaded, 0..<4096).value == Array(Self.a[0..<4096]))
        #expect(engine.gets("a.bin").count > gets, "fetched again, not read from the removed file")
        engine.drainCommits()
        #expect(access(engine.directory.dataPath(name: after.dataName, complete: false), F_OK) == 0)
    }

    @Test func verifyDiscardsChangedFilesAndKeepsUnchangedOnes() throws {
        let engine = try FetchEngineHarness(files: ["a.bin": Self.a, "b.bin": Self.b])
        let a = try #require(try engine.file("a.bin").value)
        let b = try #require(try engine.file("b.bin").value)
        #expect(try engine.read(a, 0..<65_536).value == Array(Self.a[0..<65_536]))
        #expect(try engine.read(b, 0..<65_536).value == Array(Self.b[0..<65_536]))
        engine.server.publish("a.bin", bytes: Self.b)

        let (checked, problems) = engine.catalog.verify(timeout: .seconds(5))
        #expect(checked == 2)
        #expect(problems.count == 1 && problems[0].hasPrefix("a.bin: changed"), "\(problems)")
        #expect(engine.catalog.knownFile(forEntry: engine.entry("a.bin")) !== a)
        #expect(engine.catalog.knownFile(forEntry: engine.entry("b.bin")) === b && b.snapshot.cachedBytes == 65_536)
        let renewed = try #require(try engine.file("a.bin").value)
        #expect(try engine.read(renewed, 0..<4096).value == Array(Self.b[0..<4096]))
    }
}
