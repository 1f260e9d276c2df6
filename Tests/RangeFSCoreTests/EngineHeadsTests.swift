import FaultServer
import Foundation
import Testing
@testable import RangeFSCore

private let KiB: UInt64 = 1024
private let MiB: UInt64 = 1024 * 1024

/// Heads and tails first: under policy `all` the prefetcher fetches the start and the end of
/// every file of a collection, several at a time, before it completes any file; a reader is
/// served first meanwhile; what first scans read sizes the next heads, also after a remount;
/// policies `opened` and `none` fetch no head of a file nobody opened.
@Suite("Fetch engine: heads and tails first")
struct EngineHeadsTests {

    /// `count` files named `prefix00.ext`, `prefix01.ext` … of `size` bytes each.
    static func collection(_ count: Int, size: UInt64, prefix: String = "f", ext: String = "bin") -> [String: [UInt8]] {
        Dictionary(uniqueKeysWithValues: (0..<count).map { number in
            (String(format: "%@%02d.%@", prefix, number, ext), FetchEngineHarness.bytes(Int(size), seed: UInt8(number)))
        })
    }

    static func configuration(_ policy: PrefetchPolicy, chunkBytes: UInt64 = 256 * 1024) -> Prefetcher.Configuration {
        var configuration = Prefetcher.Configuration()
        configuration.policy = policy
        configuration.chunkBytes = chunkBytes
        return configuration
    }

    /// The bytes a GET asked for.
    static func range(_ request: RecordedRequest) -> Range<UInt64>? {
        guard let start = request.rangeStart, let length = EnginePrefetchTests.length(request) else { return nil }
        return start..<start + length
    }

    /// A GET of a `size`-byte file's first block or last block (the generic head and tail of a
    /// `.bin` file, in the harness's 64 KiB blocks).
    static func isHeadOrTail(_ request: RecordedRequest, size: UInt64) -> Bool {
        let block = FetchEngineHarness.blockSize
        return range(request) == 0..<block || range(request) == size - block..<size
    }

    static func isComplete(_ engine: FetchEngineHarness, _ name: String) -> Bool {
        engine.catalog.knownFile(forEntry: engine.entry(name))?.isComplete == true
    }

    @Test func everyHeadAndTailIsFetchedSeveralAtATimeBeforeAnyFileIsCompleted() throws {
        let size = MiB
        let files = Self.collection(20, size: size)
        let engine = try FetchEngineHarness(files: files, prefetch: Self.configuration(.all))
        // Each response comes 30 ms late: a head waits for its round trip, so several overlap.
        for name in files.keys { engine.server.configure(name, PathOptions(latency: .milliseconds(30))) }
        engine.prefetcher.start()
        var mostAtOnce = 0
        let done = FilesystemHarness.eventually(timeout: 30) {
            mostAtOnce = max(mostAtOnce, engine.server.requests.count { $0.method == "GET" && !$0.finished })
            return files.keys.allSatisfy { Self.isComplete(engine, $0) }
        }
        #expect(done)

        let gets = engine.server.requests.filter { $0.method == "GET" }
        let headsAndTails = gets.prefix { Self.isHeadOrTail($0, size: size) }
        // One head and one tail per file, and they all came before any other request.
        #expect(headsAndTails.count == 40, "\(gets.prefix(45))")
        #expect(Set(headsAndTails.map { "\($0.path) \($0.range ?? "")" }).count == 40)
        #expect(gets.count(where: { Self.isHeadOrTail($0, size: size) }) == 40)
        // More than the three whole-file slots at once, never more than the six background may have.
        #expect(mostAtOnce > 3 && mostAtOnce <= 6, "GETs at once: \(mostAtOnce)")
        for (name, bytes) in files.sorted(by: { $0.key < $1.key }) {
            try EnginePrefetchTests.expectEachByteServedOnce(engine.gets(name), size: bytes.count)
            let file = try #require(try engine.file(name).value)
            #expect(try engine.read(file, 0..<size).value == bytes, "\(name)")
        }
    }

    @Test func aReaderOpeningAFileMeanwhileIsServedFirstAndItsFileCompletedBeforeTheOtherHeads() throws {
        let size = MiB
        let files = Self.collection(20, size: size)
        let engine = try FetchEngineHarness(files: files, prefetch: Self.configuration(.all))
        // Sizes known first, so the heads start together; then each response comes 200 ms late.
        for name in files.keys.sorted() { _ = try #require(try engine.file(name).value) }
        for name in files.keys { engine.server.configure(name, PathOptions(latency: .milliseconds(200))) }
        engine.prefetcher.start()
        // Six heads or tails have just gone out: every slot background work may have is taken
        // for the next 200 ms.
        #expect(FilesystemHarness.eventually(timeout: 10) {
            let running = engine.server.requests.filter { $0.method == "GET" && !$0.finished }
            return running.count == 6 && running.allSatisfy { Date().timeIntervalSince($0.receivedAt) < 0.05 }
        }, "\(engine.server.requests)")

        let opened = try #require(try engine.open("f19.bin").value)
        defer { opened.close() }
        let before = Set(engine.server.requests.map(\.id))
        let wanted = 512 * KiB..<516 * KiB
        #expect(try engine.read(opened.file, wanted).value == Array(files["f19.bin"]![Int(wanted.lowerBound)..<Int(wanted.upperBound)]))
        // Its request was the first to reach the server after it opened the file.
        let after = engine.server.requests.filter { !before.contains($0.id) }
        #expect(after.first.map { $0.path == "/f19.bin" && Self.range($0) == wanted } == true, "\(after)")

        // The open file is completed before the other files' heads and tails are all fetched.
        #expect(FilesystemHarness.eventually(timeout: 30) {
            Self.isComplete(engine, "f19.bin")
                && engine.server.requests.count { $0.path != "/f19.bin" && Self.isHeadOrTail($0, size: size) } == 38
        })
        let gets = engine.server.requests.filter { $0.method == "GET" }
        let lastHeadOrTail = try #require(gets.last { $0.path != "/f19.bin" && Self.isHeadOrTail($0, size: size) })
        let openFilesWork = gets.filter { $0.path == "/f19.bin" && !Self.isHeadOrTail($0, size: size) && Self.range($0) != wanted }
        #expect(!openFilesWork.isEmpty && openFilesWork.allSatisfy { $0.id < lastHeadOrTail.id }, "\(gets)")
    }

    @Test func aFileOpenedEarlierIsCompletedOnlyAfterTheOtherFilesHeadsAndTails() throws {
        let size = MiB
        let files = Self.collection(10, size: size)
        let engine = try FetchEngineHarness(files: files, prefetch: Self.configuration(.all))
        for name in files.keys { engine.server.configure(name, PathOptions(latency: .milliseconds(30))) }
        // A scanner has read the first page of one file and closed it.
        let scanned = try #require(try engine.open("f05.bin").value)
        _ = try FilesystemHarness.wait(timeout: 10) { scanned.read(offset: 0, length: 4096, completion: $0) }.get()
        scanned.close()
        let readersGets = engine.gets("f05.bin").map(\.id)
        engine.prefetcher.start()
        #expect(FilesystemHarness.eventually(timeout: 30) { files.keys.allSatisfy { Self.isComplete(engine, $0) } })

        let gets = engine.server.requests.filter { $0.method == "GET" }
        let lastHeadOrTail = try #require(gets.last { $0.path != "/f05.bin" && Self.isHeadOrTail($0, size: size) })
        let completing = gets.filter { $0.path == "/f05.bin" && !readersGets.contains($0.id) && !Self.isHeadOrTail($0, size: size) }
        #expect(!completing.isEmpty && completing.allSatisfy { $0.id > lastHeadOrTail.id }, "\(gets)")
    }

    @Test func learnedSizesOutliveARemountAndSizeTheNextHeads() throws {
        let size = 4 * MiB
        var files = Self.collection(5, size: size, prefix: "scanned", ext: "mp3")
        files.merge(Self.collection(3, size: size, prefix: "new", ext: "mp3")) { first, _ in first }
        let engine = try FetchEngineHarness(files: files, prefetch: Self.configuration(.none))
        engine.prefetcher.start()
        // A tagger reads each file's 600 KiB ID3v2 tag (with its cover), 128 KiB at a time as
        // the kernel asks, then the last page for ID3v1.
        for number in 0..<5 {
            let handle = try #require(try engine.open(String(format: "scanned%02d.mp3", number)).value)
            for offset in stride(from: UInt64(0), to: 640 * KiB, by: Int(128 * KiB)) {
                    _ = try FilesystemHarness.wait(timeout: 10) { handle.read(offset: offset, length: 128 * KiB, completion: $0) }.get()
            }
            _ = try FilesystemHarness.wait(timeout: 10) { handle.read(offset: size - 4096, length: 4096, completion: $0) }.get()
            handle.close()
        }
        engine.drainCommits()
        let learned = try #require(try engine.store.learnedHeadTails()["mp3"])
        #expect(learned.head == 640 * KiB, "\(learned)")
        #expect(learned.tail < HeadTailSizes.defaults(forType: "mp3").tail, "\(learned)")

        // A new engine over the same cache, completing everything: the new files' heads are the
        // learned 640 KiB (ten blocks), not the 256 KiB MP3s start with (whole-file requests
        // start after the head, 1 MiB at a time), and their tails the last block.
        let remounted = try engine.remount(prefetch: Self.configuration(.all, chunkBytes: MiB))
        remounted.prefetcher.start()
        #expect(FilesystemHarness.eventually(timeout: 30) { files.keys.allSatisfy { Self.isComplete(remounted, $0) } })
        let tail = size - FetchEngineHarness.blockSize..<size
        for number in 0..<3 {
            let ranges = remounted.gets(String(format: "new%02d.mp3", number)).compactMap(Self.range)
            #expect(ranges.filter { $0.lowerBound == 0 } == [0..<640 * KiB], "\(ranges)")
            #expect(ranges.contains(tail), "\(ranges)")
        }
    }

    @Test(arguments: [PrefetchPolicy.opened, .none])
    func withoutPolicyAllNoHeadOfAnUnopenedFileIsFetched(_ policy: PrefetchPolicy) throws {
        let size = 4 * MiB
        let files = Self.collection(5, size: size, ext: "mp3")
        let engine = try FetchEngineHarness(files: files, prefetch: Self.configuration(policy))
        engine.prefetcher.start()
        // A scanner reads one file's first page and its last.
        let handle = try #require(try engine.open("f02.mp3").value)
        _ = try FilesystemHarness.wait(timeout: 10) { handle.read(offset: 0, length: 4096, completion: $0) }.get()
        _ = try FilesystemHarness.wait(timeout: 10) { handle.read(offset: size - 4096, length: 4096, completion: $0) }.get()
        handle.close()
        if policy == .opened {
            // The file opened is completed; nothing else is asked for meanwhile.
            #expect(FilesystemHarness.eventually(timeout: 20) { Self.isComplete(engine, "f02.mp3") })
        } else {
            // With policy none nothing more may be asked for once the reads' own transfers (their
            // read-ahead goes out in requests of its own) have ended.
            let file = handle.file
            #expect(FilesystemHarness.eventually(timeout: 10) { file.snapshot.activeTransfers == 0 })
            engine.server.waitUntilQuiet()
            let asked = engine.server.requests.count { $0.method == "GET" }
            #expect(!FilesystemHarness.eventually(timeout: 0.5) { engine.server.requests.count { $0.method == "GET" } > asked })
            // The last page came alone: a jump to the end fetches only the pages it reads.
            #expect(engine.gets("f02.mp3").contains { Self.range($0) == size - 4096..<size }, "\(engine.gets("f02.mp3"))")
        }
        let others = engine.server.requests.filter { $0.path != "/f02.mp3" }
        #expect(others.isEmpty, "\(others)")
    }

    /// `find` or `ls -R` of a near server (here a manifest's tree: no listing to wait for) is
    /// bound by the CPU and opens no file: heads fetched meanwhile would only take CPU from the
    /// walk, so background work waits until the walk stops.
    @Test func aWalkOfANearServerHoldsHeadsStillUntilItStops() throws {
        let mount = try Self.walkedCollection()
        defer { mount.close() }
        let engine = mount.engine
        for step in 0..<8 {
            #expect(try mount.lookup(String(format: "f%02d.bin", step)).value != nil)
        }
        engine.prefetcher.start()
        // Nothing to wait for: during the walk's quiet, no head may be asked for (sizes may:
        // the manifest states none, and the walk's own look-ups need them).
        let walkStarted = ContinuousClock.now
        #expect(!FilesystemHarness.eventually(timeout: 0.5) { engine.server.requests.contains { $0.method == "GET" } },
                "a head was fetched during the walk: \(engine.server.requests)")
        #expect(ContinuousClock.now - walkStarted < .seconds(1), "the check ran inside the quiet")
        #expect(FilesystemHarness.eventually(timeout: 10) { engine.server.requests.contains { $0.method == "GET" } },
                "heads are fetched once the walk stopped")
    }

    /// A walk that waits on a distant server's listings leaves the CPU idle: heads go on beside
    /// it, for the scan that usually follows.
    @Test func aWalkThatWaitsOnListingsHoldsNoHeads() throws {
        let files = Self.collection(4, size: MiB)
        var policy = FetchEngineHarness.quickPolicy
        policy.walkQuiet = .seconds(1)
        let engine = try FetchEngineHarness(files: files, entries: [], policy: policy, prefetch: Self.configuration(.all),
                                            statedSizesAreExact: true)
        for name in files.keys { engine.server.configure(name, PathOptions(bytesPerSecond: 2 << 20)) }
        let listing = ListedMountTests.TableLister([engine.server.url("top/").absoluteString: .success(files.keys.sorted().map {
            WebListingEntry(name: $0, url: engine.server.url($0), isDirectory: false, size: MiB)
        })], delay: 0.05)
        let mount = try ListedMountTests.ListedHarness(engine: engine, lister: listing, settings: ListedDirectories.Settings())
        for name in files.keys.sorted() {
            #expect(try mount.lookup(name).value != nil)
        }
        engine.prefetcher.start()
        engine.prefetcher.manifestChanged()     // as a mount does when a listing grew its tree
        #expect(FilesystemHarness.eventually(timeout: 0.5) { engine.server.requests.contains { $0.method == "GET" } },
                "background work goes on beside a walk that waits on its listings")
    }

    /// A scanner opens the files it walks to: the lookups of the next ones hold nothing, and
    /// the heads go on being fetched ahead of it.
    @Test func aScanThatOpensFilesHoldsNoHeads() throws {
        let mount = try Self.walkedCollection()
        defer { mount.close() }
        let engine = mount.engine
        let opened = try #require(try mount.open(mount.inode("f00.bin")).value)
        defer { _ = mount.filesystem.closeHandle(opened.handle) }
        #expect(try mount.lookup("f01.bin").value != nil)
        engine.prefetcher.start()
        #expect(FilesystemHarness.eventually(timeout: 0.5) { engine.server.requests.contains { $0.method == "GET" } },
                "background work goes on beside a scan")
    }

    /// Eight 1 MiB files at 2 MiB/s per connection, heads first, a walk's quiet of a second.
    static func walkedCollection() throws -> FilesystemHarness {
        let files = collection(8, size: MiB)
        var policy = FetchEngineHarness.quickPolicy
        policy.walkQuiet = .seconds(1)
        let engine = try FetchEngineHarness(files: files, policy: policy, prefetch: configuration(.all))
        for name in files.keys { engine.server.configure(name, PathOptions(bytesPerSecond: 2 << 20)) }
        return try FilesystemHarness(engine: engine)
    }
}
