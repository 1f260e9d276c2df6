import FaultServer
import Foundation
import Testing
@testable import RangeFSCore

/// Files that change on the server, and files behind redirects to mirrors, driven through the
/// catalog and a cached file without a mount. A file is never assembled from two versions.
@Suite("Fetch engine: changed files and mirrors")
struct EngineChangeTests {
    static let data = FetchEngineHarness.bytes(256 * 1024)
    static let newData = FetchEngineHarness.bytes(256 * 1024, seed: 99)

    static func slice(_ bytes: [UInt8], _ range: Range<Int>) -> [UInt8] { Array(bytes[range]) }

    @Test func aFileChangedBetweenRequestsIsInvalidatedAndTheNextLookUpGetsTheNewVersion() throws {
        let engine = try FetchEngineHarness(files: ["a.bin": Self.data])
        let file = try #require(try engine.file("a.bin").value)
        #expect(try engine.read(file, 0..<4096).value == Self.slice(Self.data, 0..<4096))
        let oldTag = try #require(engine.server.etag(of: "a.bin"))
        engine.server.inject(.changeFileBefore(bytes: Self.newData), for: "a.bin", method: "GET")
        let error = try #require(try engine.read(file, 131_072..<135_168).error)
        #expect(error.description.contains("remote file changed"), "\(error)")
        #expect(engine.gets("a.bin").map(\.ifRange) == [oldTag, oldTag], "every range carries the stored validator")
        #expect(try engine.read(file, 0..<4096).error != nil, "the old version serves nothing more, not even cached bytes")

        let renewed = try #require(try engine.file("a.bin").value)
        #expect(renewed !== file)
        #expect(try engine.read(renewed, 0..<262_144).value == Self.newData)
        #expect(engine.gets("a.bin").last?.ifRange == engine.server.etag(of: "a.bin"))
    }

    @Test func aChangeSeenAfterARemountWithAWarmCacheFailsThenGivesTheNewVersion() throws {
        let first = try FetchEngineHarness(files: ["a.bin": Self.data])
        let before = try #require(try first.file("a.bin").value)
        #expect(try first.read(before, 0..<65_536).value == Self.slice(Self.data, 0..<65_536))
        #expect(FilesystemHarness.eventually(timeout: 5) { first.record("a.bin")?.state == .partial })
        let engine = try first.remount()
        engine.server.publish("a.bin", bytes: Self.newData)
        engine.server.resetLog()

        let file = try #require(try engine.file("a.bin").value)
        #expect(engine.server.requests.isEmpty, "the size comes from the cache database")
        #expect(try engine.read(file, 0..<65_536).value == Self.slice(Self.data, 0..<65_536), "the cached block, unasked")
        #expect(engine.server.requests.isEmpty)
        let error = try #require(try engine.read(file, 131_072..<135_168).error)
        #expect(error.description.contains("remote file changed"), "\(error)")

        let renewed = try #require(try engine.file("a.bin").value)
        #expect(try engine.read(renewed, 0..<262_144).value == Self.newData, "the stale record is not reused")
        #expect(engine.gets("a.bin").contains { $0.rangeStart == 0 })
    }

    @Test(arguments: [true, false])
    func aWeakETagIsNeverSentInIfRangeAndAChangeIsStillDetected(etag: Bool) throws {
        let engine = try FetchEngineHarness(files: [:], entries: ["w.bin"])
        // A date an hour before the reply's is strong, but beside a weak ETag it is not sent either.
        engine.server.publish("w.bin", bytes: Self.data, lastModified: Date().addingTimeInterval(-3600), weakETag: true)
        engine.server.configure("w.bin", PathOptions(sendETag: etag))
        let file = try #require(try engine.file("w.bin").value)
        #expect(try engine.read(file, 0..<4096).value == Self.slice(Self.data, 0..<4096))
        let first = try #require(engine.gets("w.bin").first)
        #expect(first.ifRange == (etag ? nil : engine.server.lastModified(of: "w.bin")), "nothing beside W/…, a strong date alone: \(first)")

        engine.server.inject(.changeFileBefore(bytes: Self.newData), for: "w.bin", method: "GET")
        let error = try #require(try engine.read(file, 131_072..<135_168).error)
        #expect(error.description.contains("remote file changed"), "\(error)")
        #expect(engine.gets("w.bin").allSatisfy { !($0.ifRange ?? "").hasPrefix("W/") })
    }

    @Test func aHandleGivenNoByteReadsTheNewVersionAndOneGivenBytesFails() throws {
        // Large enough that the first read's request (and read-ahead) leaves the later bytes to fetch.
        let old = FetchEngineHarness.bytes(8 << 20)
        let new = FetchEngineHarness.bytes(8 << 20, seed: 99)
        let engine = try FetchEngineHarness(files: ["a.bin": old])
        let reader = try #require(try engine.open("a.bin").value)
        let unread = try #require(try engine.open("a.bin").value)
        defer { reader.close(); unread.close() }
        #expect(try Self.read(reader, 0..<4096).value == Self.slice(old, 0..<4096))

        engine.server.inject(.changeFileBefore(bytes: new), for: "a.bin", method: "GET")
        let later: Range<UInt64> = 6_000_000..<6_004_096
        let error = try #require(try Self.read(reader, later).error)
        #expect(error.description.contains("remote file changed"), "\(error)")
        #expect(try Self.read(unread, later).value == Self.slice(new, 6_000_000..<6_004_096),
                "a handle that had no byte of the old version reads the new one")
        #expect(unread.file !== reader.file)
        #expect(try Self.read(reader, 0..<4096).error != nil, "a handle that had bytes stays failed")
    }

    /// The kernel holds the length it was told at the open and would fill a short read up to it
    /// with zeros: a handle does not follow its file to a shorter version.
    @Test func aHandleGivenNoByteFailsWhenItsFileShrank() throws {
        let old = FetchEngineHarness.bytes(1 << 20)
        let new = FetchEngineHarness.bytes(165, seed: 7)
        let engine = try FetchEngineHarness(files: ["s.bin": old])
        let unread = try #require(try engine.open("s.bin").value)
        defer { unread.close() }
        engine.server.inject(.changeFileBefore(bytes: new), for: "s.bin", method: "GET")
        let error = try #require(try Self.read(unread, 0..<65_536).error, "no read may answer past the new end")
        #expect(error.description.contains("remote file changed"), "\(error)")
        let fresh = try #require(try engine.open("s.bin").value)
        defer { fresh.close() }
        #expect(try Self.read(fresh, 0..<65_536).value == new, "a new open reads the new version, to its end")
    }

    /// The bytes a handle's read answers with.
    static func read(_ handle: OpenFile, _ bytes: Range<UInt64>) throws -> Result<[UInt8], FetchError> {
        let ready = try FilesystemHarness.wait(timeout: 15) {
            handle.read(offset: bytes.lowerBound, length: UInt64(bytes.count), completion: $0)
        }
        return ready.flatMap { ready in
            Result { try ready.file.read(count: ready.range.count, at: ready.range.lowerBound) }
                .mapError { FetchError(handle.file.url, .cache(.from($0))) }
        }
    }

    /// `url.bin` redirects to `m1.bin` and `m2.bin` in turn: the same bytes, each with its own ETag.
    static func mirrored(_ engine: FetchEngineHarness) {
        engine.server.publish("m1.bin", bytes: Self.data)
        engine.server.publish("m2.bin", bytes: Self.data)
        engine.server.configure("url.bin", PathOptions(redirectsInTurn: [engine.server.url("m1.bin").absoluteString,
                                                                         engine.server.url("m2.bin").absoluteString]))
    }

    /// Range requests that reached a mirror (not the redirecting URL).
    static func mirrorGets(_ engine: FetchEngineHarness) -> [RecordedRequest] {
        engine.server.requests.filter { $0.method == "GET" && $0.path != "/url.bin" && $0.status == 206 }
    }

    @Test func mirrorsWithTheirOwnETagsAreNotTakenForAChange() throws {
        let engine = try FetchEngineHarness(files: [:], entries: ["url.bin"])
        Self.mirrored(engine)
        let file = try #require(try engine.file("url.bin").value)
        for start in stride(from: 0, to: Self.data.count, by: 65_536) {
            #expect(try engine.read(file, UInt64(start)..<UInt64(start + 65_536)).value == Self.slice(Self.data, start..<start + 65_536))
        }
        #expect(engine.catalog.knownFile(forEntry: engine.entry("url.bin")) === file, "never invalidated")
        let gets = Self.mirrorGets(engine)
        #expect(gets.count == 4, "\(engine.server.requests)")
        for get in gets {
            #expect(get.ifRange == engine.server.etag(of: get.path), "each mirror is asked with its own validator: \(get)")
        }
    }

    @Test func whenTheMirrorInUseGoesAwayReadsGoOnAtAnotherWithoutFetchingCachedBytesAgain() throws {
        let engine = try FetchEngineHarness(files: [:], entries: ["url.bin"])
        Self.mirrored(engine)
        let file = try #require(try engine.file("url.bin").value)
        #expect(try engine.read(file, 0..<65_536).value == Self.slice(Self.data, 0..<65_536))
        let inUse = try #require(Self.mirrorGets(engine).first?.path)
        engine.server.remove(inUse)
        engine.server.resetLog()

        #expect(try engine.read(file, 131_072..<196_608).value == Self.slice(Self.data, 131_072..<196_608))
        #expect(try engine.read(file, 0..<65_536).value == Self.slice(Self.data, 0..<65_536))
        #expect(engine.catalog.knownFile(forEntry: engine.entry("url.bin")) === file, "a move is not a change")
        let served = Self.mirrorGets(engine)
        #expect(!served.isEmpty && served.allSatisfy { $0.path != inUse }, "\(engine.server.requests)")
        #expect(engine.server.requests.allSatisfy { ($0.rangeStart ?? 65_536) >= 65_536 }, "cached bytes asked again: \(engine.server.requests)")
    }

    @Test func aNewSizeBehindTheRedirectIsAChange() throws {
        let engine = try FetchEngineHarness(files: [:], entries: ["url.bin"])
        Self.mirrored(engine)
        let file = try #require(try engine.file("url.bin").value)
        #expect(try engine.read(file, 0..<4096).value == Self.slice(Self.data, 0..<4096))
        let longer = FetchEngineHarness.bytes(300_000, seed: 42)
        engine.server.publish("m1.bin", bytes: longer)
        engine.server.publish("m2.bin", bytes: longer)
        #expect(try engine.read(file, 131_072..<135_168).error != nil)
        let renewed = try #require(try engine.file("url.bin").value)
        #expect(renewed.layout.fileSize == 300_000)
        #expect(try engine.read(renewed, 0..<300_000).value == longer)
    }
}
