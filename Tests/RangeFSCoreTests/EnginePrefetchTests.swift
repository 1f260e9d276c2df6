import FaultServer
import Foundation
import Logging
import Testing
@testable import RangeFSCore

/// The prefetcher against a real server without a mount: it completes files within its limits,
/// pauses and resumes, serves files in use first, and never holds a reader up.
@Suite("Fetch engine: the prefetcher")
struct EnginePrefetchTests {
    static let files = ["a.bin": FetchEngineHarness.bytes(256 * 1024, seed: 1),
                        "b.bin": FetchEngineHarness.bytes(256 * 1024, seed: 2),
                        "c.bin": FetchEngineHarness.bytes(256 * 1024, seed: 3)]

    /// Without heads first unless `headsFirst`: these tests are about completing files (heads
    /// first have their own suite, `EngineHeadsTests`).
    static func configuration(_ policy: PrefetchPolicy, downloads: Int = 3, headsFirst: Bool = false) -> Prefetcher.Configuration {
        var configuration = Prefetcher.Configuration()
        configuration.policy = policy
        configuration.maxDownloads = downloads
        configuration.chunkBytes = 64 * 1024
        if !headsFirst { configuration.maxHeadTransfers = 0 }
        return configuration
    }

    /// Bytes asked for by a `Range: bytes=a-b` request.
    static func length(_ request: RecordedRequest) -> UInt64? {
        guard let start = request.rangeStart, let end = request.range?.split(separator: "-").last.flatMap({ UInt64($0) }) else {
            return nil
        }
        return end - start + 1
    }

    /// Every file complete and byte-exact, read from the cache without another request.
    static func expectComplete(_ engine: FetchEngineHarness) throws {
        let requests = engine.server.requests.count
        for (name, bytes) in files.sorted(by: { $0.key < $1.key }) {
            let file = try #require(try engine.file(name).value)
            #expect(file.isComplete, "\(name)")
            #expect(try engine.read(file, 0..<UInt64(bytes.count)).value == bytes, "\(name)")
        }
        #expect(engine.server.requests.count == requests)
    }

    @Test func theManifestIsCompletedWithinTheDownloadAndChunkCaps() throws {
        let engine = try FetchEngineHarness(files: Self.files, prefetch: Self.configuration(.all, downloads: 2))
        // Each response comes 50 ms late, so transfers overlap if more than one runs.
        for name in Self.files.keys { engine.server.configure(name, PathOptions(latency: .milliseconds(50))) }
        engine.prefetcher.start()
        var mostAtOnce = 0
        let done = FilesystemHarness.eventually(timeout: 20) {
            mostAtOnce = max(mostAtOnce, engine.server.requests.filter { !$0.finished }.count)
            return Self.files.keys.allSatisfy { engine.catalog.knownFile(forEntry: engine.entry($0))?.isComplete == true }
        }
        #expect(done)
        #expect(mostAtOnce == 2, "requests at once: \(mostAtOnce)")
        let gets = engine.server.requests.filter { $0.method == "GET" }
        #expect(gets.count == 12 && gets.allSatisfy { Self.length($0) == 64 * 1024 }, "\(gets)")
        try Self.expectComplete(engine)
    }

    @Test func pausedItAsksForNothingRemembersItAndResumes() throws {
        let engine = try FetchEngineHarness(files: Self.files, prefetch: Self.configuration(.all))
        engine.prefetcher.setPaused(true)
        engine.prefetcher.start()
        // Nothing to wait for: a paused prefetcher must stay silent for this long.
        #expect(!FilesystemHarness.eventually(timeout: 0.3) { !engine.server.requests.isEmpty })
        #expect(engine.mount.status().paused)
        #expect(try engine.store.setting(Prefetcher.pausedSetting) == "true")
        var logger = Logger(label: "rangefs-test")
        logger.logLevel = .critical
        let remounted = Prefetcher(catalog: engine.catalog, client: engine.client, store: engine.store,
                                   configuration: Self.configuration(.all), logger: logger)
        #expect(remounted.isPaused, "paused across remounts")

        engine.prefetcher.setPaused(false)
        #expect(FilesystemHarness.eventually(timeout: 10) {
            Self.files.keys.allSatisfy { engine.catalog.knownFile(forEntry: engine.entry($0))?.isComplete == true }
        })
        #expect(try engine.store.setting(Prefetcher.pausedSetting) == "false")
        try Self.expectComplete(engine)
    }

    @Test func withPolicyOpenedOnlyTheFileInUseIsCompleted() throws {
        let engine = try FetchEngineHarness(files: Self.files, prefetch: Self.configuration(.opened))
        engine.prefetcher.start()
        let held = try #require(try engine.open("b.bin").value)
        #expect(FilesystemHarness.eventually(timeout: 10) { held.file.isComplete })
        #expect(engine.gets("a.bin").isEmpty && engine.gets("c.bin").isEmpty)
        #expect(engine.catalog.knownFile(forEntry: engine.entry("a.bin")) == nil, "not even probed")
        held.close()
    }

    @Test func aReaderFarAheadOfASlowBackgroundTransferGetsItsOwnRequestAndIsAnsweredAtOnce() throws {
        let big = FetchEngineHarness.bytes(1 << 20, seed: 4)
        var prefetch = Self.configuration(.all, downloads: 1)
        prefetch.chunkBytes = 1 << 20
        let engine = try FetchEngineHarness(files: ["big.bin": big], prefetch: prefetch)
        // The whole file in one background request takes 4 s at this pace.
        engine.server.configure("big.bin", PathOptions(bytesPerSecond: 256 * 1024))
        let file = try #require(try engine.file("big.bin").value)
        engine.prefetcher.start()
        // Half a second in, the background transfer's speed is known (the reader's choice rests on it).
        #expect(FilesystemHarness.eventually(timeout: 5) { (engine.gets("big.bin").first?.bodyBytesSent ?? 0) >= 128 * 1024 })

        let started = Date()
        #expect(try engine.read(file, 983_040..<987_136).value == Array(big[983_040..<987_136]))
        #expect(Date().timeIntervalSince(started) < 2)
        let gets = engine.gets("big.bin")
        #expect(gets.count == 2 && gets[0].rangeStart == 0 && gets[1].rangeStart == 983_040, "\(gets)")
        #expect(!gets[0].finished, "the background transfer was still running: \(gets)")
    }

    @Test func aReaderFarAheadOfABackgroundTransferWhoseSpeedIsUnknownAsksForItsOwnBlocks() throws {
        let data = FetchEngineHarness.bytes(256 * 1024, seed: 5)
        var prefetch = Self.configuration(.all, downloads: 1)
        prefetch.chunkBytes = 256 * 1024
        let engine = try FetchEngineHarness(files: ["a.bin": data], prefetch: prefetch)
        // The background request's first byte comes half a second after it is asked; then 1 s for the rest.
        engine.server.configure("a.bin", PathOptions(bytesPerSecond: 256 * 1024, latency: .milliseconds(500)))
        let file = try #require(try engine.file("a.bin").value)
        engine.prefetcher.start()
        #expect(FilesystemHarness.eventually(timeout: 5) { !engine.gets("a.bin").isEmpty })

        // Its bytes are 192 KiB ahead of a transfer that has sent nothing yet.
        #expect(try engine.read(file, 196_608..<200_704).value == Array(data[196_608..<200_704]))
        #expect(engine.gets("a.bin").contains { $0.rangeStart == 196_608 }, "\(engine.gets("a.bin"))")
        // The background transfer ended where the reader's request began.
        #expect(FilesystemHarness.eventually(timeout: 10) { file.isComplete })
        try Self.expectEachByteServedOnce(engine.gets("a.bin"), size: data.count)
    }

    @Test func aReaderFarAheadOfABackgroundTransferAt96KBPerSecondIsServedByItsOwnRequest() throws {
        let data = FetchEngineHarness.bytes(256 * 1024, seed: 6)
        var prefetch = Self.configuration(.all, downloads: 1)
        prefetch.chunkBytes = 256 * 1024
        let engine = try FetchEngineHarness(files: ["slow.bin": data], prefetch: prefetch)
        // The whole file in one background request takes 2.7 s at this pace.
        engine.server.configure("slow.bin", PathOptions(bytesPerSecond: 96 * 1024))
        let file = try #require(try engine.file("slow.bin").value)
        engine.prefetcher.start()
        // A third of a second in: the background transfer's own speed is measured.
        #expect(FilesystemHarness.eventually(timeout: 5) { (engine.gets("slow.bin").first?.bodyBytesSent ?? 0) >= 32 * 1024 })

        // The last block, 160 KiB or more ahead of the background transfer: 1.7 s away at its pace.
        #expect(try engine.read(file, 196_608..<200_704).value == Array(data[196_608..<200_704]))
        let atAnswer = engine.gets("slow.bin")
        #expect(atAnswer.count == 2 && atAnswer[1].rangeStart == 196_608, "\(atAnswer)")
        // Its bytes cannot have come from the background transfer: that had not sent them yet.
        #expect(atAnswer[0].rangeStart == 0 && atAnswer[0].bodyBytesSent < 196_608, "\(atAnswer)")

        #expect(FilesystemHarness.eventually(timeout: 15) { file.isComplete })
        try Self.expectEachByteServedOnce(engine.gets("slow.bin"), size: data.count)
        #expect(try engine.read(file, 0..<UInt64(data.count)).value == data)
    }

    /// The GETs of a file, with what each served, cover it once: a transfer cut short for a
    /// reader's own request overlaps that request by at most what was in flight when it stopped.
    /// Unless a held transfer's hand-over ran out of time (`handOversOutOfTime`, counted by the
    /// client: a machine too loaded to run its loop within `HandOver.longest`): what its server
    /// had sent into the connection's buffers was then left there, and asked for again.
    static func expectEachByteServedOnce(_ gets: [RecordedRequest], size: Int, handOversOutOfTime: Int = 0) throws {
        let served = gets.compactMap { get in get.rangeStart.map { Int($0)..<Int($0) + get.bodyBytesSent } }
            .sorted { $0.lowerBound < $1.lowerBound }
        let total = served.reduce(0) { $0 + $1.count }
        var covered = 0
        for range in served where range.lowerBound <= covered { covered = max(covered, range.upperBound) }
        #expect(covered >= size, "\(gets)")
        // Seen: one piece of the server's pacing (4.8 KiB at 96 KB/s, 6.4 KiB at 128 KB/s, 12.8 KiB at 256 KB/s).
        guard handOversOutOfTime == 0 else { return }
        #expect(total - size <= 64 * 1024, "served \(total) bytes of \(size): \(gets)")
    }
}
