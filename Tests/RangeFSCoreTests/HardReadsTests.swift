import FaultServer
import Foundation
import Synchronization
import Testing
@testable import RangeFSCore

/// When programs' reads count as hard (`ProgramReads`): a window's worth of bytes at the
/// configured rate, for the hold after the last such window.
@Suite("Programs reading hard")
struct ProgramReadsTests {
    @Test func readsBelowAWindowsWorthAreNotHard() {
        let reads = ProgramReads(hardBytesPerSecond: 1_000_000, hold: .seconds(5))
        let start = ContinuousClock.now
        reads.read(50_000, at: start)
        reads.read(40_000, at: start + .milliseconds(10))
        #expect(reads.hardTimeLeft == nil)
        reads.read(20_000, at: start + .milliseconds(20))
        #expect(reads.hardTimeLeft != nil, "110,000 bytes within 100 ms of a 1 MB/s threshold")
    }

    @Test func aNewWindowStartsFromNothing() {
        let reads = ProgramReads(hardBytesPerSecond: 1_000_000, hold: .seconds(5))
        let start = ContinuousClock.now
        reads.read(90_000, at: start)
        reads.read(90_000, at: start + .milliseconds(150))
        #expect(reads.hardTimeLeft == nil, "90,000 bytes in each of two windows")
    }

    @Test func hardReadingEndsItsHoldAfterTheLastHardWindow() {
        let reads = ProgramReads(hardBytesPerSecond: 1_000_000, hold: .milliseconds(50))
        reads.read(200_000)
        #expect(reads.hardTimeLeft != nil)
        #expect(FilesystemHarness.eventually(timeout: 5) { reads.hardTimeLeft == nil })
    }
}

/// Rule 7 of the scheduling note: while a program reads hard, the prefetcher starts no chunk
/// of a file nobody has open from a server bound by this machine, and goes on once the reading
/// eases; an open file's completion and a distant server's work go on throughout.
@Suite("Fetch engine: background work beside programs reading hard")
struct EngineHardReadsTests {
    static let size = 256 * 1024

    /// `read.bin` read whole once (its server's speed is measured from that reader's request),
    /// then read again and again from the cache until the test ends; `rest.bin` left to the
    /// prefetcher (policy `all`). A server counts as bound by this machine at
    /// `machineBoundHostBytesPerSecond`; 1 MB/s of reads is hard.
    static func engineBesideAHardReader(machineBoundHostBytesPerSecond: Double) throws
        -> (engine: FetchEngineHarness, reader: HardReader, rest: [UInt8]) {
        let read = FetchEngineHarness.bytes(size, seed: 20)
        let rest = FetchEngineHarness.bytes(size, seed: 21)
        var policy = FetchEngineHarness.quickPolicy
        policy.hardReadBytesPerSecond = 1_000_000
        policy.hardReadHold = .milliseconds(300)
        policy.machineBoundHostBytesPerSecond = machineBoundHostBytesPerSecond
        let engine = try FetchEngineHarness(files: ["read.bin": read, "rest.bin": rest], policy: policy,
                                            prefetch: EnginePrefetchTests.configuration(.all, downloads: 1))
        let handle = try #require(try engine.open("read.bin").value)
        #expect(try HardReader.read(handle, 0..<UInt64(size)) == read)
        let reader = HardReader(handle, size: UInt64(size))
        #expect(FilesystemHarness.eventually(timeout: 10) { engine.catalog.environment.programReads.hardTimeLeft != nil },
                "the program's reads count as hard")
        return (engine, reader, rest)
    }

    @Test func aFileNobodyHasOpenWaitsOnAServerAsFastAsTheMachineUntilTheReadingEases() throws {
        let (engine, reader, rest) = try Self.engineBesideAHardReader(machineBoundHostBytesPerSecond: 1)
        defer { reader.stop() }
        engine.prefetcher.start()
        let asked = FilesystemHarness.eventually(timeout: 1) { !engine.gets("rest.bin").isEmpty }
        #expect(!asked, "a chunk of rest.bin was asked for while the program read hard: \(engine.gets("rest.bin"))")
        #expect(reader.reads > 0 && engine.catalog.environment.programReads.hardTimeLeft != nil, "the program was still reading hard")

        reader.stop()
        let restFile = try #require(try engine.file("rest.bin").value)
        #expect(FilesystemHarness.eventually(timeout: 10) { restFile.isComplete }, "the prefetcher goes on once the reading eases")
        #expect(try engine.read(restFile, 0..<UInt64(Self.size)).value == rest)
    }

    @Test func aFileNobodyHasOpenIsCompletedFromADistantServerWhileTheProgramReadsHard() throws {
        let (engine, reader, rest) = try Self.engineBesideAHardReader(machineBoundHostBytesPerSecond: .greatestFiniteMagnitude)
        defer { reader.stop() }
        engine.prefetcher.start()
        let restFile = try #require(try engine.file("rest.bin").value)
        #expect(FilesystemHarness.eventually(timeout: 10) { restFile.isComplete })
        #expect(engine.catalog.environment.programReads.hardTimeLeft != nil, "the program was still reading hard")
        #expect(try engine.read(restFile, 0..<UInt64(Self.size)).value == rest)
    }

    @Test func aFileSomeoneHasOpenIsCompletedWhileAnotherProgramReadsHard() throws {
        let (engine, reader, rest) = try Self.engineBesideAHardReader(machineBoundHostBytesPerSecond: 1)
        defer { reader.stop() }
        let opened = try #require(try engine.open("rest.bin").value)
        defer { opened.close() }
        engine.prefetcher.start()
        #expect(FilesystemHarness.eventually(timeout: 10) { opened.file.isComplete })
        #expect(engine.catalog.environment.programReads.hardTimeLeft != nil, "the program was still reading hard")
        #expect(try engine.read(opened.file, 0..<UInt64(Self.size)).value == rest)
    }
}

/// A program reading one open file's first `size` bytes from the cache in 64 KiB reads, over
/// and over on a thread of its own, until stopped (at most a minute); then it closes the file.
final class HardReader: Sendable {
    private let stopped = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    private let count = Atomic<Int>(0)

    var reads: Int { count.load(ordering: .relaxed) }

    init(_ handle: OpenFile, size: UInt64) {
        Thread.detachNewThread { [self] in
            let deadline = Date().addingTimeInterval(60)
            var offset: UInt64 = 0
            while !stopped.load(ordering: .relaxed), Date() < deadline {
                let end = min(offset + 65_536, size)
                guard (try? Self.read(handle, offset..<end)) != nil else { break }
                count.add(1, ordering: .relaxed)
                offset = end == size ? 0 : end
            }
            handle.close()
            finished.signal()
        }
    }

    /// Stops reading, waits for the last read and closes the file.
    func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        _ = finished.wait(timeout: .now() + 10)
    }

    /// The bytes a read through `handle` answers with.
    static func read(_ handle: OpenFile, _ bytes: Range<UInt64>) throws -> [UInt8] {
        let ready = try FilesystemHarness.wait(timeout: 10) { handle.read(offset: bytes.lowerBound, length: UInt64(bytes.count), completion: $0) }
        let answer = try ready.get()
        return try answer.file.read(count: answer.range.count, at: answer.range.lowerBound)
    }
}
