import FaultServer
import Foundation
import Synchronization
import Testing
@testable import RangeFSCore

/// The server faults of docs/reliability.md, driven through the catalog and a cached file
/// without a mount: what a read gets, what the server was asked, and what the file's state says.
@Suite("Fetch engine: server faults")
struct EngineServerFaultTests {
    /// Four blocks of 64 KiB.
    static let data = FetchEngineHarness.bytes(256 * 1024)
    static let whole: Range<UInt64> = 0..<UInt64(data.count)

    static func slice(_ range: Range<UInt64>) -> [UInt8] {
        Array(data[Int(range.lowerBound)..<Int(range.upperBound)])
    }

    @Test func aConnectionDroppedMidBodyIsRetriedFromWhereTheBodyStopped() throws {
        let engine = try FetchEngineHarness(files: ["a.bin": Self.data])
        let file = try #require(try engine.file("a.bin").value)
        engine.server.inject(.dropConnection(afterBodyBytes: 100_000), for: "a.bin", method: "GET")
        #expect(try engine.read(file, Self.whole).value == Self.data)
        let gets = engine.gets("a.bin")
        try #require(gets.count == 2, "\(gets)")
        #expect(gets[0].rangeStart == 0 && gets[0].bodyBytesSent == 100_000)
        #expect(gets[1].rangeStart == 100_000, "only the remainder is asked for again: \(gets[1])")
        #expect(file.snapshot.cachedBytes == UInt64(Self.data.count))
    }

    @Test func stallsWithNoBytesBeforeAndAfterTheHeadersAreDetectedAndRetried() throws {
        let engine = try FetchEngineHarness(files: ["a.bin": Self.data])
        let file = try #require(try engine.file("a.bin").value)
        let started = Date()
        engine.server.inject(.stall(afterBodyBytes: 0, for: .seconds(8)), for: "a.bin", method: "GET")
        #expect(try engine.read(file, 0..<65_536).value == Self.slice(0..<65_536))
        engine.server.inject(.stallBeforeHeaders(for: .seconds(8)), for: "a.bin", method: "GET")
        #expect(try engine.read(file, 131_072..<196_608).value == Self.slice(131_072..<196_608))
        // The stalls last 8 s each: both reads came back long before either ended.
        let log = engine.gets("a.bin").map { "\($0) at \($0.receivedAt.timeIntervalSince(started))" }
        #expect(Date().timeIntervalSince(started) < 6, "\(log)")
        #expect(engine.gets("a.bin").count == 4, "each stalled request retried once: \(log)")
    }

    @Test func aShortBodyAndExtraBytesAreRetriedAndNeverMisplaced() throws {
        let engine = try FetchEngineHarness(files: ["a.bin": Self.data])
        let file = try #require(try engine.file("a.bin").value)
        engine.server.inject(.shortBody(missingBytes: 1000), for: "a.bin", method: "GET")
        #expect(try engine.read(file, 0..<65_536).value == Self.slice(0..<65_536))
        engine.server.inject(.extraBytes(5000), for: "a.bin", method: "GET")
        #expect(try engine.read(file, 131_072..<196_608).value == Self.slice(131_072..<196_608))
        // The block after the extra bytes was never asked for, and is fetched (not taken from them).
        #expect(try engine.read(file, 196_608..<262_144).value == Self.slice(196_608..<262_144))
        let gets = engine.gets("a.bin")
        #expect(gets.count >= 4 && gets.last?.rangeStart == 196_608, "\(gets)")
        #expect(gets[1].rangeStart == UInt64(gets[0].bodyBytesSent), "the short body resumed where it stopped: \(gets)")
    }

    @Test func aRefusedHeadFallsBackToAOneByteGetAndMalformedHeadersFailCleanly() throws {
        let engine = try FetchEngineHarness(files: ["a.bin": Self.data, "b.bin": Self.data])
        engine.server.configure("a.bin", PathOptions(headAllowed: false))
        let file = try #require(try engine.file("a.bin").value)
        #expect(file.layout.fileSize == UInt64(Self.data.count))
        #expect(engine.server.requests(for: "a.bin").map(\.range) == [nil, "bytes=0-0"], "\(engine.server.requests)")

        let other = try #require(try engine.file("b.bin").value)
        engine.server.inject(.malformedHeaders, times: 100, for: "b.bin", method: "GET")
        #expect(try engine.read(other, 0..<4096).error != nil)
        #expect(other.snapshot.cachedBytes == 0)
        #expect(try engine.read(file, 0..<4096).value == Self.slice(0..<4096), "other files are still served")
    }

    @Test func a503WithRetryAfterIsHonouredThenSucceeds() throws {
        let engine = try FetchEngineHarness(files: ["a.bin": Self.data])
        let file = try #require(try engine.file("a.bin").value)
        engine.server.inject(.status(503, retryAfter: "1"), for: "a.bin", method: "GET")
        #expect(try engine.read(file, 0..<4096).value == Self.slice(0..<4096))
        let gets = engine.gets("a.bin")
        try #require(gets.count == 2, "\(gets)")
        let gap = gets[1].receivedAt.timeIntervalSince(gets[0].receivedAt)
        #expect(gap >= 0.95, "the retry came \(gap) s after a Retry-After: 1")
    }

    @Test func a429AndA500AreRetriedWithBackoffThenSucceed() throws {
        let engine = try FetchEngineHarness(files: ["a.bin": Self.data])
        let file = try #require(try engine.file("a.bin").value)
        engine.server.inject(.status(429), for: "a.bin", method: "GET")
        engine.server.inject(.status(500), for: "a.bin", method: "GET")
        #expect(try engine.read(file, 0..<65_536).value == Self.slice(0..<65_536))
        #expect(engine.gets("a.bin").map(\.status) == [429, 500, 206])
        #expect(FilesystemHarness.eventually(timeout: 5) { file.snapshot.state == .partial }, "\(file.snapshot)")
        #expect(file.snapshot.lastFailure == nil)
    }

    @Test func aRetryAfterLongerThanTheLimitEndsTheAttempts() throws {
        var policy = FetchEngineHarness.quickPolicy
        policy.maxRetryAfter = .milliseconds(500)
        let engine = try FetchEngineHarness(files: ["a.bin": Self.data], policy: policy)
        let file = try #require(try engine.file("a.bin").value)
        engine.server.inject(.status(503, retryAfter: "1"), times: 10, for: "a.bin", method: "GET")
        let error = try #require(try engine.read(file, 0..<4096).error)
        #expect(error.cause as? RemoteError == .status(503, retryAfter: .seconds(1)), "\(error)")
        #expect(engine.gets("a.bin").count == 1)
    }

    @Test func a500ForeverFailsWithinBoundsShowsFailedAndALaterReadSucceeds() throws {
        let engine = try FetchEngineHarness(files: ["a.bin": Self.data])
        let file = try #require(try engine.file("a.bin").value)
        engine.server.inject(.status(500), times: 100, for: "a.bin", method: "GET")
        let started = Date()
        let error = try #require(try engine.read(file, 0..<4096).error)
        // 4 attempts 10, 20 and 40 ms apart (jittered ×1.5 at most).
        #expect(Date().timeIntervalSince(started) < 2)
        #expect(error.cause as? RemoteError == .status(500), "\(error)")
        #expect(error.description.contains(engine.server.url("a.bin").absoluteString) && error.description.contains("500"))
        #expect(engine.gets("a.bin").count == engine.policy.maxAttempts)
        let status = engine.mount.fileStatus(ofEntry: engine.entry("a.bin"))
        #expect(status.state == .failed && status.failure?.contains("500") == true, "\(status)")

        engine.server.clearFaults()
        #expect(try engine.read(file, 0..<65_536).value == Self.slice(0..<65_536))
        #expect(FilesystemHarness.eventually(timeout: 5) { engine.mount.fileStatus(ofEntry: engine.entry("a.bin")).state == .partial })
    }

    @Test func aServerIgnoringRangeGetsOneStreamThatFillsTheCacheAndIsRemembered() throws {
        let other = FetchEngineHarness.bytes(100_000, seed: 3)
        let engine = try FetchEngineHarness(files: ["a.bin": Self.data, "b.bin": other])
        engine.server.configure("a.bin", PathOptions(rangesSupported: false))
        engine.server.configure("b.bin", PathOptions(rangesSupported: false))
        let file = try #require(try engine.file("a.bin").value)
        // Two readers at once, neither at the start.
        let results = try [131_072..<135_168, 200_000..<204_096].concurrentMap { range in
            (range, try FetchEngineHarness.read(file, range).value)
        }
        for (range, bytes) in results { #expect(bytes == Self.slice(range), "\(range)") }
        #expect(FilesystemHarness.eventually(timeout: 10) { file.isComplete })
        #expect(try engine.read(file, Self.whole).value == Self.data)
        let streams = engine.gets("a.bin").filter { $0.range == nil }
        #expect(streams.count == 1, "both readers were answered from one stream: \(engine.gets("a.bin"))")
        #expect(engine.gets("a.bin").allSatisfy { $0.status == 200 })
        // The 200 to If-Range proved nothing; the one to the plain range request did.
        #expect(engine.gets("a.bin").contains { $0.range != nil && $0.ifRange == nil }, "\(engine.gets("a.bin"))")

        // One file does not condemn its server: another one asks for ranges.
        let second = try #require(try engine.file("b.bin").value)
        #expect(try engine.read(second, 50_000..<60_000).value == Array(other[50_000..<60_000]))
        #expect(engine.gets("b.bin").first?.range != nil, "\(engine.gets("b.bin"))")
    }

    @Test func aWholeBodyAnswerToIfRangeIsAskedAgainWithoutItAndCondemnsNeitherTheFileNorItsServer() throws {
        let engine = try FetchEngineHarness(files: ["a.bin": Self.data, "b.bin": Self.data])
        let file = try #require(try engine.file("a.bin").value)
        engine.server.inject(.ignoreRange, for: "a.bin", method: "GET")
        #expect(try engine.read(file, 131_072..<135_168).value == Self.slice(131_072..<135_168))
        let gets = engine.gets("a.bin")
        try #require(gets.count >= 2, "\(gets)")
        #expect(gets[0].status == 200 && gets[0].ifRange == engine.server.etag(of: "a.bin"), "\(gets[0])")
        #expect(gets[1].status == 206 && gets[1].rangeStart == 131_072 && gets[1].ifRange == nil,
                "asked again for the same bytes without the condition: \(gets[1])")
        #expect(try engine.read(file, Self.whole).value == Self.data)
        #expect(engine.gets("a.bin").allSatisfy { $0.range != nil }, "the file went on with ranges: \(engine.gets("a.bin"))")

        let other = try #require(try engine.file("b.bin").value)
        #expect(try engine.read(other, 0..<4096).value == Self.slice(0..<4096))
        #expect(engine.gets("b.bin").first.map { $0.status == 206 && $0.ifRange != nil } == true, "\(engine.gets("b.bin"))")
        engine.drainCommits()
        #expect(try engine.store.setting(FileCatalog.rangeIgnoringSetting) == nil, "nothing held against the server")
    }

    @Test func aServerIsTakenToIgnoreRangesAfterThreeOfItsFilesAnsweredAPlainRangeWithTheWholeBodyUntilA206() throws {
        let names = ["a.bin", "b.bin", "c.bin", "d.bin", "ranged.bin", "later.bin"]
        let contents = names.indices.map { FetchEngineHarness.bytes(100_000, seed: UInt8($0 + 3)) }
        let engine = try FetchEngineHarness(files: Dictionary(uniqueKeysWithValues: zip(names, contents)))
        for name in names.prefix(4) { engine.server.configure(name, PathOptions(rangesSupported: false)) }
        // Made before the server is marked: it still asks for ranges afterwards.
        let ranged = try #require(try engine.file("ranged.bin").value)
        for (name, bytes) in zip(names.prefix(3), contents) {
            let file = try #require(try engine.file(name).value)
            #expect(try engine.read(file, 50_000..<60_000).value == Array(bytes[50_000..<60_000]))
            #expect(engine.gets(name).first?.range != nil, "\(name) was asked for a range first: \(engine.gets(name))")
        }
        let fourth = try #require(try engine.file("d.bin").value)
        #expect(try engine.read(fourth, 50_000..<60_000).value == Array(contents[3][50_000..<60_000]))
        #expect(engine.gets("d.bin").count == 1 && engine.gets("d.bin")[0].range == nil,
                "after three files the server's next file is one stream: \(engine.gets("d.bin"))")
        engine.drainCommits()
        let server = FileCatalog.server(of: engine.server.url("a.bin"))
        #expect(try engine.store.setting(FileCatalog.rangeIgnoringSetting)?.hasPrefix(server + "\t") == true,
                "the mark is stored with its end")

        // A partial reply from the server ends the mark: files made afterwards ask for ranges.
        // (A read is answered before its transfer ends, and the transfer's end tells the catalog.)
        #expect(try engine.read(ranged, 0..<4096).value == Array(contents[4][0..<4096]))
        #expect(FilesystemHarness.eventually(timeout: 5) {
            engine.drainCommits()
            return (try? engine.store.setting(FileCatalog.rangeIgnoringSetting)) == ""
        }, "the stored mark is gone")
        let later = try #require(try engine.file("later.bin").value)
        #expect(try engine.read(later, 0..<4096).value == Array(contents[5][0..<4096]))
        #expect(engine.gets("later.bin").first?.status == 206, "\(engine.gets("later.bin"))")
    }

    @Test func aStoredMarkHoldsUntilItsEndAcrossRemounts() throws {
        let engine = try FetchEngineHarness(files: ["a.bin": Self.data, "b.bin": Self.data])
        let server = FileCatalog.server(of: engine.server.url("a.bin"))
        let now = Int(Date().timeIntervalSince1970)
        try engine.store.setSetting(FileCatalog.rangeIgnoringSetting, to: "\(server)\t\(now + 3600)")
        let marked = try engine.remount()
        let file = try #require(try marked.file("a.bin").value)
        #expect(try marked.read(file, 4096..<8192).value == Self.slice(4096..<8192))
        #expect(marked.gets("a.bin").first?.range == nil, "a marked server's file starts as one stream: \(marked.gets("a.bin"))")

        try marked.store.setSetting(FileCatalog.rangeIgnoringSetting, to: "\(server)\t\(now - 1)")
        let expired = try marked.remount()
        let other = try #require(try expired.file("b.bin").value)
        #expect(try expired.read(other, 4096..<8192).value == Self.slice(4096..<8192))
        #expect(expired.gets("b.bin").first.map { $0.status == 206 && $0.rangeStart != nil } == true,
                "past its end the mark is forgotten: \(expired.gets("b.bin"))")
    }

    @Test func aWrongContentRangeDeliversNothingAndIsRetried() throws {
        let engine = try FetchEngineHarness(files: ["a.bin": Self.data, "liar.bin": Self.data])
        let file = try #require(try engine.file("a.bin").value)
        engine.server.inject(.wrongContentRange(offsetBy: 100), for: "a.bin", method: "GET")
        #expect(try engine.read(file, 65_536..<70_000).value == Self.slice(65_536..<70_000))
        #expect(engine.gets("a.bin").count == 2)

        let liar = try #require(try engine.file("liar.bin").value)
        engine.server.inject(.wrongContentRange(offsetBy: 100), times: 100, for: "liar.bin", method: "GET")
        let error = try #require(try engine.read(liar, 65_536..<70_000).error)
        if case .protocolViolation = error.cause as? RemoteError {} else { Issue.record("cause: \(error)") }
        #expect(liar.snapshot.cachedBytes == 0, "no byte of a lying reply is kept")
    }

    @Test func aWrongTotalSizeMeansTheFileChanged() throws {
        let engine = try FetchEngineHarness(files: ["a.bin": Self.data])
        let file = try #require(try engine.file("a.bin").value)
        #expect(try engine.read(file, 0..<4096).value == Self.slice(0..<4096))
        engine.server.inject(.wrongTotal(999_999), for: "a.bin", method: "GET")
        let error = try #require(try engine.read(file, 131_072..<135_168).error)
        #expect(error.description.contains("remote file changed"), "\(error)")
        #expect(engine.catalog.knownFile(forEntry: engine.entry("a.bin")) !== file, "this version is forgotten")
        #expect(try engine.read(file, 0..<4096).error != nil, "the forgotten version serves nothing more")
    }

    @Test func encodedRepliesAreRefusedBeforeAnyByteIsUsed() throws {
        let engine = try FetchEngineHarness(files: ["a.bin": Self.data, "gzip.bin": Self.data])
        let file = try #require(try engine.file("a.bin").value)
        engine.server.inject(.gzipContentEncoding, for: "a.bin", method: "GET")
        #expect(try engine.read(file, 0..<65_536).value == Self.slice(0..<65_536))
        engine.server.inject(.gzipTransferCoding, for: "a.bin", method: "GET")
        #expect(try engine.read(file, 65_536..<131_072).value == Self.slice(65_536..<131_072))
        engine.server.inject(.bodyLengthOff(by: 10), for: "a.bin", method: "GET")
        #expect(try engine.read(file, 131_072..<196_608).value == Self.slice(131_072..<196_608))
        engine.server.inject(.bodyLengthOff(by: -10), for: "a.bin", method: "GET")
        #expect(try engine.read(file, 196_608..<262_144).value == Self.slice(196_608..<262_144))
        #expect(engine.gets("a.bin").count == 8, "each fault retried once: \(engine.gets("a.bin"))")
        #expect(engine.server.requests.allSatisfy { $0.header("Accept-Encoding") == "identity" })

        let gzipped = try #require(try engine.file("gzip.bin").value)
        engine.server.inject(.gzipContentEncoding, times: 100, for: "gzip.bin", method: "GET")
        let error = try #require(try engine.read(gzipped, 0..<4096).error)
        if case .protocolViolation = error.cause as? RemoteError {} else { Issue.record("cause: \(error)") }
        #expect(gzipped.snapshot.cachedBytes == 0)
        #expect(engine.gets("gzip.bin").count == engine.policy.maxAttempts)
    }

    @Test func aRelativeRedirectIsFollowedALoopAndFtpFail() throws {
        let engine = try FetchEngineHarness(files: ["a.bin": Self.data, "loop.bin": Self.data, "ftp.bin": Self.data])
        engine.server.publish("copy/a.bin", bytes: Self.data, etag: engine.server.etag(of: "a.bin"),
                              lastModified: nil)
        let file = try #require(try engine.file("a.bin").value)
        engine.server.inject(.redirect(to: "copy/a.bin"), for: "a.bin", method: "GET")
        #expect(try engine.read(file, 0..<4096).value == Self.slice(0..<4096))
        #expect(engine.gets("copy/a.bin").count == 1)

        let loop = try #require(try engine.file("loop.bin").value)
        engine.server.inject(.redirect(to: "/loop.bin"), times: 100, for: "loop.bin", method: "GET")
        #expect(try engine.read(loop, 0..<4096).error != nil)
        #expect(loop.snapshot.cachedBytes == 0)

        let ftp = try #require(try engine.file("ftp.bin").value)
        engine.server.inject(.redirect(to: "ftp://127.0.0.1:\(engine.server.port)/ftp.bin"), times: 100, for: "ftp.bin", method: "GET")
        #expect(try engine.read(ftp, 0..<4096).error != nil)
        #expect(ftp.snapshot.cachedBytes == 0)
    }

    @Test(arguments: [404, 410])
    func aPartlyCachedFileThatIsGoneStillReadsItsCachedBlocks(status: Int) throws {
        let engine = try FetchEngineHarness(files: ["a.bin": Self.data])
        let file = try #require(try engine.file("a.bin").value)
        #expect(try engine.read(file, 0..<65_536).value == Self.slice(0..<65_536))
        engine.server.configure("a.bin", PathOptions(goneStatus: status))
        engine.server.remove("a.bin")
        let before = engine.gets("a.bin").count
        let error = try #require(try engine.read(file, 131_072..<135_168).error)
        #expect(error.cause as? RemoteError == .status(status), "\(error)")
        #expect(try engine.read(file, 1000..<5000).value == Self.slice(1000..<5000))
        let after = engine.gets("a.bin").dropFirst(before)
        #expect(after.allSatisfy { $0.rangeStart.map { $0 >= 65_536 } ?? true }, "no cached byte asked for again: \(Array(after))")
    }
}

extension Array {
    /// `transform` on every element at once, each on a thread of its own; results in order.
    func concurrentMap<T: Sendable>(_ transform: @escaping @Sendable (Element) throws -> T) throws -> [T] where Element: Sendable {
        let results = Mutex<[Int: Result<T, any Error>]>([:])
        let group = DispatchGroup()
        for index in indices {
            let element = self[index]
            DispatchQueue.global().async(group: group) {
                let result = Result { try transform(element) }
                results.withLock { $0[index] = result }
            }
        }
        group.wait()
        return try indices.map { index in try results.withLock { $0[index]! }.get() }
    }
}

/// A read no server answers fails at the read deadline (`ReadDeadlines`), and the file reads
/// again once the server does.
@Suite("Fetch engine: read deadlines")
struct EngineReadDeadlineTests {
    @Test func aReadTheServerNeverAnswersFailsAtTheDeadlineAndTheFileReadsAgainAfter() throws {
        let data = FetchEngineHarness.bytes(128 * 1024)
        var policy = FetchEngineHarness.quickPolicy
        policy.readDeadline = .milliseconds(400)
        let engine = try FetchEngineHarness(files: ["a.bin": data], policy: policy)
        let file = try #require(try engine.file("a.bin").value)
        let deadlines = engine.catalog.environment.readDeadlines
        // Longer than the deadline and than libcurl's stall timeout (1 s): only the deadline ends the wait.
        engine.server.inject(.stallBeforeHeaders(for: .seconds(20)), for: "a.bin", method: "GET")
        let started = ContinuousClock.now
        let stalled = try engine.read(file, 0..<4096, timeout: 10)
        let waited = ContinuousClock.now - started
        guard case .failure(let error) = stalled, case .timedOut(let after) = error.reason else {
            Issue.record("the stalled read should time out: \(stalled)")
            return
        }
        #expect(after == policy.readDeadline)
        #expect(waited >= policy.readDeadline, "failed after \(waited), before its deadline")
        #expect(FilesystemHarness.eventually(timeout: 10) { deadlines.watchedCount == 0 }, "nobody waits: no file is watched")
        // libcurl gives the stalled request up (its stall timeout) and it is asked again: the
        // next read gets the bytes.
        #expect(FilesystemHarness.eventually(timeout: 10) { engine.gets("a.bin").count >= 2 }, "\(engine.gets("a.bin"))")
        let again = try engine.read(file, 0..<4096, timeout: 20)
        #expect(again.value == Array(data[0..<4096]), "\(again.map(\.count))")
    }
}
