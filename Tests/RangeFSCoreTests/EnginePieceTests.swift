import FaultServer
import Foundation
import Synchronization
import Testing
@testable import RangeFSCore

/// Piece hashes at work against real servers without a mount: a piece's bytes reach readers
/// only once they match, a bad piece drops the source that served it and comes from another.
@Suite("Fetch engine: piece hashes")
struct EnginePieceTests {
    /// Eight blocks of 64 KiB in four pieces of 128 KiB.
    static let data = FetchEngineHarness.bytes(512 * 1024, seed: 11)
    static let pieceLength = 128 * 1024
    /// The same bytes but for 100 in piece 1.
    static let corrupted: [UInt8] = {
        var bytes = data
        for index in 150_000..<150_100 { bytes[index] ^= 0xFF }
        return bytes
    }()

    static func block(_ index: Int) -> Range<UInt64> {
        UInt64(index * 65_536)..<UInt64((index + 1) * 65_536)
    }

    static func slice(_ range: Range<UInt64>) -> [UInt8] {
        Array(data[Int(range.lowerBound)..<Int(range.upperBound)])
    }

    static func prefetchAll() -> Prefetcher.Configuration {
        var configuration = Prefetcher.Configuration()
        configuration.policy = .all
        configuration.maxDownloads = 2
        configuration.chunkBytes = 64 * 1024
        return configuration
    }

    @Test func aCorruptedPieceNeverReachesAReaderAndComesFromTheOtherSource() throws {
        let mirrors = try EngineMirrorTests.Mirrors(2, bytes: Self.data)
        mirrors.servers[0].publish("a.bin", bytes: Self.corrupted)
        // The corrupted copy is slow, so the reader below keeps reading while its bytes arrive.
        mirrors.servers[0].configure("a.bin", PathOptions(bytesPerSecond: 1_000_000))
        // The good copy answers its probe 0.7 s late, and the reader below asks for piece 1 first:
        // the corrupted copy, the only source known until then, serves it, and its check must
        // catch it (once both are known, work is spread over them).
        mirrors.servers[1].inject(.stallBeforeHeaders(for: .milliseconds(700)), for: "a.bin", method: "HEAD")
        let engine = try FetchEngineHarness(
            files: [:], entries: ["a.bin"], urls: ["a.bin": mirrors.urls[0]], mirrors: ["a.bin": [mirrors.urls[1]]],
            pieces: ["a.bin": try FetchEngineHarness.pieceHashes(of: Self.data, pieceLength: Self.pieceLength)],
            sha256: ["a.bin": try FetchEngineHarness.sha256(of: Self.data)], prefetch: Self.prefetchAll())
        let file = try #require(try engine.file("a.bin").value)

        // A reader that checks every block it gets, again and again, while the fetch runs.
        let wrong = Mutex<[String]>([])
        let reads = Atomic<Int>(0)
        let stop = Atomic<Bool>(false)
        let reader = Thread {
            while !stop.load(ordering: .relaxed) {
                for index in [2, 3, 0, 1, 4, 5, 6, 7] {
                    let bytes = Self.block(index)
                    switch Result(catching: { try FetchEngineHarness.read(file, bytes) }) {
                    case .success(.success(let got)) where got != Self.slice(bytes):
                        wrong.withLock { $0.append("block \(index): wrong bytes") }
                    case .success(.failure(let error)):
                        wrong.withLock { $0.append("block \(index): \(error)") }
                    case .failure(let error):
                        wrong.withLock { $0.append("block \(index): \(error)") }
                    default:
                        reads.add(1, ordering: .relaxed)
                    }
                }
            }
        }
        reader.start()
        engine.prefetcher.start()
        #expect(FilesystemHarness.eventually(timeout: 20) { file.isComplete }, "\(file.snapshot) \(file.sourceStatuses)")
        stop.store(true, ordering: .relaxed)
        #expect(FilesystemHarness.eventually(timeout: 20) { reader.isFinished })

        #expect(wrong.withLock { $0 }.isEmpty, "\(wrong.withLock { $0 })")
        #expect(reads.load(ordering: .relaxed) >= 8)
        let states = file.sourceStatuses
        #expect(states.map(\.state) == [.dropped, .ok], "\(states)")
        #expect(states[0].reason?.contains("piece 1 (bytes 131072-262143) does not match its sha-256") == true, "\(states)")
        // The corrupted copy did serve the bad piece: it was caught, not avoided.
        #expect(mirrors.gets(0).contains { ($0.rangeStart ?? .max) < 262_144 && $0.bodyBytesSent > 0 }, "\(mirrors.gets(0))")
        #expect(try engine.read(file, 0..<UInt64(Self.data.count)).value == Self.data)
        #expect(file.snapshot.lastFailure == nil)
    }

    /// One server publishing `bytes` as `a.bin`, whose piece hashes are those of `data`.
    static func engine(serving bytes: [UInt8]) throws -> FetchEngineHarness {
        try FetchEngineHarness(files: ["a.bin": bytes],
                               pieces: ["a.bin": try FetchEngineHarness.pieceHashes(of: data, pieceLength: pieceLength)])
    }

    @Test func withOneSourceABadPieceFailsItsReadersAndTheGoodPiecesStayReadable() throws {
        let engine = try Self.engine(serving: Self.corrupted)
        let file = try #require(try engine.file("a.bin").value)
        #expect(try engine.read(file, 0..<4096).value == Self.slice(0..<4096))
        let error = try #require(try engine.read(file, 200_000..<204_096).error)
        guard case .sourcesFailed(let why) = error.reason else {
            Issue.record("\(error)")
            return
        }
        #expect(why.contains("piece 1 (bytes 131072-262143) does not match its sha-256"), "\(why)")
        #expect(FilesystemError(.fetch(error)).errno == EIO)
        #expect(try engine.read(file, 65_536..<131_072).value == Self.slice(65_536..<131_072), "a checked piece stays readable")
        #expect(file.snapshot.cachedBytes == 131_072, "only the checked piece is cached: \(file.snapshot)")
    }

    @Test func readsServedWithoutStoringAreCheckedToo() throws {
        let engine = try FetchEngineHarness(
            files: ["a.bin": Self.corrupted],
            pieces: ["a.bin": try FetchEngineHarness.pieceHashes(of: Self.data, pieceLength: Self.pieceLength)],
            limits: CacheLimits(maxBytes: 4096))
        let file = try #require(try engine.file("a.bin").value)
        #expect(try engine.read(file, 300_000..<300_010).value == Self.slice(300_000..<300_010))
        let error = try #require(try engine.read(file, 140_000..<140_010).error)
        #expect(error.description.contains("piece 1 (bytes 131072-262143) does not match its sha-256"), "\(error)")
        #expect(file.snapshot.cachedBytes == 0, "the cache has no room: nothing was stored")
        #expect(engine.gets("a.bin").map(\.range) == ["bytes=262144-393215", "bytes=131072-262143"], "whole pieces")
        #expect(engine.catalog.budget.status.readThroughBytes == 131_072)
    }

    @Test func aReadOfAFewBytesFetchesTheirWholePiece() throws {
        let engine = try Self.engine(serving: Self.data)
        let file = try #require(try engine.file("a.bin").value)
        #expect(try engine.read(file, 300_000..<300_010).value == Self.slice(300_000..<300_010))
        let gets = engine.gets("a.bin")
        // Piece 2, whole, in requests of the smallest size (one block each) while the host's
        // speed is unknown; they go out at once, so the server may see either first.
        #expect(gets.compactMap(\.range).sorted() == ["bytes=262144-327679", "bytes=327680-393215"], "piece 2, whole: \(gets)")
        #expect(file.snapshot.cachedBytes == 131_072)
    }
}
