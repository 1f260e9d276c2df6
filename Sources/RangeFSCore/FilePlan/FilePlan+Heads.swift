/// Heads and tails: before the prefetcher completes any file of a collection, it fetches the
/// start and the end of every file, where tags and stream headers live, so that a media
/// server's or a tagger's first scan reads from the cache. They are whole blocks (only whole
/// blocks are recorded, so they survive a remount and show the file as partial) and, where the
/// manifest gives piece hashes, whole pieces (only a checked piece may be read).
extension FilePlan {
    /// The bytes of the file's head and tail of `sizes`, widened to whole blocks and pieces:
    /// two ranges, or one when they meet (a small file: all of it); none for an empty file.
    func headAndTail(_ sizes: HeadTailSizes) -> [Range<UInt64>] {
        let size = layout.fileSize
        var ranges: [Range<UInt64>] = []
        if sizes.head > 0 { ranges.append(0..<min(sizes.head, size)) }
        if sizes.tail > 0 { ranges.append((size - min(sizes.tail, size))..<size) }
        return ranges.filter { !$0.isEmpty }
            .map { layout.byteRange(ofBlocks: layout.blocks(covering: pieceAligned($0))) }
            .merged()
    }

    /// The next part of the head and tail (at most `maxBytes` of blocks) that background work
    /// may take (`firstBackgroundGap`), head first; nil once all of it is here or on its way. A
    /// server that ignores ranges has no heads: its one stream fills the file from the start.
    func nextHeadOrTailPiece(_ sizes: HeadTailSizes, maxBytes: UInt64, now: ContinuousClock.Instant = .now) -> Range<UInt64>? {
        guard !streamOnly else { return nil }
        for range in headAndTail(sizes) {
            if let piece = firstBackgroundGap(in: layout.blocks(covering: range), maxBytes: maxBytes, now: now) {
                return piece
            }
        }
        return nil
    }
}
