import FaultServer
import Foundation
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
        let engine = try FetchEngineHarness(files: ["slow.bin": slow, "fast.bin": fast],
                                            urls: ["fast.bin": fastServer.url("fast.bin")], prefetch: prefetch)
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
}
