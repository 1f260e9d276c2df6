import Testing
@testable import RangeFSCore

@Test func emptyFile() {
    let layout = BlockLayout(fileSize: 0, blockSize: 4)
    #expect(layout.blockCount == 0)
    #expect(layout.byteRange(ofBlocks: 0..<0) == 0..<0)
    #expect(layout.blocks(covering: 0..<10).isEmpty)
    #expect(layout.clampedRead(offset: 0, length: 10).isEmpty)
    #expect(layout.fullyCoveredBlocks(0..<10).isEmpty)
}

@Test func oneByteFile() {
    let layout = BlockLayout(fileSize: 1, blockSize: 4)
    #expect(layout.blockCount == 1)
    #expect(layout.byteRange(ofBlock: 0) == 0..<1)
    #expect(layout.blocks(covering: 0..<1) == 0..<1)
    #expect(layout.blocks(covering: 0..<100) == 0..<1)
    #expect(layout.blocks(covering: 1..<2).isEmpty)
    #expect(layout.clampedRead(offset: 0, length: 4096) == 0..<1)
    #expect(layout.fullyCoveredBlocks(0..<1) == 0..<1)
}

@Test func exactlyOneBlock() {
    let layout = BlockLayout(fileSize: 4, blockSize: 4)
    #expect(layout.blockCount == 1)
    #expect(layout.byteRange(ofBlock: 0) == 0..<4)
    #expect(layout.blocks(covering: 3..<4) == 0..<1)
    #expect(layout.blocks(covering: 4..<5).isEmpty)
    #expect(layout.fullyCoveredBlocks(0..<4) == 0..<1)
    #expect(layout.fullyCoveredBlocks(0..<3).isEmpty)
}

@Test func oneBlockPlusOneByte() {
    let layout = BlockLayout(fileSize: 5, blockSize: 4)
    #expect(layout.blockCount == 2)
    #expect(layout.byteRange(ofBlock: 0) == 0..<4)
    #expect(layout.byteRange(ofBlock: 1) == 4..<5)
    #expect(layout.byteRange(ofBlocks: 0..<2) == 0..<5)
    #expect(layout.blocks(covering: 4..<5) == 1..<2)
    #expect(layout.blocks(covering: 3..<5) == 0..<2)
    #expect(layout.fullyCoveredBlocks(4..<5) == 1..<2)
    #expect(layout.fullyCoveredBlocks(2..<5) == 1..<2)
}

@Test func lastPartialBlock() {
    let layout = BlockLayout(fileSize: 10, blockSize: 4)
    #expect(layout.blockCount == 3)
    #expect(layout.byteRange(ofBlock: 2) == 8..<10)
    #expect(layout.byteRange(ofBlocks: 1..<3) == 4..<10)
    #expect(layout.byteRange(ofBlocks: 3..<3) == 10..<10)
    #expect(layout.fullyCoveredBlocks(8..<10) == 2..<3)
    #expect(layout.fullyCoveredBlocks(8..<9).isEmpty)
    #expect(layout.fullyCoveredBlocks(8..<100) == 2..<3)
}

@Test func blocksCoveringAtBoundaries() {
    let layout = BlockLayout(fileSize: 16, blockSize: 4)
    #expect(layout.blocks(covering: 0..<4) == 0..<1)
    #expect(layout.blocks(covering: 0..<5) == 0..<2)
    #expect(layout.blocks(covering: 3..<4) == 0..<1)
    #expect(layout.blocks(covering: 4..<8) == 1..<2)
    #expect(layout.blocks(covering: 3..<9) == 0..<3)
    #expect(layout.blocks(covering: 12..<16) == 3..<4)
    #expect(layout.blocks(covering: 5..<5).isEmpty)
    #expect(layout.blocks(covering: 16..<20).isEmpty)
}

@Test func fullyCoveredBlocksNeedWholeBlocks() {
    let layout = BlockLayout(fileSize: 16, blockSize: 4)
    #expect(layout.fullyCoveredBlocks(0..<16) == 0..<4)
    #expect(layout.fullyCoveredBlocks(1..<16) == 1..<4)
    #expect(layout.fullyCoveredBlocks(4..<8) == 1..<2)
    #expect(layout.fullyCoveredBlocks(3..<9) == 1..<2)
    #expect(layout.fullyCoveredBlocks(5..<7).isEmpty)
    #expect(layout.fullyCoveredBlocks(5..<5).isEmpty)
}

@Test func readsPastTheEnd() {
    let layout = BlockLayout(fileSize: 10, blockSize: 4)
    #expect(layout.clampedRead(offset: 2, length: 5) == 2..<7)
    #expect(layout.clampedRead(offset: 8, length: 5) == 8..<10)
    #expect(layout.clampedRead(offset: 10, length: 5).isEmpty)
    #expect(layout.clampedRead(offset: 11, length: 5).isEmpty)
    #expect(layout.clampedRead(offset: 3, length: 0).isEmpty)
    #expect(layout.clampedRead(offset: 3, length: .max) == 3..<10)
}

@Test func largeFile() {
    let gib: UInt64 = 1 << 30
    let layout = BlockLayout(fileSize: 5 * gib + 1, blockSize: 1 << 16)
    #expect(layout.blockCount == 5 * 16_384 + 1)
    #expect(layout.byteRange(ofBlock: layout.blockCount - 1) == (5 * gib)..<(5 * gib + 1))
    #expect(layout.blocks(covering: (5 * gib - 1)..<(5 * gib + 1)) == (layout.blockCount - 2)..<layout.blockCount)
}
