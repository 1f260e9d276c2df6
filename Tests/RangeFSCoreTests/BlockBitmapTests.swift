import Testing
@testable import RangeFSCore

/// A bitmap with exactly the given blocks present.
private func bitmap(_ blockCount: Int, present: [Int]) -> BlockBitmap {
    var bitmap = BlockBitmap(blockCount: blockCount)
    for block in present { bitmap.insert(block) }
    return bitmap
}

/// The missing runs computed one block at a time, to check the word-level version against.
private func slowMissingRuns(_ bitmap: BlockBitmap, in blocks: Range<Int>) -> [Range<Int>] {
    var runs: [Range<Int>] = []
    var start: Int?
    for block in blocks.clamped(to: 0..<bitmap.blockCount) {
        if bitmap.contains(block) {
            if let s = start { runs.append(s..<block); start = nil }
        } else if start == nil {
            start = block
        }
    }
    if let s = start { runs.append(s..<min(blocks.upperBound, bitmap.blockCount)) }
    return runs
}

@Test func insertAndContains() {
    var bitmap = BlockBitmap(blockCount: 130)
    #expect(bitmap.presentCount == 0)
    #expect(!bitmap.isComplete)
    for block in [0, 63, 64, 129] {
        #expect(!bitmap.contains(block))
        bitmap.insert(block)
        #expect(bitmap.contains(block))
    }
    bitmap.insert(63)  // idempotent
    #expect(bitmap.presentCount == 4)
    #expect(!bitmap.contains(1))
    #expect(!bitmap.contains(62))
    #expect(!bitmap.contains(65))
    #expect(!bitmap.contains(128))
}

@Test func insertRangesCountsOnlyNewBlocks() {
    var bitmap = BlockBitmap(blockCount: 200)
    bitmap.insert(10..<20)
    #expect(bitmap.presentCount == 10)
    bitmap.insert(15..<140)  // overlaps, crosses two word boundaries
    #expect(bitmap.presentCount == 130)
    bitmap.insert(50..<50)
    #expect(bitmap.presentCount == 130)
    #expect(!bitmap.contains(9))
    #expect((10..<140).allSatisfy(bitmap.contains))
    #expect(!bitmap.contains(140))
    bitmap.insert(0..<200)
    #expect(bitmap.presentCount == 200)
    #expect(bitmap.isComplete)
    bitmap.removeAll()
    #expect(bitmap.presentCount == 0)
    #expect(bitmap == BlockBitmap(blockCount: 200))
}

@Test func zeroBlocksIsComplete() {
    let bitmap = BlockBitmap(blockCount: 0)
    #expect(bitmap.isComplete)
    #expect(bitmap.serialized.isEmpty)
    #expect(bitmap.missingRuns(in: 0..<0).isEmpty)
    #expect(bitmap.nextMissingRun(from: 0) == nil)
    #expect(bitmap.firstMissing(in: 0..<10) == nil)
    #expect(BlockBitmap(blockCount: 0, serialized: []) == bitmap)
}

@Test func missingRunsWithNonePresent() {
    let bitmap = BlockBitmap(blockCount: 100)
    #expect(bitmap.missingRuns(in: 0..<100) == [0..<100])
    #expect(bitmap.missingRuns(in: 30..<70) == [30..<70])
    #expect(bitmap.firstMissing(in: 0..<100) == 0)
    #expect(bitmap.firstMissing(in: 99..<100) == 99)
    #expect(bitmap.nextMissingRun(from: 37) == 37..<100)
}

@Test func missingRunsWithAllPresent() {
    var bitmap = BlockBitmap(blockCount: 100)
    bitmap.insert(0..<100)
    #expect(bitmap.missingRuns(in: 0..<100).isEmpty)
    #expect(bitmap.firstMissing(in: 0..<100) == nil)
    #expect(bitmap.nextMissingRun(from: 0) == nil)
}

@Test func missingRunsAlternating() {
    let bitmap = bitmap(70, present: Array(stride(from: 0, to: 70, by: 2)))
    #expect(bitmap.missingRuns(in: 0..<70) == stride(from: 1, to: 70, by: 2).map { $0..<($0 + 1) })
    #expect(bitmap.firstMissing(in: 0..<70) == 1)
    #expect(bitmap.firstMissing(in: 64..<65) == nil)
    #expect(bitmap.nextMissingRun(from: 62) == 63..<64)
    #expect(bitmap.nextMissingRun(from: 64) == 65..<66)
}

@Test func missingRunsCrossWordBoundaries() {
    var bitmap = BlockBitmap(blockCount: 300)
    bitmap.insert(0..<10)
    bitmap.insert(200..<201)
    #expect(bitmap.missingRuns(in: 0..<300) == [10..<200, 201..<300])
    #expect(bitmap.missingRuns(in: 5..<250) == [10..<200, 201..<250])
    #expect(bitmap.missingRuns(in: 63..<129) == [63..<129])
    #expect(bitmap.nextMissingRun(from: 0) == 10..<200)
    #expect(bitmap.nextMissingRun(from: 150) == 150..<200)
    #expect(bitmap.nextMissingRun(from: 200) == 201..<300)
    #expect(bitmap.nextMissingRun(from: 300) == nil)
    #expect(bitmap.firstMissing(in: 200..<201) == nil)

    var words = BlockBitmap(blockCount: 256)
    words.insert(64..<128)
    #expect(words.missingRuns(in: 0..<256) == [0..<64, 128..<256])
    #expect(words.nextMissingRun(from: 64) == 128..<256)
}

@Test func queriesClampToTheFile() {
    let bitmap = bitmap(10, present: [3])
    #expect(bitmap.missingRuns(in: 0..<1000) == [0..<3, 4..<10])
    #expect(bitmap.firstMissing(in: 10..<20) == nil)
    #expect(bitmap.nextMissingRun(from: -5) == 0..<3)
}

@Test(arguments: [1, 7, 8, 9, 63, 64, 65, 127, 129, 1000])
func blockCountNotAMultipleOfTheWordSize(_ blockCount: Int) {
    var bitmap = BlockBitmap(blockCount: blockCount)
    #expect(bitmap.missingRuns(in: 0..<blockCount) == [0..<blockCount])
    bitmap.insert(blockCount - 1)
    #expect(bitmap.nextMissingRun(from: 0) == (blockCount > 1 ? 0..<(blockCount - 1) : nil))
    #expect(bitmap.serialized.count <= (blockCount + 7) / 8, "never longer than one bit a block")
    #expect(BlockBitmap(blockCount: blockCount, serialized: bitmap.serialized) == bitmap)
    bitmap.insert(0..<blockCount)
    #expect(bitmap.isComplete)
    #expect(bitmap.missingRuns(in: 0..<blockCount).isEmpty)
    #expect(BlockBitmap(blockCount: blockCount, serialized: bitmap.serialized) == bitmap)
}

@Test func missingRunsMatchABlockByBlockScan() {
    // A deterministic pseudo-random pattern with runs of every length.
    var state: UInt64 = 0x1234_5678
    var bitmap = BlockBitmap(blockCount: 1000)
    var block = 0
    while block < 1000 {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        let length = Int(state >> 58) + 1
        if state & 1 == 0 { bitmap.insert(block..<min(block + length, 1000)) }
        block += length
    }
    for range in [0..<1000, 1..<999, 63..<65, 64..<128, 500..<501, 0..<0] {
        #expect(bitmap.missingRuns(in: range) == slowMissingRuns(bitmap, in: range), "\(range)")
    }
}

@Test func serializationRoundTrip() throws {
    let bitmap = bitmap(20, present: [0, 3, 8, 15, 19])
    // Block i is bit i % 8 of byte i / 8.
    #expect(bitmap.serialized == [0b0000_1001, 0b1000_0001, 0b0000_1000])
    let restored = try #require(BlockBitmap(blockCount: 20, serialized: bitmap.serialized))
    #expect(restored == bitmap)
    #expect(restored.presentCount == 5)
    #expect(restored.contains(19))
    #expect(!restored.contains(18))
}

@Test func serializationRejectsWrongLengthAndStrayBits() {
    #expect(BlockBitmap(blockCount: 20, serialized: [0, 0]) == nil)
    #expect(BlockBitmap(blockCount: 20, serialized: [0, 0, 0, 0]) == nil)
    #expect(BlockBitmap(blockCount: 0, serialized: [0]) == nil)
    #expect(BlockBitmap(blockCount: 20, serialized: [0, 0, 0b0001_0000]) == nil)  // block 20
    #expect(BlockBitmap(blockCount: 20, serialized: [0, 0, 0b1000_0000]) == nil)
    #expect(BlockBitmap(blockCount: 20, serialized: [0xFF, 0xFF, 0b0000_1111])?.isComplete == true)
    #expect(BlockBitmap(blockCount: 16, serialized: [0xFF, 0xFF])?.isComplete == true)
}

@Test func sixteenThousandBlocks() {
    // A 1 GiB file in 64 KiB blocks: every other 100-block stretch present.
    var bitmap = BlockBitmap(blockCount: 16_384)
    for start in stride(from: 0, to: 16_384, by: 200) { bitmap.insert(start..<min(start + 100, 16_384)) }
    let runs = bitmap.missingRuns(in: 0..<16_384)
    #expect(runs.count == 82)
    #expect(runs.first == 100..<200)
    #expect(bitmap.presentCount + runs.reduce(0) { $0 + $1.count } == 16_384)
}

// MARK: Storage that grows with the blocks present

@Test func aPetabyteFileWithABlockAtEachEndCostsTwoWords() throws {
    // 2^50 bytes in 4 KiB blocks: a dense bitmap would be 32 GiB.
    let blockCount = 1 << 38
    var bitmap = BlockBitmap(blockCount: blockCount)
    bitmap.insert(0)
    bitmap.insert(blockCount - 1)
    #expect(bitmap.presentCount == 2)
    #expect(bitmap.missingRuns(in: 0..<blockCount) == [1..<(blockCount - 1)])
    #expect(bitmap.firstMissing(in: 0..<blockCount) == 1)
    #expect(bitmap.nextMissingRun(from: 2) == 2..<(blockCount - 1))
    #expect(bitmap.firstMissing(in: (blockCount - 1)..<blockCount) == nil)
    let bytes = bitmap.serialized
    #expect(bytes.count == BlockBitmap.listedMagic.count + 2 * 16, "two words listed")
    #expect(BlockBitmap(blockCount: blockCount, serialized: bytes) == bitmap)
    #expect(BlockBitmap(blockCount: blockCount).serialized == BlockBitmap.listedMagic, "an empty one is its magic alone")
    bitmap.remove(0)
    bitmap.remove(blockCount - 1)
    #expect(bitmap == BlockBitmap(blockCount: blockCount), "a word emptied is no longer kept")
}

@Test func sparseWritesMatchABlockByBlockScan() {
    var state: UInt64 = 0x9E37_79B9
    var bitmap = BlockBitmap(blockCount: 5000)
    for _ in 0..<300 {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        let start = Int(state >> 40) % 5000
        bitmap.insert(start..<min(start + Int(state & 0x7F), 5000))
        if state & 0x100 != 0 { bitmap.remove(Int(state >> 20) % 5000) }
    }
    for range in [0..<5000, 1..<4999, 63..<65, 640..<1280, 4990..<5000] {
        #expect(bitmap.missingRuns(in: range) == slowMissingRuns(bitmap, in: range), "\(range)")
    }
    #expect(bitmap.presentCount == (0..<5000).filter(bitmap.contains).count)
    #expect(BlockBitmap(blockCount: 5000, serialized: bitmap.serialized) == bitmap)
}

@Test func theListedFormRefusesWordsOutOfOrderOutsideOrEmpty() {
    func listed(_ pairs: [(UInt64, UInt64)]) -> [UInt8] {
        var bytes = BlockBitmap.listedMagic
        for (number, word) in pairs {
            for value in [number, word] { for byte in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: value >> (UInt64(byte) * 8))) } }
        }
        return bytes
    }
    let blockCount = 100 * 64 + 10
    #expect(BlockBitmap(blockCount: blockCount, serialized: listed([(3, 1), (7, 2)]))?.presentCount == 2)
    #expect(BlockBitmap(blockCount: blockCount, serialized: listed([(7, 1), (3, 1)])) == nil, "out of order")
    #expect(BlockBitmap(blockCount: blockCount, serialized: listed([(3, 1), (3, 1)])) == nil, "twice")
    #expect(BlockBitmap(blockCount: blockCount, serialized: listed([(101, 1)])) == nil, "past the file")
    #expect(BlockBitmap(blockCount: blockCount, serialized: listed([(100, 1 << 10)])) == nil, "a bit past the last block")
    #expect(BlockBitmap(blockCount: blockCount, serialized: listed([(100, 1 << 9)]))?.contains(blockCount - 1) == true)
    #expect(BlockBitmap(blockCount: blockCount, serialized: listed([(5, 0)])) == nil, "an empty word")
    #expect(BlockBitmap(blockCount: blockCount, serialized: listed([(5, 1)]) + [0]) == nil, "a torn pair")
    #expect(BlockBitmap(blockCount: blockCount, serialized: [UInt8](repeating: 0, count: 20)) == nil, "no magic")
}
