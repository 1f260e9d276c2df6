/// How a file of `fileSize` bytes divides into blocks of `blockSize` bytes; the
/// last block holds whatever remains and may be shorter.
public struct BlockLayout: Sendable, Equatable {
    public let fileSize: UInt64
    public let blockSize: UInt64

    public init(fileSize: UInt64, blockSize: UInt64) {
        precondition(blockSize > 0, "a block size must be positive")
        self.fileSize = fileSize
        self.blockSize = blockSize
    }

    /// 0 for an empty file. Fits an `Int` for any file size `FileSizeLimit` accepts.
    public var blockCount: Int {
        Int(fileSize.unitsRoundedUp(of: blockSize))
    }

    /// The bytes of one block; the last block stops at the end of the file.
    public func byteRange(ofBlock block: Int) -> Range<UInt64> {
        precondition(block >= 0 && block < blockCount, "block \(block) is outside 0..<\(blockCount)")
        return byteRange(ofBlocks: block..<(block + 1))
    }

    /// The bytes of consecutive blocks, stopping at the end of the file.
    public func byteRange(ofBlocks blocks: Range<Int>) -> Range<UInt64> {
        precondition(blocks.lowerBound >= 0 && blocks.upperBound <= blockCount,
                     "blocks \(blocks) are outside 0..<\(blockCount)")
        return startOffset(ofBlock: blocks.lowerBound)..<startOffset(ofBlock: blocks.upperBound)
    }

    /// The blocks holding any byte of `bytes`, after clamping `bytes` to the file.
    /// Empty when no byte of the file is asked for.
    public func blocks(covering bytes: Range<UInt64>) -> Range<Int> {
        let clamped = clampedToFile(bytes)
        let first = Int(clamped.lowerBound / blockSize)
        guard !clamped.isEmpty else {
            let position = min(first, blockCount)
            return position..<position
        }
        return first..<(Int((clamped.upperBound - 1) / blockSize) + 1)
    }

    /// The part of a read of `length` bytes at `offset` that lies inside the file.
    public func clampedRead(offset: UInt64, length: UInt64) -> Range<UInt64> {
        let (end, overflow) = offset.addingReportingOverflow(length)
        return clampedToFile(offset..<(overflow ? UInt64.max : end))
    }

    /// The blocks that lie entirely inside `bytes`, i.e. those a write of `bytes`
    /// completes. The short last block counts as whole when `bytes` reaches the end of the file.
    public func fullyCoveredBlocks(_ bytes: Range<UInt64>) -> Range<Int> {
        let clamped = clampedToFile(bytes)
        let quotient = clamped.lowerBound / blockSize
        let first = Int(quotient + (clamped.lowerBound % blockSize == 0 ? 0 : 1))
        let end = clamped.upperBound == fileSize ? blockCount : Int(clamped.upperBound / blockSize)
        guard !clamped.isEmpty, first < end else {
            let position = min(first, blockCount)
            return position..<position
        }
        return first..<end
    }

    /// Where `block` starts, or the file size for the position just past the last block.
    private func startOffset(ofBlock block: Int) -> UInt64 {
        let (offset, overflow) = UInt64(block).multipliedReportingOverflow(by: blockSize)
        return overflow ? fileSize : min(offset, fileSize)
    }

    private func clampedToFile(_ bytes: Range<UInt64>) -> Range<UInt64> {
        let lower = min(bytes.lowerBound, fileSize)
        return lower..<min(max(bytes.upperBound, lower), fileSize)
    }
}
