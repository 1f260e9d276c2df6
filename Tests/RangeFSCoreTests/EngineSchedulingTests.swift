import FaultServer
import Foundation
import Synchronization
import Testing
@testable import RangeFSCore

/// How background work shares the links it uses: no host takes every background slot while
/// another host has work, and a collection's size probes never stand between a reader and
/// its first bytes.
@Suite("Fetch engine: background work shares the links")
struct EngineSchedulingTests {
    @Test func aSlowHostDoesNotTakeEveryBackgroundSlotWhileAFastHostWaits() throws {
        let slow = FetchEngineHarness.bytes(1 << 20, seed: 8)
        let fast = FetchEngineHarness.bytes(1 << 20, seed: 9)
        let fastServer = try FaultServer()
        defer { _ = fastServer.stop() }
        fastServer.publish("fast.bin", bytes: fast)
        var prefetch = EnginePrefetchTests.configuration(.all, downloads: 3)
        prefetch.chunkBytes = 64 * 1024
        // The slow file is opened to be a file in use, and never read: no first read to wait for.
        var policy = FetchEngineHarness.quickPolicy
        policy.openGrace = .zero
        let engine = try FetchEngineHarness(files: ["slow.bin": slow, "fast.bin": fast],
                                            urls: ["fast.bin": fastServer.url("fast.bin")], policy: policy, prefetch: prefetch)
        // Each 64 KiB chunk of the slow file takes 2 s: all of it, over three connections, 11 s.
        engine.server.configure("slow.bin", PathOptions(bytesPerSecond: 32 * 1024))
        // A reader has the slow file open: background work serves files in use first.
        let held = try #require(try engine.open("slow.bin").value)
        defer { held.close() }
        engine.prefetcher.start()

        // Found and fetched by background work alone.
        #expect(FilesystemHarness.eventually(timeout: 8) {
            engine.catalog.knownFile(forEntry: engine.entry("fast.bin"))?.isComplete == true
        })
        // The slow host kept its share meanwhile, and still has work.
        let slowGets = engine.gets("slow.bin")
        #expect(!held.file.isComplete)
        #expect(slowGets.contains { !$0.finished }, "\(slowGets)")
        #expect(slowGets.count < 16, "\(slowGets)")
        let fastGets = fastServer.requests(for: "fast.bin").filter { $0.method == "GET" }
        #expect(fastGets.count == 16 && fastGets.allSatisfy { $0.status == 206 && $0.bodyBytesSent == 64 * 1024 }, "\(fastGets)")
        let fastFile = try #require(engine.catalog.knownFile(forEntry: engine.entry("fast.bin")))
        #expect(try engine.read(fastFile, 0..<UInt64(fast.count)).value == fast)
    }

    /// With heads first, the big files' heads and tails hold six connections instead of three chunks.
    @Test(arguments: [false, true])
    func aReadersFirstRequestsFindAConnectionWhileACollectionsProbesAndBackgroundWorkHoldThemAll(headsFirst: Bool) throws {
        var files = ["big0.bin": FetchEngineHarness.bytes(1 << 20, seed: 1), "big1.bin": FetchEngineHarness.bytes(1 << 20, seed: 2),
                     "big2.bin": FetchEngineHarness.bytes(1 << 20, seed: 3), "zz-last.bin": FetchEngineHarness.bytes(64 * 1024, seed: 4)]
        let collection = (0..<2000).map { String(format: "f%04d.bin", $0) }
        for name in collection { files[name] = [UInt8(ascii: "x")] }
        var prefetch = EnginePrefetchTests.configuration(.all, downloads: 3, headsFirst: headsFirst)
        prefetch.chunkBytes = 64 * 1024
        // Probes that wait 20 s for an answer are not stalled transfers here.
        let engine = try FetchEngineHarness(files: files, prefetch: prefetch) { $0.stallTimeoutSeconds = 60 }
        // Background chunks that take half a minute each hold three connections...
        for name in ["big0.bin", "big1.bin", "big2.bin"] { engine.server.configure(name, PathOptions(bytesPerSecond: 2048)) }
        // ...and every size probe of the collection is answered after 20 s.
        for name in collection { engine.server.configure(name, PathOptions(latency: .seconds(20))) }
        // Their sizes are known: the prefetcher's slots take chunks (or heads and tails) of them at once.
        for name in ["big0.bin", "big1.bin", "big2.bin"] { _ = try #require(try engine.file(name).value) }
        engine.prefetcher.start()
        #expect(FilesystemHarness.eventually(timeout: 5) {
            engine.server.requests.filter { $0.method == "GET" }.count == (headsFirst ? 6 : 3)
        }, "\(engine.server.requests)")
        // A listing of the collection: its probes take the connections the client allows a host.
        engine.catalog.discoverSizes(ofEntries: collection.prefix(FileCatalog.eagerListingLimit).map(engine.entry))
        #expect(FilesystemHarness.eventually(timeout: 5) {
            engine.server.requests.count(where: { $0.method == "HEAD" && $0.path.hasPrefix("/f") }) >= 5
        })
        let before = engine.server.requests

        // A reader opens the last entry and reads its first page.
        let opened = try #require(try engine.open("zz-last.bin").value)
        defer { opened.close() }
        #expect(try engine.read(opened.file, 0..<4096).value == Array(files["zz-last.bin"]![0..<4096]))
        let after = engine.server.requests
        // Its probe and its range request went out at once: no probe that was waiting for its
        // answer when it opened had to end first to free a connection, and no request that
        // was queued for one went before its probe. (A collection's probe that libcurl had
        // queued for a connection is queued again behind the reader's probe, and may take a
        // connection freed for it before the range request comes: that holds nothing up.)
        let probesEnded = after.filter { request in
            request.method == "HEAD" && request.finished && before.contains { $0.id == request.id && !$0.finished }
        }
        #expect(probesEnded.isEmpty, "\(probesEnded)")
        let readerProbe = try #require(after.first { $0.method == "HEAD" && $0.path == "/zz-last.bin" })
        let next = after.filter { $0.id > readerProbe.id && !($0.method == "HEAD" && $0.path.hasPrefix("/f")) }
        #expect(next.map { "\($0.method) \($0.path)" } == ["GET /zz-last.bin"], "\(next)")
    }

    /// Right after a mount the collection's size probes hold the server's connections; a `stat`
    /// waits on its file's probe, and the read that follows goes on the connection that probe
    /// used, not on a new one (a round trip longer over a distant link, more with TLS).
    @Test func aReadAfterTheProbeItWaitedOnTakesThatProbesConnection() throws {
        var files = ["a-target.bin": FetchEngineHarness.bytes(1 << 20, seed: 21)]
        let collection = (0..<40).map { String(format: "f%02d.bin", $0) }
        for name in collection { files[name] = FetchEngineHarness.bytes(4096, seed: 22) }
        var policy = FetchEngineHarness.quickPolicy
        policy.mountGrace = .seconds(5)     // as after a mount: transfers wait, probes go on
        policy.probeGraceAfterReader = .milliseconds(500)
        let engine = try FetchEngineHarness(files: files, policy: policy,
                                            prefetch: EnginePrefetchTests.configuration(.all, headsFirst: true))
        // The target's probe comes first and is answered soon; the others take two seconds each.
        engine.server.configure("a-target.bin", PathOptions(latency: .milliseconds(100)))
        for name in collection { engine.server.configure(name, PathOptions(latency: .seconds(2))) }
        engine.prefetcher.start()
        try #require(FilesystemHarness.eventually(timeout: 5) {
            engine.server.requests.contains { $0.method == "HEAD" && $0.path == "/a-target.bin" }
        })
        let file = try #require(try engine.file("a-target.bin").value)
        let middle: UInt64 = 512 * 1024
        #expect(try engine.read(file, middle..<middle + 4096).value == Array(files["a-target.bin"]![Int(middle)..<Int(middle) + 4096]))
        let requests = engine.server.requests
        let probe = try #require(requests.first { $0.method == "HEAD" && $0.path == "/a-target.bin" })
        let read = try #require(requests.first { $0.method == "GET" && $0.path == "/a-target.bin" && $0.rangeStart == middle })
        #expect(read.connection == probe.connection, "\(requests)")
    }

    @Test func aBackgroundTransferThatGaveItsConnectionToAReaderGoesOnWhereItStopped() throws {
        let data = FetchEngineHarness.bytes(256 * 1024, seed: 5)
        let readData = FetchEngineHarness.bytes(8192, seed: 6)
        let (engine, back) = try Self.backgroundTransferBesideASlowProbe(of: data, bytesPerSecond: 128 * 1024,
                                                                         probeTakes: .seconds(1), others: ["read.bin": readData])
        defer { back.close() }

        // A reader of a third file: the background transfer gives its connection up.
        let read = try #require(try engine.file("read.bin").value)
        #expect(try engine.read(read, 0..<8192).value == readData)
        #expect(FilesystemHarness.eventually(timeout: 10) { back.file.isComplete })
        let gets = engine.gets("back.bin")
        #expect(gets.count == 2 && gets[1].rangeStart.map { $0 > 0 && $0 <= UInt64(gets[0].bodyBytesSent) } == true, "\(gets)")
        try EnginePrefetchTests.expectEachByteServedOnce(gets, size: data.count,
                                                          handOversOutOfTime: engine.clientMetrics.handOversThatRanOutOfTime)
        #expect(try engine.read(back.file, 0..<UInt64(data.count)).value == data)
    }

    /// A background transfer held while a reader waits keeps receiving into the socket's
    /// buffers (its server does not know it stands still); when it gives its connection up
    /// to another reader's request, it first takes those bytes instead of throwing them away.
    @Test func aHeldBackgroundTransferTakesWhatAlreadyArrivedBeforeItGivesItsConnectionUp() throws {
        let data = FetchEngineHarness.bytes(1 << 20, seed: 8)
        let readData = FetchEngineHarness.bytes(8192, seed: 9)
        let (engine, back) = try Self.backgroundTransferBesideASlowProbe(of: data, bytesPerSecond: 512 * 1024,
                                                                         probeTakes: .seconds(3), others: ["read.bin": readData])
        defer { back.close() }
        // Held while the probe runs, the transfer takes nothing; its server sends on into the
        // connection's buffers all the same.
        #expect(FilesystemHarness.eventually(timeout: 10) { (engine.gets("back.bin").first?.bodyBytesSent ?? 0) >= 256 * 1024 })
        let sentBeforeTheReader = try #require(engine.gets("back.bin").first).bodyBytesSent
        #expect(!back.file.isComplete, "the transfer was held: the file cannot be complete yet")

        // A reader of a third file: the background transfer gives its connection up.
        let read = try #require(try engine.file("read.bin").value)
        #expect(try engine.read(read, 0..<8192).value == readData)
        #expect(FilesystemHarness.eventually(timeout: 10) { back.file.isComplete })
        let gets = engine.gets("back.bin")
        if gets.count > 1 {
            // What the server had sent before the reader came was taken, not asked for again.
            #expect(gets.count == 2 && (gets[1].rangeStart ?? 0) >= UInt64(sentBeforeTheReader),
                    "sent before the reader came: \(sentBeforeTheReader); \(gets)")
        }
        try EnginePrefetchTests.expectEachByteServedOnce(gets, size: data.count,
                                                          handOversOutOfTime: engine.clientMetrics.handOversThatRanOutOfTime)
        #expect(try engine.read(back.file, 0..<UInt64(data.count)).value == data)
    }

    /// A program's first requests, which often follow the mount at once, go alone: background
    /// transfers stand still for `mountGrace` after the prefetcher starts (size probes go on).
    @Test func backgroundWorkStartsAMomentAfterTheMountSoAProgramsFirstRequestsGoAlone() throws {
        let files = ["first.bin": FetchEngineHarness.bytes(256 * 1024, seed: 12),
                     "later.bin": FetchEngineHarness.bytes(256 * 1024, seed: 13)]
        var policy = FetchEngineHarness.quickPolicy
        policy.mountGrace = .seconds(2)
        let engine = try FetchEngineHarness(files: files, policy: policy,
                                            prefetch: EnginePrefetchTests.configuration(.all, downloads: 2, headsFirst: true))
        let started = ContinuousClock.now
        engine.prefetcher.start()
        let file = try #require(try engine.file("first.bin").value)
        #expect(try engine.read(file, 0..<4096).value == Array(files["first.bin"]![0..<4096]))
        let early = engine.server.requests
        try #require(ContinuousClock.now - started < .milliseconds(1500), "the reader's requests took the whole grace")
        #expect(early.contains { $0.path == "/first.bin" && $0.method == "GET" }
                && !early.contains { $0.path == "/later.bin" && $0.method == "GET" }, "\(early)")
        // Then background work goes on with the rest.
        #expect(FilesystemHarness.eventually(timeout: 10) {
            engine.catalog.knownFile(forEntry: engine.entry("later.bin"))?.isComplete == true
        })
    }

    /// A program handed a complete file reads it from the cache disk unseen (passthrough, the
    /// page cache): background work stands still for `quietAfterCompleteOpen`, then goes on.
    @Test func openingACompleteFileHoldsBackgroundWorkStillForAMomentThenItGoesOn() throws {
        let data = FetchEngineHarness.bytes(1 << 20, seed: 10)
        let done = FetchEngineHarness.bytes(65_536, seed: 11)
        var prefetch = EnginePrefetchTests.configuration(.opened, downloads: 1)
        prefetch.chunkBytes = UInt64(data.count)
        var policy = FetchEngineHarness.quickPolicy
        policy.quietAfterCompleteOpen = .seconds(1)
        let engine = try FetchEngineHarness(files: ["back.bin": data, "done.bin": done], policy: policy, prefetch: prefetch)
        engine.server.configure("back.bin", PathOptions(bytesPerSecond: 512 * 1024))
        let finished = try #require(try engine.file("done.bin").value)
        #expect(try engine.read(finished, 0..<65_536).value == done)
        #expect(FilesystemHarness.eventually(timeout: 5) { finished.isComplete })

        let back = try #require(try engine.open("back.bin").value)
        defer { back.close() }
        engine.prefetcher.start()
        #expect(FilesystemHarness.eventually(timeout: 5) { back.file.snapshot.cachedBytes >= 128 * 1024 },
                "the background transfer is under way")

        let opened = ContinuousClock.now
        let reader = try #require(try engine.open("done.bin").value)
        defer { reader.close() }
        let before = back.file.snapshot.cachedBytes
        // What was already on its way is stored (a block at most); then nothing comes for the
        // quiet's length, where 512 KiB/s would bring 256 KiB in half a second.
        let during = FilesystemHarness.eventually(timeout: 0.5) { back.file.snapshot.cachedBytes > before + 128 * 1024 }
        #expect(!during, "background work went on while the complete file was being read: \(back.file.snapshot.cachedBytes - before) bytes")
        #expect(ContinuousClock.now - opened < .seconds(1), "the check ran inside the quiet")
        #expect(FilesystemHarness.eventually(timeout: 10) { back.file.isComplete }, "and it goes on after")
        #expect(try engine.read(back.file, 0..<UInt64(data.count)).value == data)
    }

    /// A program that reads cached bytes faster than `fastCachedReadBytesPerSecond` (a copy, a
    /// checksum, fio over a cached region) holds whole-file work still while it reads; when
    /// its reads stop, background work goes on.
    @Test func fastReadsOfCachedBytesHoldWholeFileWorkStillUntilTheyStop() throws {
        var policy = Self.cachedReadsPolicy
        policy.slowestLinkQuietedByCachedReads = 0
        let (engine, back, done) = try Self.backgroundTransferBesideACachedFile(policy: policy, cachedFileBytesPerSecond: nil)
        defer { back.close() }
        let reads = CachedReadLoop(done)
        let before = back.file.snapshot.cachedBytes
        // What was already on its way is stored (a block at most); then nothing comes while the
        // reads go on, where 512 KiB/s would bring 300 KiB in 0.6 s.
        let during = FilesystemHarness.eventually(timeout: 0.6) { back.file.snapshot.cachedBytes > before + 128 * 1024 }
        let readsDone = reads.stop()
        #expect(readsDone > 100, "the loop read the cached file")
        #expect(!during, "background work went on beside fast reads of cached bytes: \(back.file.snapshot.cachedBytes - before) bytes")
        #expect(FilesystemHarness.eventually(timeout: 10) { back.file.isComplete }, "and it goes on after")
        #expect(try engine.read(back.file, 0..<back.file.layout.fileSize).value == Self.backData)
    }

    /// From a server known to be slow (its readers' requests moved under
    /// `slowestLinkQuietedByCachedReads`), background work takes little of the machine: fast
    /// reads of cached bytes leave it going, and the link busy.
    @Test func aSlowServersBackgroundWorkGoesOnBesideFastReadsOfCachedBytes() throws {
        let (engine, back, done) = try Self.backgroundTransferBesideACachedFile(policy: Self.cachedReadsPolicy,
                                                                                cachedFileBytesPerSecond: 1 << 20)
        defer { back.close() }
        let slowest = Double(engine.policy.slowestLinkQuietedByCachedReads)
        #expect(engine.catalog.environment.hostRates.bytesPerSecond(host: done.url.serverKey, at: .now).map { $0 < slowest } == true,
                "the server is known to be slow")
        let reads = CachedReadLoop(done)
        let before = back.file.snapshot.cachedBytes
        let during = FilesystemHarness.eventually(timeout: 10) { back.file.snapshot.cachedBytes > before + 256 * 1024 }
        let readsDone = reads.stop()
        #expect(readsDone > 100, "the loop read the cached file")
        #expect(during, "background work stood still beside fast reads of cached bytes from a slow server")
    }

    private static let backData = FetchEngineHarness.bytes(1 << 20, seed: 12)

    /// Reads of cached bytes quiet whole-file work from 1 MiB/s on; opening a complete file quiets nothing.
    private static var cachedReadsPolicy: FetchPolicy {
        var policy = FetchEngineHarness.quickPolicy
        policy.quietAfterCompleteOpen = .zero
        policy.fastCachedReadBytesPerSecond = 1 << 20
        policy.quietAfterFastCachedReads = .milliseconds(300)
        return policy
    }

    /// back.bin (1 MiB at 512 KiB/s) under way in the background, with a handle open on it;
    /// done.bin (256 KiB, at `cachedFileBytesPerSecond` if given) read whole by a reader first.
    private static func backgroundTransferBesideACachedFile(policy: FetchPolicy, cachedFileBytesPerSecond: Int?) throws
        -> (FetchEngineHarness, OpenFile, CachedFile) {
        let doneData = FetchEngineHarness.bytes(256 * 1024, seed: 13)
        var prefetch = EnginePrefetchTests.configuration(.opened, downloads: 1)
        prefetch.chunkBytes = UInt64(backData.count)
        let engine = try FetchEngineHarness(files: ["back.bin": backData, "done.bin": doneData], policy: policy, prefetch: prefetch)
        engine.server.configure("back.bin", PathOptions(bytesPerSecond: 512 * 1024))
        if let rate = cachedFileBytesPerSecond { engine.server.configure("done.bin", PathOptions(bytesPerSecond: rate)) }
        let done = try #require(try engine.file("done.bin").value)
        #expect(try engine.read(done, 0..<UInt64(doneData.count)).value == doneData)
        let back = try #require(try engine.open("back.bin").value)
        engine.prefetcher.start()
        #expect(FilesystemHarness.eventually(timeout: 5) { back.file.snapshot.cachedBytes >= 128 * 1024 },
                "the background transfer is under way")
        return (engine, back, done)
    }

    /// A reader of the same file far ahead of the background transfer cuts it where the
    /// reader's blocks begin, and the reader's request takes its connection: the rest the
    /// background transfer asks for later ends at the cut, not where it first meant to.
    @Test func aBackgroundTransferCutForAReaderAsksForItsRestOnlyUpToTheCut() throws {
        let data = FetchEngineHarness.bytes(256 * 1024, seed: 7)
        let (engine, back) = try Self.backgroundTransferBesideASlowProbe(of: data, bytesPerSecond: 128 * 1024, probeTakes: .seconds(1))
        defer { back.close() }

        // The last block: 150 KiB or more ahead of the background transfer, over a second at its pace.
        let cut = 196_608
        #expect(try engine.read(back.file, UInt64(cut)..<UInt64(cut + 4096)).value == Array(data[cut..<cut + 4096]))
        #expect(FilesystemHarness.eventually(timeout: 10) { back.file.isComplete })
        let gets = engine.gets("back.bin")
        try #require(gets.count == 3, "\(gets)")
        #expect(gets[1].range == "bytes=\(cut)-\(data.count - 1)", "the reader's own request: \(gets)")
        let rest = try #require(gets[2].rangeStart, "\(gets)")
        #expect(rest > 0 && rest <= UInt64(gets[0].bodyBytesSent) && gets[2].range == "bytes=\(rest)-\(cut - 1)",
                "the background transfer's rest ends at the cut: \(gets)")
        try EnginePrefetchTests.expectEachByteServedOnce(gets, size: data.count,
                                                          handOversOutOfTime: engine.clientMetrics.handOversThatRanOutOfTime)
        #expect(try engine.read(back.file, 0..<UInt64(data.count)).value == data)
    }

    /// `back.bin` (`data`, sent at `bytesPerSecond`) opened and in one background transfer on one
    /// of the server's two connections, and a size probe of `listed.bin` (answered after
    /// `probeTakes`) on the other, which holds background work still while it runs. `others`
    /// are published beside them.
    static func backgroundTransferBesideASlowProbe(of data: [UInt8], bytesPerSecond: Int, probeTakes: Duration,
                                                   others: [String: [UInt8]] = [:]) throws -> (FetchEngineHarness, OpenFile) {
        let files = others.merging(["back.bin": data, "listed.bin": [UInt8(ascii: "x")]]) { _, new in new }
        var prefetch = EnginePrefetchTests.configuration(.opened, downloads: 1)
        prefetch.chunkBytes = UInt64(data.count)
        let engine = try FetchEngineHarness(files: files, prefetch: prefetch) {
            $0.maxConnectionsPerHost = 2
            $0.stallTimeoutSeconds = 60
        }
        engine.server.configure("back.bin", PathOptions(bytesPerSecond: bytesPerSecond))
        engine.server.configure("listed.bin", PathOptions(latency: probeTakes))
        let back = try #require(try engine.open("back.bin").value)
        engine.prefetcher.start()
        #expect(FilesystemHarness.eventually(timeout: 5) { (engine.gets("back.bin").first?.bodyBytesSent ?? 0) >= 32 * 1024 })
        engine.catalog.discoverSizes(ofEntries: [engine.entry("listed.bin")])
        #expect(FilesystemHarness.eventually(timeout: 5) { engine.server.requests(for: "listed.bin").count == 1 })
        return (engine, back)
    }
}

/// A thread that reads a cached file's first 4 KiB over and over, as fast as the cache answers,
/// until stopped (at most 30 s).
private final class CachedReadLoop: Sendable {
    private let stopped = Atomic<Bool>(false)
    private let count = Atomic<Int>(0)
    private let finished = DispatchSemaphore(value: 0)

    init(_ file: CachedFile) {
        let thread = Thread { [self] in
            let end = ContinuousClock.now + .seconds(30)
            while !stopped.load(ordering: .relaxed), ContinuousClock.now < end {
                guard case .success? = try? FetchEngineHarness.read(file, 0..<4096, timeout: 5) else { break }
                count.add(1, ordering: .relaxed)
            }
            finished.signal()
        }
        thread.start()
    }

    /// Stops the reads and returns how many there were.
    func stop() -> Int {
        stopped.store(true, ordering: .relaxed)
        finished.wait()
        return count.load(ordering: .relaxed)
    }
}
