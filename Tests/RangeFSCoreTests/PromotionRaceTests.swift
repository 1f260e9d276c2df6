import Foundation
import Testing
@testable import RangeFSCore

/// The shell's order of write, mark, commit and promote, met by readers that open a file again
/// the moment they close it, as Go's `fstest` does (`io.ReadAll`, close, `fs.ReadFile`). The
/// last commit of a file renames its data file to its final name while such a reader opens it;
/// every byte it is answered with must be the file's, never a hole of a data file made anew.
@Suite("Fetch engine: reads that meet a promotion")
struct PromotionRaceTests {
    static let fileCount = 96
    static let fileSize = 4 * Int(FetchEngineHarness.blockSize) + 1

    @Test func handlesOpenedAsTheFileIsPromotedReadItsBytesNotZeros() throws {
        let names = (0..<Self.fileCount).map { "f\($0).bin" }
        let contents = Dictionary(uniqueKeysWithValues: names.enumerated().map { index, name in
            (name, FetchEngineHarness.bytes(Self.fileSize, seed: UInt8(truncatingIfNeeded: index + 1)))
        })
        let engine = try FetchEngineHarness(files: contents)
        var reopenedReads = 0
        for name in names {
            let bytes = try #require(contents[name])
            let first = try #require(try engine.open(name).value)
            // The whole file in one read: its last block arrives, and its promotion is queued at once.
            let whole = try EngineChangeTests.read(first, 0..<UInt64(bytes.count))
            first.close()
            #expect(whole.value == bytes, "\(name): the first read")
            let file = first.file
            // Open, read a little, close, again and again until the promotion has been committed.
            let deadline = ContinuousClock.now + .seconds(10)
            var offset = 0
            repeat {
                let handle = try #require(try engine.open(name).value)
                let length = min(4096, bytes.count - offset)
                let got = try EngineChangeTests.read(handle, UInt64(offset)..<UInt64(offset + length))
                handle.close()
                let expected = Array(bytes[offset..<(offset + length)])
                guard got.value == expected else {
                    let zeros = got.value?.allSatisfy { $0 == 0 } ?? false
                    Issue.record("\(name): \(length) bytes at \(offset) read right after a close were \(zeros ? "zeros" : "wrong: \(String(describing: got))")")
                    return
                }
                reopenedReads += 1
                offset = (offset + 65_537) % bytes.count
            } while !file.isComplete && ContinuousClock.now < deadline
            #expect(file.isComplete, "\(name) was never promoted")
            let last = try #require(try engine.open(name).value)
            #expect(try EngineChangeTests.read(last, 0..<UInt64(bytes.count)).value == bytes, "\(name): after its promotion")
            last.close()
        }
        #expect(reopenedReads >= Self.fileCount, "reads after a close: \(reopenedReads)")
    }
}
