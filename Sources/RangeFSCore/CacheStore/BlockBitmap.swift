/// Which blocks of a cached file are present on disk: one bit a block, in 64-bit words.
/// Only the words holding a present block are kept (by ascending word number), so the memory
/// grows with the blocks actually fetched, never with the size a server states: a file said to
/// be a petabyte costs nothing until its bytes arrive, and the cache's size bounds them.
public struct BlockBitmap: Sendable, Equatable {
    public let blockCount: Int
    /// Maintained on every change so progress reporting costs nothing.
    public private(set) var presentCount: Int
    /// Word `wordNumbers[i]` is `words[i]`; bit `b % 64` of word `b / 64` is block `b`. Every
    /// word not listed is zero, every listed one is not; bits past `blockCount` stay clear.
    private var wordNumbers: [Int] = []
    private var words: [UInt64] = []

    /// All blocks missing.
    public init(blockCount: Int) {
        precondition(blockCount >= 0, "a block count cannot be negative")
        self.blockCount = blockCount
        self.presentCount = 0
    }

    /// Restores a bitmap from `serialized` (either form `serialized` writes); nil if the bytes
    /// cannot be a bitmap of `blockCount` blocks. Linear in the bytes given.
    public init?(blockCount: Int, serialized: [UInt8]) {
        guard blockCount >= 0 else { return nil }
        self.init(blockCount: blockCount)
        let restored = serialized.count == Self.denseByteCount(for: blockCount)
            ? restoreDense(serialized) : restoreListed(serialized)
        guard restored else { return nil }
        presentCount = words.reduce(0) { $0 + $1.nonzeroBitCount }
    }

    public var isComplete: Bool { presentCount == blockCount }

    public func contains(_ block: Int) -> Bool {
        precondition(block >= 0 && block < blockCount, "block \(block) is outside 0..<\(blockCount)")
        return word(block >> 6) & (1 << UInt64(block & 63)) != 0
    }

    /// Marking a present block again changes nothing.
    public mutating func insert(_ block: Int) {
        insert(block..<(block + 1))
    }

    public mutating func insert(_ blocks: Range<Int>) {
        precondition(blocks.lowerBound >= 0 && blocks.upperBound <= blockCount,
                     "blocks \(blocks) are outside 0..<\(blockCount)")
        guard !blocks.isEmpty else { return }
        for wordNumber in (blocks.lowerBound >> 6)...((blocks.upperBound - 1) >> 6) {
            let wordStart = wordNumber << 6
            let mask = Self.mask(
                fromBit: max(blocks.lowerBound, wordStart) - wordStart,
                toBit: min(blocks.upperBound, wordStart + 64) - wordStart)
            let old = word(wordNumber)
            presentCount += (mask & ~old).nonzeroBitCount
            setWord(wordNumber, to: old | mask)
        }
    }

    /// Marking a missing block missing again changes nothing.
    public mutating func remove(_ block: Int) {
        guard contains(block) else { return }
        setWord(block >> 6, to: word(block >> 6) & ~(1 << UInt64(block & 63)))
        presentCount -= 1
    }

    public mutating func removeAll() {
        wordNumbers = []
        words = []
        presentCount = 0
    }

    /// The lowest missing block in `blocks` (clamped to the file), or nil if all are present.
    public func firstMissing(in blocks: Range<Int>) -> Int? {
        firstMissingBlock(in: blocks)
    }

    /// Maximal runs of missing blocks within `blocks` (clamped to the file), ascending.
    public func missingRuns(in blocks: Range<Int>) -> [Range<Int>] {
        let end = min(blocks.upperBound, blockCount)
        var runs: [Range<Int>] = []
        var cursor = blocks.lowerBound
        while let start = firstMissingBlock(in: cursor..<end) {
            let runEnd = firstPresentBlock(in: (start + 1)..<end) ?? end
            runs.append(start..<runEnd)
            cursor = runEnd
        }
        return runs
    }

    /// The run of missing blocks that begins at the first missing block at or after
    /// `block` and extends as far as blocks stay missing; nil if none is missing.
    public func nextMissingRun(from block: Int) -> Range<Int>? {
        guard let start = firstMissingBlock(in: block..<blockCount) else { return nil }
        return start..<(firstPresentBlock(in: (start + 1)..<blockCount) ?? blockCount)
    }

    /// For the cache database, in whichever of two forms is shorter: dense, block `i` as bit
    /// `i % 8` (least significant first) of byte `i / 8`, exactly `(blockCount + 7) / 8` bytes;
    /// or listed, `listedMagic` then each word holding a present block as its number and its
    /// bits (8 bytes each, little-endian), always shorter than the dense form so the length
    /// tells the two apart. Either is bounded by the blocks present, or by the dense form's
    /// length when that is shorter.
    public var serialized: [UInt8] {
        let denseCount = Self.denseByteCount(for: blockCount)
        let listedCount = Self.listedMagic.count + words.count * 16
        guard listedCount < denseCount else {
            var bytes = [UInt8](repeating: 0, count: denseCount)
            for (number, word) in zip(wordNumbers, words) {
                for byte in 0..<8 where number * 8 + byte < denseCount {
                    bytes[number * 8 + byte] = UInt8(truncatingIfNeeded: word >> (UInt64(byte) * 8))
                }
            }
            return bytes
        }
        var bytes = Self.listedMagic
        bytes.reserveCapacity(listedCount)
        for (number, word) in zip(wordNumbers, words) {
            Self.appendLittleEndian(UInt64(number), to: &bytes)
            Self.appendLittleEndian(word, to: &bytes)
        }
        return bytes
    }

    /// Opens the listed form (it never starts like a dense form of the same length could).
    static let listedMagic: [UInt8] = Array("RFB1".utf8)

    // MARK: Words

    /// Where word `number` is, or would be inserted, in `wordNumbers`.
    private func position(ofWord number: Int) -> (index: Int, found: Bool) {
        var low = 0
        var high = wordNumbers.count
        while low < high {
            let middle = (low + high) / 2
            if wordNumbers[middle] < number { low = middle + 1 } else { high = middle }
        }
        return (low, low < wordNumbers.count && wordNumbers[low] == number)
    }

    private func word(_ number: Int) -> UInt64 {
        let (index, found) = position(ofWord: number)
        return found ? words[index] : 0
    }

    private mutating func setWord(_ number: Int, to value: UInt64) {
        let (index, found) = position(ofWord: number)
        switch (found, value != 0) {
        case (true, true): words[index] = value
        case (true, false): wordNumbers.remove(at: index); words.remove(at: index)
        case (false, true): wordNumbers.insert(number, at: index); words.insert(value, at: index)
        case (false, false): break
        }
    }

    /// The first block in `range` (clamped to the file) that is present: a walk over the kept
    /// words from the first that can hold one.
    private func firstPresentBlock(in range: Range<Int>) -> Int? {
        let start = max(range.lowerBound, 0)
        let end = min(range.upperBound, blockCount)
        guard start < end else { return nil }
        var index = position(ofWord: start >> 6).index
        while index < words.count, wordNumbers[index] << 6 < end {
            var candidates = words[index]
            if wordNumbers[index] == start >> 6 { candidates &= ~UInt64(0) << UInt64(start & 63) }
            if candidates != 0 {
                let block = (wordNumbers[index] << 6) + candidates.trailingZeroBitCount
                return block < end ? block : nil
            }
            index += 1
        }
        return nil
    }

    /// The first block in `range` (clamped to the file) that is missing: any word not kept
    /// has one, so the walk passes only over full words that follow each other.
    private func firstMissingBlock(in range: Range<Int>) -> Int? {
        let start = max(range.lowerBound, 0)
        let end = min(range.upperBound, blockCount)
        guard start < end else { return nil }
        var (index, found) = position(ofWord: start >> 6)
        var wordNumber = start >> 6
        var fromBit = start & 63
        while wordNumber << 6 < end {
            let present = found ? words[index] : 0
            let candidates = ~present & (~UInt64(0) << UInt64(fromBit))
            if candidates != 0 {
                let block = (wordNumber << 6) + candidates.trailingZeroBitCount
                return block < end ? block : nil
            }
            wordNumber += 1
            fromBit = 0
            if found { index += 1 }
            found = index < wordNumbers.count && wordNumbers[index] == wordNumber
        }
        return nil
    }

    // MARK: Restoring

    private mutating func restoreDense(_ bytes: [UInt8]) -> Bool {
        let usedBitsInLastByte = blockCount % 8
        if usedBitsInLastByte != 0, let last = bytes.last, last >> usedBitsInLastByte != 0 { return false }
        for start in stride(from: 0, to: bytes.count, by: 8) {
            var word: UInt64 = 0
            for (offset, byte) in bytes[start..<min(start + 8, bytes.count)].enumerated() {
                word |= UInt64(byte) << (UInt64(offset) * 8)
            }
            if word != 0 {
                wordNumbers.append(start / 8)
                words.append(word)
            }
        }
        return true
    }

    private mutating func restoreListed(_ bytes: [UInt8]) -> Bool {
        let magic = Self.listedMagic.count
        guard bytes.count >= magic, bytes.count < Self.denseByteCount(for: blockCount),
              bytes.starts(with: Self.listedMagic), (bytes.count - magic) % 16 == 0 else { return false }
        let wordCount = (blockCount + 63) / 64
        for start in stride(from: magic, to: bytes.count, by: 16) {
            let number = Self.littleEndian(bytes, at: start)
            let word = Self.littleEndian(bytes, at: start + 8)
            // Ascending, inside the file, not empty, no bits past the last block.
            guard number < UInt64(wordCount), wordNumbers.last.map({ UInt64($0) < number }) ?? true, word != 0
            else { return false }
            let blocksInWord = blockCount - Int(number) * 64
            if blocksInWord < 64, word >> UInt64(blocksInWord) != 0 { return false }
            wordNumbers.append(Int(number))
            words.append(word)
        }
        return true
    }

    // MARK: Arithmetic

    /// Bits `fromBit..<toBit` of a word set, for `0 <= fromBit < toBit <= 64`.
    private static func mask(fromBit: Int, toBit: Int) -> UInt64 {
        let width = toBit - fromBit
        let ones: UInt64 = width == 64 ? ~0 : (1 << UInt64(width)) - 1
        return ones << UInt64(fromBit)
    }

    private static func denseByteCount(for blockCount: Int) -> Int { blockCount / 8 + (blockCount % 8 == 0 ? 0 : 1) }

    private static func appendLittleEndian(_ value: UInt64, to bytes: inout [UInt8]) {
        for byte in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: value >> (UInt64(byte) * 8))) }
    }

    private static func littleEndian(_ bytes: [UInt8], at start: Int) -> UInt64 {
        (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[start + $1]) << (UInt64($1) * 8) }
    }
}
