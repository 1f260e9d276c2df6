import FaultServer
import Foundation
import Testing
@testable import RangeFSCore

/// Files whose listing states their size exactly (a web directory, a bucket) are read without
/// a size probe: the first range request goes out at once, and its reply names the version
/// the later requests hold to. Driven through the catalog against a `FaultServer`.
@Suite("Fetch engine: files of a listing's stated size")
struct EngineStatedSizeTests {
    static let data = FetchEngineHarness.bytes(256 * 1024)
    static let newData = FetchEngineHarness.bytes(256 * 1024, seed: 99)

    static func listed(_ files: [String: [UInt8]], sizes: [String: UInt64]? = nil) throws -> FetchEngineHarness {
        try FetchEngineHarness(files: files, sizes: sizes ?? files.mapValues { UInt64($0.count) }, statedSizesAreExact: true)
    }

    @Test func aListedFileIsReadWithoutAProbeAndHoldsToTheVersionItsFirstReplyNamed() throws {
        let engine = try Self.listed(["a.bin": Self.data])
        let file = try #require(try engine.file("a.bin").value)
        #expect(engine.server.requests.isEmpty, "the file is made from the stated size, nothing asked")
        #expect(try engine.read(file, 0..<4096).value == Array(Self.data[0..<4096]))
        let tag = try #require(engine.server.etag(of: "a.bin"))
        #expect(engine.server.requests(for: "a.bin").map(\.method) == ["GET"], "no HEAD before the first range")
        #expect(engine.gets("a.bin").first?.ifRange == nil, "the first request has no version to name")

        #expect(try engine.read(file, 131_072..<135_168).value == Array(Self.data[131_072..<135_168]))
        #expect(engine.gets("a.bin").last?.ifRange == tag, "later ranges hold to the first reply's version")
        engine.drainCommits()
        #expect(engine.record("a.bin")?.etag == tag, "the record remembers it for the next mount")
        #expect(engine.record("a.bin")?.size == UInt64(Self.data.count))
    }

    @Test func aListedFileChangedAfterItsFirstReplyIsNotMixedWithTheNewVersion() throws {
        let engine = try Self.listed(["a.bin": Self.data])
        let file = try #require(try engine.file("a.bin").value)
        #expect(try engine.read(file, 0..<4096).value == Array(Self.data[0..<4096]))
        engine.server.inject(.changeFileBefore(bytes: Self.newData), for: "a.bin", method: "GET")
        let error = try #require(try engine.read(file, 131_072..<135_168).error)
        #expect(error.description.contains("remote file changed"), "\(error)")

        let renewed = try #require(try engine.file("a.bin").value)
        #expect(renewed !== file)
        #expect(try engine.read(renewed, 0..<262_144).value == Self.newData)
    }

    @Test func aListedSizeTheServerRefutesFailsThatReadOnceAndIsProbedNextTime() throws {
        let stated = UInt64(Self.data.count) + 1000
        let engine = try Self.listed(["a.bin": Self.data], sizes: ["a.bin": stated])
        let file = try #require(try engine.file("a.bin").value)
        #expect(file.layout.fileSize == stated)
        let error = try #require(try engine.read(file, 0..<4096).error)
        #expect(error.description.contains("remote file changed"), "\(error)")
        #expect(engine.catalog.statedAttributes(ofEntry: engine.entry("a.bin")) == nil,
                "the listing's size is not shown again once the server refuted it")

        let probed = try #require(try engine.file("a.bin").value)
        #expect(probed.layout.fileSize == UInt64(Self.data.count), "its size asked of the server")
        #expect(engine.server.requests(for: "a.bin").contains { $0.method == "HEAD" })
        #expect(try engine.read(probed, 0..<262_144).value == Self.data)
    }

    @Test func aRemountReadsTheListedFileWithTheVersionItLearned() throws {
        let first = try Self.listed(["a.bin": Self.data])
        let before = try #require(try first.file("a.bin").value)
        #expect(try first.read(before, 0..<65_536).value == Array(Self.data[0..<65_536]))
        #expect(FilesystemHarness.eventually(timeout: 5) { first.record("a.bin")?.state == .partial })
        let tag = try #require(first.server.etag(of: "a.bin"))
        let engine = try first.remount()
        engine.server.resetLog()

        let file = try #require(try engine.file("a.bin").value)
        #expect(try engine.read(file, 0..<65_536).value == Array(Self.data[0..<65_536]), "the cached block, unasked")
        #expect(engine.server.requests.isEmpty)
        #expect(try engine.read(file, 131_072..<135_168).value == Array(Self.data[131_072..<135_168]))
        #expect(engine.gets("a.bin").map(\.ifRange) == [tag], "\(engine.gets("a.bin"))")
    }

    @Test func aManifestsStatedSizeIsStillAskedOfTheServer() throws {
        let engine = try FetchEngineHarness(files: ["a.bin": Self.data], sizes: ["a.bin": UInt64(Self.data.count)])
        let file = try #require(try engine.file("a.bin").value)
        #expect(engine.server.requests(for: "a.bin").map(\.method) == ["HEAD"], "a manifest's size may be stale")
        #expect(try engine.read(file, 0..<4096).value == Array(Self.data[0..<4096]))
    }
}
