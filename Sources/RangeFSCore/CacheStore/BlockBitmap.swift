/// Which blocks of a cached file are present on disk: one bit a block, kept in
/// 64-bit words so that scanning a large file for gaps takes a few hundred steps.
public struct BlockBitmap: Sendable, Equatable {
    public let blockCount: Int
    /// Maintained on every change so progress reporting costs nothing.
    public private(set) var presentCount: Int
    /// Bit `i % 64` of word `i / 64` is block `i`; bits past `blockCount` stay clear.
    private var words: [UInt64]

    /// All blocks missing.
    public init(blockCount: Int) {
        precondition(blockCount >= 0, "a block count cannot be negative")
        self.blockCount = blockCount
        self.presentCount = 0
        self.words = Array(repeating: 0, count: Self.wordCount(for: blockCount))
    }

    /// Restores a bitmap from `serialized`; nil if the bytes cannot be a bitmap of
    /// `blockCount` blocks (wrong length, or bits set past the last block).
    public init?(blockCount: Int, serialized: [UInt8]) {
        guard blockCount >= 0, serialized.count == Self.byteCount(for: blockCount) else { return nil }
        let usedBitsInLastByte = blockCount % 8
        if usedBitsInLastByte != 0, let last = serialized.last, last >> usedBitsInLastByte != 0 { return nil }
        var words = Array(repeating: UInt64(0), count: Self.wordCount(for: blockCount))
        for (index, byte) in serialized.enumerated() {
            words[index / 8] |= UInt64(byte) << (UInt64(index % 8) * 8)
        }
        self.blockCount = blockCount
        self.words = words
        self.presentCount = words.reduce(0) { $0 + $1.nonzeroBitCount }
    }

    public var isComplete: Bool { presentCount == blockCount }

    public func contains(_ block: Int) -> Bool {
        precondition(block >= 0 && block < blockCount, "block \(block) is outside 0..<\(blockCount)")
        return words[block >> 6] & (1 << UInt64(block & 63)) != 0
    }

    /// Marking a present block again changes nothing.
    public mutating func insert(_ block: Int) {
        insert(block..<(block + 1))
    }

    public mutating func insert(_ blocks: Range<Int>) {
        precondition(blocks.lowerBound >= 0 && blocks.upperBound <= blockCount,
                     "blocks \(blocks) are outside 0..<\(blockCount)")
        guard !blocks.isEmpty else { return }
        for wordIndex in (blocks.lowerBound >> 6)...((blocks.upperBound - 1) >> 6) {
            let wordStart = wordIndex << 6
            let mask = Self.mask(
                fromBit: max(blocks.lowerBound, wordStart) - wordStart,
                toBit: min(blocks.upperBound, wordStart + 64) - wordStart)
            presentCount += (mask & ~words[wordIndex]).nonzeroBitCount
            words[wordIndex] |= mask
        }
    }

    /// Marking a missing block missing again changes nothing.
    public mutating func remove(_ block: Int) {
        guard contains(block) else { return }
        words[block >> 6] &= ~(1 << UInt64(block & 63))
        presentCount -= 1
    }

    public mutating func removeAll() {
        for index in words.indices { words[index] = 0 }
        presentCount = 0
    }

    /// The lowest missing block in `blocks` (clamped to the file), or nil if all are present.
    public func firstMissing(in blocks: Range<Int>) -> Int? {
        firstBlock(present: false, in: blocks)
    }

    /// Maximal runs of missing blocks within `blocks` (clamped to the file), ascending.
    public func missingRuns(in blocks: Range<Int>) -> [Range<Int>] {
        let end = min(blocks.upperBound, blockCount)
        var runs: [Range<Int>] = []
        var cursor = blocks.lowerBound
        while let start = firstBlock(present: false, in: cursor..<end) {
            let runEnd = firstBlock(present: true, in: (start + 1)..<end) ?? end
            runs.append(start..<runEnd)
            cursor = runEnd
        }
        return runs
    }

    /// The run of missing blocks that begins at the first missing block at or after
    /// `block` and extends as far as blocks stay missing; nil if none is missing.
    public func nextMissingRun(from block: Int) -> Range<Int>? {
        guard let start = firstBlock(present: false, in: block..<blockCount) else { return nil }
        return start..<(firstBlock(present: true, in: (start + 1)..<blockCount) ?? blockCount)
    }

    /// Block `i` is bit `i % 8` (least significant first) of byte `i / 8`.
    public var serialized: [UInt8] {
        (0..<Self.byteCount(for: blockCount)).map { index in
            UInt8(truncatingIfNeeded: words[index / 8] >> (UInt64(index % 8) * 8))
        }
    }

    /// The first block in `range` (clamped to the file) whose bit equals `present`.
    private func firstBlock(present: Bool, in range: Range<Int>) -> Int? {
        let start = max(range.lowerBound, 0)
        let end = min(range.upperBound, blockCount)
        guard start < end else { return nil }
        var wordIndex = start >> 6
        var candidates = (present ? words[wordIndex] : ~words[wordIndex]) & (~UInt64(0) << UInt64(start & 63))
        while true {
            if candidates != 0 {
                let block = (wordIndex << 6) + candidates.trailingZeroBitCount
                return block < end ? block : nil
            }
            wordIndex += 1
            guard wordIndex << 6 < end else { return nil }
            candidates = present ? words[wordIndex] : ~words[wordIndex]
        }
    }

    /// Bits `fromBit..<toBit` of a word set, for `0 <= fromBit < toBit <= 64`.
    private static func mask(fromBit: Int, toBit: Int) -> UInt64 {
        let width = toBit - fromBit
        let ones: UInt64 = width == 64 ? ~0 : (1 << UInt64(width)) - 1
        return ones << UInt64(fromBit)
    }

    private static func wordCount(for blockCount: Int) -> Int { (blockCount + 63) / 64 }
    private static func byteCount(for blockCount: Int) -> Int { (blockCount + 7) / 8 }
}
