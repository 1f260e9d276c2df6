import FaultServer
import Foundation
import Testing
@testable import RangeFSCore

/// A file served by several sources (its URL and mirrors, each a `FaultServer` of its own),
/// driven through the catalog without a mount: failover, sources dropped for a copy of another
/// size, and the failure of a file no source serves.
@Suite("Fetch engine: mirrors")
struct EngineMirrorTests {
    /// Four blocks of 64 KiB.
    static let data = FetchEngineHarness.bytes(256 * 1024)
    static let whole: Range<UInt64> = 0..<UInt64(data.count)

    static func slice(_ range: Range<UInt64>) -> [UInt8] {
        Array(data[Int(range.lowerBound)..<Int(range.upperBound)])
    }

    /// Servers publishing `a.bin` (each its own copy of `bytes`), stopped when the test ends.
    final class Mirrors {
        let servers: [FaultServer]

        init(_ count: Int, bytes: [UInt8] = EngineMirrorTests.data) throws {
            servers = try (0..<count).map { _ in
                let server = try FaultServer()
                server.publish("a.bin", bytes: bytes)
                return server
            }
        }

        var urls: [URL] { servers.map { $0.url("a.bin") } }

        func gets(_ index: Int) -> [RecordedRequest] {
            servers[index].requests(for: "a.bin").filter { $0.method == "GET" }
        }

        deinit { for server in servers { _ = server.stop() } }
    }

    /// A URL on loopback where nothing listens: a server started and stopped.
    static func refusingURL() throws -> URL {
        let server = try FaultServer()
        let url = server.url("a.bin")
        _ = server.stop()
        return url
    }

    /// An engine whose a.bin is served by every one of `mirrors` (the first as its URL), once
    /// its first 4 KiB were read and every source was asked about.
    static func readingFromEvery(_ mirrors: Mirrors) throws -> (FetchEngineHarness, CachedFile) {
        let engine = try FetchEngineHarness(files: [:], entries: ["a.bin"], urls: ["a.bin": mirrors.urls[0]],
                                            mirrors: ["a.bin": Array(mirrors.urls.dropFirst())])
        let file = try #require(try engine.file("a.bin").value)
        #expect(try engine.read(file, 0..<4096).value == Self.slice(0..<4096))
        #expect(Self.sourcesSettle(file))
        // A read is answered before its transfer ends; a source still serving one would pass
        // the test's next read to another source.
        #expect(FilesystemHarness.eventually(timeout: 5) { file.snapshot.activeTransfers == 0 })
        return (engine, file)
    }

    /// Waits until every source of `file` was asked about (or dropped), at most 10 s.
    static func sourcesSettle(_ file: CachedFile) -> Bool {
        FilesystemHarness.eventually(timeout: 10) { !file.sourceStatuses.contains { $0.state == .unknown } }
    }

    @Test func aFirstURLRefusingConnectionsLeavesTheFileReadableFromItsMirror() throws {
        let mirrors = try Mirrors(1)
        let refusing = try Self.refusingURL()
        let engine = try FetchEngineHarness(files: ["a.bin": Self.data], urls: ["a.bin": refusing],
                                            mirrors: ["a.bin": mirrors.urls])
        let file = try #require(try engine.file("a.bin").value)
        #expect(file.layout.fileSize == UInt64(Self.data.count))
        #expect(try engine.read(file, Self.whole).value == Self.data)
        #expect(!mirrors.gets(0).isEmpty)
        // Asked again a few times (a refusal may be brief), then dropped for this file.
        #expect(FilesystemHarness.eventually(timeout: 10) { file.sourceStatuses.map(\.state) == [.dropped, .ok] },
                "\(file.sourceStatuses)")
        #expect(file.sourceStatuses[0].reason?.contains("connect") == true, "\(file.sourceStatuses)")
    }

    @Test func a503SendsTheRetryToTheOtherSourceAtOnce() throws {
        let mirrors = try Mirrors(2)
        let engine = try FetchEngineHarness(files: [:], entries: ["a.bin"], urls: ["a.bin": mirrors.urls[0]],
                                            mirrors: ["a.bin": [mirrors.urls[1]]])
        let file = try #require(try engine.file("a.bin").value)
        #expect(try engine.read(file, 0..<65_536).value == Self.slice(0..<65_536))
        #expect(Self.sourcesSettle(file))
        #expect(mirrors.gets(0).count == 1 && mirrors.gets(1).isEmpty, "the first source is the best while it works")
        // Its first transfer has ended (a source still serving one would pass the next to the other).
        #expect(FilesystemHarness.eventually(timeout: 5) { file.snapshot.activeTransfers == 0 })

        mirrors.servers[0].inject(.status(503), times: 100, for: "a.bin", method: "GET")
        let started = Date()
        #expect(try engine.read(file, 65_536..<262_144).value == Self.slice(65_536..<262_144))
        #expect(Date().timeIntervalSince(started) < 2)
        #expect(mirrors.gets(0).count == 2, "one 503, then no more asked of it: \(mirrors.gets(0))")
        let second = mirrors.gets(1)
        #expect(second.first?.rangeStart == 65_536 && second.allSatisfy { $0.status == 206 }, "\(second)")
        // The 503's source rests for 125–375 ms (250 ms, jittered), which a loaded machine may
        // outlast before this line: resting or rested, it is not dropped for a transient failure.
        let states = file.sourceStatuses.map(\.state)
        #expect([[.backingOff, .ok], [.ok, .ok]].contains(states), "\(file.sourceStatuses)")
    }

    @Test func aSourceDroppingMidBodyHandsTheRestToAnother() throws {
        let mirrors = try Mirrors(3)
        let (engine, file) = try Self.readingFromEvery(mirrors)
        mirrors.servers[0].inject(.dropConnection(afterBodyBytes: 100_000), for: "a.bin", method: "GET")
        #expect(try engine.read(file, 4096..<262_144).value == Self.slice(4096..<262_144))
        let first = mirrors.gets(0)
        let rest = mirrors.gets(1) + mirrors.gets(2)
        #expect(first.last?.bodyBytesSent == 100_000, "\(first)")
        let resumedAt = first.last.flatMap(\.rangeStart).map { $0 + 100_000 }
        #expect(rest.count == 1 && rest.first?.rangeStart == resumedAt, "only the remainder, from another source: \(rest)")
        #expect(file.snapshot.cachedBytes == UInt64(Self.data.count))
    }

    @Test func aMirrorWithAnotherSizeIsDroppedWithItsReasonAndNeverAsked() throws {
        let mirrors = try Mirrors(2)
        mirrors.servers[1].publish("a.bin", bytes: FetchEngineHarness.bytes(200_000))
        let engine = try FetchEngineHarness(files: [:], entries: ["a.bin"], urls: ["a.bin": mirrors.urls[0]],
                                            mirrors: ["a.bin": [mirrors.urls[1]]])
        let file = try #require(try engine.file("a.bin").value)
        #expect(try engine.read(file, Self.whole).value == Self.data)
        #expect(Self.sourcesSettle(file))
        let states = file.sourceStatuses
        #expect(states.map(\.state) == [.ok, .dropped], "\(states)")
        #expect(states[1].reason?.contains("size is 200000 bytes") == true, "\(states)")
        // `rangefs status` and the file's attribute say the same.
        let status = engine.mount.fileStatus(ofEntry: engine.entry("a.bin"))
        #expect(status.sources == states)
        let lines = try #require(ExtendedAttributes.ofFile(status)["user.rangefs.sources"]).split(separator: "\n")
        #expect(lines.count == 2 && lines[0].hasPrefix("\(mirrors.urls[0].absoluteString) ok"), "\(lines)")
        #expect(lines[1] == "\(mirrors.urls[1].absoluteString) dropped: its size is 200000 bytes where the file has 262144")
        // Without the first source, the file still fails rather than take the other copy's bytes.
        mirrors.servers[0].remove("a.bin")
        // Evicted once its transfer has ended and its blocks are committed (a busy file is kept).
        #expect(FilesystemHarness.eventually(timeout: 5) { file.snapshot.activeTransfers == 0 })
        engine.drainCommits()
        #expect(engine.catalog.evict(entries: [engine.entry("a.bin")]).isEmpty)
        #expect(try engine.read(file, 0..<4096).error != nil)
        #expect(mirrors.gets(1).isEmpty, "no range was asked of the copy of another size")
    }

    @Test func aFirstURLOfAnotherSizeThanTheManifestStatesIsPassedOverForTheSize() throws {
        let mirrors = try Mirrors(2)
        mirrors.servers[0].publish("a.bin", bytes: FetchEngineHarness.bytes(200_000))
        let engine = try FetchEngineHarness(files: [:], entries: ["a.bin"], urls: ["a.bin": mirrors.urls[0]],
                                            mirrors: ["a.bin": [mirrors.urls[1]]], sizes: ["a.bin": UInt64(Self.data.count)])
        let file = try #require(try engine.file("a.bin").value)
        #expect(file.layout.fileSize == UInt64(Self.data.count), "the size of the copy the manifest describes")
        #expect(try engine.read(file, Self.whole).value == Self.data)
        #expect(FilesystemHarness.eventually(timeout: 10) { file.sourceStatuses.map(\.state) == [.dropped, .ok] },
                "\(file.sourceStatuses)")
        #expect(mirrors.gets(0).isEmpty, "no range was asked of the copy of another size")
    }

    /// The prefetcher's settings for these tests: `downloads` slots of `chunk` bytes.
    static func prefetching(downloads: Int = 3, chunk: UInt64) -> Prefetcher.Configuration {
        var configuration = Prefetcher.Configuration()
        configuration.policy = .all
        configuration.maxDownloads = downloads
        configuration.chunkBytes = chunk
        return configuration
    }

    /// An engine whose `name` (of `bytes`) is served by every one of `mirrors`, the prefetcher
    /// configured but not started, once every source was asked about.
    static func engine(over mirrors: Mirrors, bytes: [UInt8], prefetch: Prefetcher.Configuration) throws -> (FetchEngineHarness, CachedFile) {
        let engine = try FetchEngineHarness(files: [:], entries: ["a.bin"], urls: ["a.bin": mirrors.urls[0]],
                                            mirrors: ["a.bin": Array(mirrors.urls.dropFirst())], prefetch: prefetch)
        let file = try #require(try engine.file("a.bin").value)
        #expect(try engine.read(file, 0..<4096).value == Array(bytes[0..<4096]))
        #expect(Self.sourcesSettle(file))
        return (engine, file)
    }

    @Test func backgroundWorkOnOneFileGoesToEveryMirrorAtOnce() throws {
        let mirrors = try Mirrors(3)
        // Each reply comes 100 ms late, so the three slots' transfers overlap.
        for server in mirrors.servers { server.configure("a.bin", PathOptions(latency: .milliseconds(100))) }
        let (engine, file) = try Self.engine(over: mirrors, bytes: Self.data, prefetch: Self.prefetching(chunk: 64 * 1024))
        engine.prefetcher.start()
        #expect(FilesystemHarness.eventually(timeout: 20) { file.isComplete })
        let ranges = (0..<3).map { index in mirrors.gets(index).filter { $0.range != nil } }
        #expect(ranges.allSatisfy { !$0.isEmpty }, "each mirror served part of the file: \(ranges)")
        #expect(try engine.read(file, Self.whole).value == Self.data)
    }

    @Test func theTailOfASlowMirrorsChunkIsFetchedFromAFasterOne() throws {
        let bytes = FetchEngineHarness.bytes(2 * 1024 * 1024, seed: 5)
        let mirrors = try Mirrors(3, bytes: bytes)
        // The last mirror sends 64 KB/s: a 512 KiB chunk of it would take 8 s.
        mirrors.servers[2].configure("a.bin", PathOptions(bytesPerSecond: 64_000))
        let chunk: UInt64 = 512 * 1024
        let (engine, file) = try Self.engine(over: mirrors, bytes: bytes, prefetch: Self.prefetching(chunk: chunk))
        engine.prefetcher.start()
        #expect(FilesystemHarness.eventually(timeout: 30) { file.isComplete })
        #expect(try engine.read(file, 0..<UInt64(bytes.count)).value == bytes)
        let slow = mirrors.gets(2).filter { $0.range != nil }
        #expect(!slow.isEmpty, "the slow mirror got a chunk before its speed was known: \(slow)")
        #expect(slow.allSatisfy { $0.bodyBytesSent < Int(chunk) / 2 },
                "it was cut short, its tail fetched elsewhere: \(slow.map(\.bodyBytesSent))")
        let status = file.sourceStatuses
        #expect(status.map(\.state) == [.ok, .ok, .ok], "slow is not failing: \(status)")
    }

    @Test func aRefreshWithAnotherMirrorListUsesTheNewMirrors() throws {
        let mirrors = try Mirrors(3)
        let engine = try FetchEngineHarness(files: [:], entries: ["a.bin"], urls: ["a.bin": mirrors.urls[0]],
                                            mirrors: ["a.bin": [mirrors.urls[1]]])
        let file = try #require(try engine.file("a.bin").value)
        #expect(try engine.read(file, 0..<65_536).value == Self.slice(0..<65_536))
        #expect(Self.sourcesSettle(file))

        var refreshed = engine.catalog.manifest
        refreshed.entries[0].mirrors = [mirrors.urls[2]]
        #expect(engine.catalog.replaceManifest(with: refreshed) == [0], "the same entry, with what it had cached")
        mirrors.servers[0].remove("a.bin")
        mirrors.servers[1].remove("a.bin")
        #expect(try engine.read(file, 65_536..<262_144).value == Self.slice(65_536..<262_144))
        #expect(mirrors.gets(1).isEmpty, "the mirror no longer listed is not asked")
        #expect(!mirrors.gets(2).isEmpty)
        let states = file.sourceStatuses
        #expect(states.map(\.url) == [mirrors.urls[0], mirrors.urls[2], mirrors.urls[1]].map(\.absoluteString))
        #expect(states[2].state == .dropped && states[2].reason == "no longer in the manifest", "\(states)")
    }

    @Test func whenEverySourceFailsTheReadFailsWithEIONamingEachOne() throws {
        let mirrors = try Mirrors(3)
        let (engine, file) = try Self.readingFromEvery(mirrors)
        mirrors.servers[0].remove("a.bin")
        mirrors.servers[1].inject(.status(500), times: 100, for: "a.bin", method: "GET")
        _ = mirrors.servers[2].stop()
        let started = Date()
        let error = try #require(try engine.read(file, 65_536..<131_072).error)
        #expect(Date().timeIntervalSince(started) < 5)
        guard case .sourcesFailed = error.reason else {
            Issue.record("\(error)")
            return
        }
        for (url, why) in zip(mirrors.urls, ["dropped: HTTP status 404", "HTTP status 500", "failing:"]) {
            #expect(error.description.contains(url.absoluteString), "\(error)")
            #expect(error.description.contains(why), "\(why) in \(error)")
        }
        #expect(FilesystemError(.fetch(error)).errno == EIO)
        #expect(file.snapshot.cachedBytes <= 65_536, "nothing of the failed block is counted: \(file.snapshot)")
        #expect(try engine.read(file, 0..<4096).value == Self.slice(0..<4096), "what was fetched stays readable")
    }
}
