import FaultServer
import Foundation
import Testing
@testable import RangeFSCore

/// A reader's requests are sized by how fast a server's bytes come, not by how long it takes
/// to answer: counted in, a server that answers late would look slow, get ever smaller
/// requests and pay its answer time again for each.
@Suite("Fetch engine: request sizes")
struct EngineRequestSizeTests {
    @Test func aServerThatAnswersLateButSendsFastGetsLargeRequests() throws {
        let data = FetchEngineHarness.bytes(8 << 20, seed: 5)
        let engine = try FetchEngineHarness(files: ["late.bin": data])
        defer { engine.close() }
        engine.server.configure("late.bin", PathOptions(latency: .milliseconds(300)))
        let file = try #require(try engine.file("late.bin").value)
        // The speed is unknown: the first read's request is of the smallest size.
        #expect(try engine.read(file, 0..<65_536).value == Array(data[0..<65_536]))
        let first = engine.gets("late.bin").count
        // The read is answered as its bytes arrive; its request tells the host's speed when it ends.
        let host = engine.server.url("late.bin").serverKey
        #expect(FilesystemHarness.eventually(timeout: 10) {
            engine.catalog.environment.hostRates.bytesPerSecond(host: host, at: .now) != nil
        })
        // Its bytes came at once after 300 ms: a fast server. A sequential read with 1 MiB of
        // read-ahead goes out as one request, not as 64 KiB ones (at 64 KiB per 300 ms it
        // would be seventeen).
        let start: UInt64 = 4 << 20
        #expect(try engine.read(file, start..<start + 4096, readAhead: 1 << 20).value == Array(data[Int(start)..<Int(start) + 4096]))
        let gets = engine.gets("late.bin").dropFirst(first)
        #expect(gets.count == 1, "\(gets)")
        #expect(gets.first?.range == "bytes=4194304-5308415", "\(gets)")
        let speed = try #require(engine.catalog.environment.hostRates.bytesPerSecond(host: host, at: .now))
        #expect(speed > 10_000_000, "the host's speed: \(speed) B/s")
    }
}
