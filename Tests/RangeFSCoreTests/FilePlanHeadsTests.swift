import Foundation
import Testing
@testable import RangeFSCore

private let block = PlanFixture.block
private let KiB: UInt64 = 1024
private let MiB: UInt64 = 1024 * 1024

/// A file's head and tail as the plan widens them to whole blocks.
struct HeadTailCase: Sendable, CustomTestStringConvertible {
    var name: String
    var size: UInt64
    var sizes: HeadTailSizes
    var expected: [Range<UInt64>]
    var testDescription: String { name }
}

/// Heads and tails: which bytes they are, which part is still to fetch, the sizes by file type
/// and what a first scan teaches.
@Suite struct FilePlanHeadsTests {
    @Test(arguments: [
        HeadTailCase(name: "a large file: its first and last blocks", size: 10 * MiB,
                     sizes: HeadTailSizes(head: 64 * KiB, tail: 64 * KiB), expected: [0..<block, 10 * MiB - block..<10 * MiB]),
        HeadTailCase(name: "a head of four blocks; a tail of 4 KiB is the last block", size: 10 * MiB,
                     sizes: HeadTailSizes(head: 4 * block, tail: 4 * KiB), expected: [0..<4 * block, 10 * MiB - block..<10 * MiB]),
        HeadTailCase(name: "a short last block: the tail reaches into the block before", size: 10 * block + 100,
                     sizes: HeadTailSizes(head: 64 * KiB, tail: 64 * KiB), expected: [0..<block, 9 * block..<10 * block + 100]),
        HeadTailCase(name: "a head and a tail that touch are one range", size: 4 * block,
                     sizes: HeadTailSizes(head: 2 * block, tail: 2 * block), expected: [0..<4 * block]),
        HeadTailCase(name: "a small file whose head and tail overlap is fetched whole", size: 300_000,
                     sizes: HeadTailSizes(head: 256 * KiB, tail: 64 * KiB), expected: [0..<300_000]),
        HeadTailCase(name: "a file smaller than a block", size: 1000,
                     sizes: HeadTailSizes(head: 64 * KiB, tail: 64 * KiB), expected: [0..<1000]),
        HeadTailCase(name: "an empty file has neither", size: 0,
                     sizes: HeadTailSizes(head: 64 * KiB, tail: 64 * KiB), expected: []),
        HeadTailCase(name: "no tail learned: the head alone", size: 10 * MiB,
                     sizes: HeadTailSizes(head: 100 * KiB, tail: 0), expected: [0..<2 * block]),
        HeadTailCase(name: "nothing learned for either", size: 10 * MiB, sizes: HeadTailSizes(head: 0, tail: 0), expected: []),
    ])
    func headAndTailAreWholeBlocks(_ example: HeadTailCase) {
        #expect(PlanFixture.plan(size: example.size).headAndTail(example.sizes) == example.expected)
    }

    @Test func withPieceHashesTheyAreWholePiecesToo() throws {
        // Pieces of a block and a half: the first block ends inside the first piece, the last
        // block (half a block) starts inside the last piece.
        let pieceLength = 3 * block / 2
        let size = 8 * block + block / 2
        let count = Int((size + pieceLength - 1) / pieceLength)
        let pieces = try #require(PieceHashes(pieceLength: pieceLength, hexDigests: Array(repeating: String(repeating: "0", count: 64), count: count)))
        let layout = BlockLayout(fileSize: size, blockSize: block)
        let plan = FilePlan(url: PlanFixture.origin, layout: layout, policy: PlanFixture.policy, blocks: BlockBitmap(blockCount: layout.blockCount),
                            complete: false, streamOnly: false, expectedSHA256: nil,
                            source: FetchSource(location: nil, validator: PlanFixture.validator), pieces: pieces)
        #expect(plan.headAndTail(HeadTailSizes(head: 1, tail: 1)) == [0..<2 * block, 7 * block..<size])
    }

    @Test func theNextPieceIsTheHeadThenTheTailThenNothing() {
        var plan = PlanFixture.plan(size: 10 * MiB)
        let sizes = HeadTailSizes(head: 2 * block, tail: block)
        #expect(plan.nextHeadOrTailPiece(sizes, maxBytes: 4 * MiB) == 0..<2 * block)
        #expect(plan.background(0..<2 * block) == ["fetch #0 0..<131072 background"])
        #expect(plan.nextHeadOrTailPiece(sizes, maxBytes: 4 * MiB) == 10 * MiB - block..<10 * MiB)
        _ = plan.background(10 * MiB - block..<10 * MiB)
        #expect(plan.nextHeadOrTailPiece(sizes, maxBytes: 4 * MiB) == nil)
    }

    @Test func aHeadLongerThanARequestMayBeIsFetchedInSeveral() {
        var plan = PlanFixture.plan(size: 10 * MiB)
        let sizes = HeadTailSizes(head: 2 * block, tail: 0)
        #expect(plan.nextHeadOrTailPiece(sizes, maxBytes: block) == 0..<block)
        _ = plan.background(0..<block)
        #expect(plan.nextHeadOrTailPiece(sizes, maxBytes: block) == block..<2 * block)
    }

    @Test func cachedBlocksAndReadersRequestsAreNotAskedForAgain() {
        let sizes = HeadTailSizes(head: 3 * block, tail: block)
        // Block 0 is cached: the head starts after it.
        var cached = PlanFixture.plan(size: 10 * MiB, blocks: [0])
        #expect(cached.nextHeadOrTailPiece(sizes, maxBytes: 4 * MiB) == block..<3 * block)
        // A reader's request brings the first two blocks; a reader's page at the end is on its way.
        #expect(cached.read(block..<block + 4096, readAhead: block) == ["fetch #0 65536..<196608", "wait #0"])
        #expect(cached.read(10 * MiB - 4096..<10 * MiB) == ["fetch #1 10481664..<10485760", "wait #1"])
        // While the sequential reader reads, the blocks past it are its read-ahead's, the tail too.
        #expect(cached.nextHeadOrTailPiece(sizes, maxBytes: 4 * MiB, now: PlanFixture.start) == nil)
        let readerGone = PlanFixture.start + cached.policy.readerZoneIdle
        #expect(cached.nextHeadOrTailPiece(sizes, maxBytes: 4 * MiB, now: readerGone) == 10 * MiB - block..<10 * MiB - 4096)
    }

    @Test func aServerThatIgnoresRangesHasNoHeads() {
        let plan = PlanFixture.plan(size: 10 * MiB, streamOnly: true)
        #expect(plan.nextHeadOrTailPiece(HeadTailSizes.generic, maxBytes: 4 * MiB) == nil)
    }

    // MARK: Sizes by file type

    @Test(arguments: [("Song.MP3", "mp3"), ("track.flac", "flac"), ("a.tar.gz", "gz"), ("README", ""), (".hidden", ""),
                      ("name.", ""), ("clip.verylongext", ""), ("odd.m-4a", ""), ("show.M4B", "m4b")])
    func aFileTypeIsItsLowercasedExtension(_ name: String, _ type: String) {
        #expect(HeadTailSizes.fileType(ofName: name) == type)
    }

    @Test func eachTypeHasDefaultsAndTheRestTheGenericOnes() {
        #expect(HeadTailSizes.defaults(forType: "mp3") == HeadTailSizes(head: 256 * KiB, tail: 64 * KiB))
        #expect(HeadTailSizes.defaults(forType: "mp4") == HeadTailSizes(head: MiB, tail: MiB))
        #expect(HeadTailSizes.defaults(forType: "ape").tail > HeadTailSizes.defaults(forType: "ape").head)
        #expect(HeadTailSizes.defaults(forType: "pdf") == HeadTailSizes.generic)
        #expect(HeadTailSizes.defaults(forType: "") == HeadTailSizes.generic)
    }

    @Test func learningRisesAtOnceFallsByAnEighthAndIsCapped() {
        let before = HeadTailSizes(head: 256 * KiB, tail: 64 * KiB)
        // A larger head is taken at once; a smaller tail moves an eighth of the way to it.
        #expect(before.learning(HeadTailSizes(head: 600 * KiB, tail: 0)) == HeadTailSizes(head: 600 * KiB, tail: 56 * KiB))
        #expect(before.learning(HeadTailSizes(head: 64 * MiB, tail: 64 * MiB))
                == HeadTailSizes(head: HeadTailSizes.learnedCap, tail: HeadTailSizes.learnedCap))
        // Scans that need less bring it down over a few dozen files.
        var learned = HeadTailSizes(head: 4 * MiB, tail: 64 * KiB)
        for _ in 0..<40 { learned = learned.learning(HeadTailSizes(head: 128 * KiB, tail: 4 * KiB)) }
        #expect(learned.head < 200 * KiB && learned.head >= 128 * KiB, "\(learned)")
        #expect(learned.tail < 5 * KiB && learned.tail >= 4 * KiB, "\(learned)")
    }

    // MARK: What a first scan teaches

    /// A scan's reads, each `[start, end)`, of a file of `size` bytes.
    static func lesson(size: UInt64, _ reads: [(UInt64, UInt64)]) -> HeadTailSizes? {
        var scan = FirstScan(fileSize: size)
        for (start, end) in reads { scan.saw(start..<end) }
        return scan.lesson
    }

    @Test func aTaggerTeachesItsTagAtTheStartAndTheID3v1AtTheEnd() {
        let size = 8 * MiB
        // The kernel reads 128 KiB at a time: a 200 KiB ID3v2 tag, then the last page for ID3v1.
        let lesson = Self.lesson(size: size, [(0, 128 * KiB), (128 * KiB, 256 * KiB), (size - 4 * KiB, size)])
        #expect(lesson == HeadTailSizes(head: 256 * KiB, tail: 4 * KiB))
    }

    @Test func anMP4WithItsMoovAtTheEndTeachesALongTail() {
        let size = 100 * MiB
        var reads: [(UInt64, UInt64)] = [(0, 4 * KiB)]
        for start in stride(from: size - 3 * MiB, to: size, by: Int(128 * KiB)) { reads.append((start, start + 128 * KiB)) }
        #expect(Self.lesson(size: size, reads) == HeadTailSizes(head: 4 * KiB, tail: 3 * MiB))
    }

    @Test func aPlayerOrACopyReadingFromTheStartTeachesNothing() {
        let large = 100 * MiB
        let played = stride(from: UInt64(0), to: 6 * MiB, by: Int(128 * KiB)).map { ($0, $0 + 128 * KiB) }
        #expect(Self.lesson(size: large, played) == nil)
        // A small file read past its middle (a 3 MiB song played, a `cp` in one read).
        let song = 3 * MiB
        #expect(Self.lesson(size: song, stride(from: UInt64(0), to: song, by: Int(128 * KiB)).map { ($0, $0 + 128 * KiB) }) == nil)
        #expect(Self.lesson(size: 200 * KiB, [(0, 200 * KiB)]) == nil)
        // Read back from the end further than the middle.
        #expect(Self.lesson(size: MiB, [(400 * KiB, MiB)]) == nil)
    }

    @Test func aSeekIntoTheContentEndsTheScan() {
        let size = 100 * MiB
        // Header, a jump to the middle, then the end: the read at the end came from the player.
        let lesson = Self.lesson(size: size, [(0, 128 * KiB), (50 * MiB, 50 * MiB + 128 * KiB), (size - 128 * KiB, size)])
        #expect(lesson == HeadTailSizes(head: 128 * KiB, tail: 0))
    }

    @Test func aReaderThatReadNothingTeachesNothing() {
        #expect(Self.lesson(size: 10 * MiB, []) == nil)
    }
}
