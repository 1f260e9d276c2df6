/// Decides how far past a read to fetch: twice what the reader has read in a row, between
/// `initial` and `maximum`. A program that reads a file's first pages and leaves (a tag reader,
/// `ffprobe`, a media server's scan) fetches little past them; one that keeps going (a player,
/// `cp`) sees its window double with every stretch it reads, as Linux's own read-ahead grows.
/// A jump elsewhere starts a new run there. Reads a little out of order (a multithreaded FUSE
/// reorders the kernel's read-ahead) still count as in a row.
public struct ReadAheadWindow: Sendable, Equatable {
    /// The window of a run's first reads.
    public let initial: UInt64
    public let maximum: UInt64
    /// How far a read may start before or after the end of the run and still continue it.
    public let tolerance: UInt64
    public private(set) var size: UInt64 = 0
    /// The bytes read in a row so far; nil before the first read.
    private var run: Range<UInt64>?

    public init(initial: UInt64 = 128 * 1024, maximum: UInt64 = 16 * 1024 * 1024, tolerance: UInt64 = 1024 * 1024) {
        self.initial = initial
        self.maximum = maximum
        self.tolerance = tolerance
    }

    /// Records a read and returns how many bytes past its end should be fetched with it.
    public mutating func advise(read bytes: Range<UInt64>) -> UInt64 {
        let continues: Bool
        if let run {
            continues = bytes.lowerBound + tolerance >= run.upperBound && bytes.lowerBound <= run.upperBound + tolerance
        } else {
            // A first read at the start of a file is the classic start of a sequential reader.
            continues = bytes.lowerBound == 0
        }
        guard continues else {
            run = bytes
            size = 0
            return size
        }
        let start = min(run?.lowerBound ?? bytes.lowerBound, bytes.lowerBound)
        let end = max(run?.upperBound ?? bytes.upperBound, bytes.upperBound)
        run = start..<end
        size = min(max(2 * (end - start), initial), maximum)
        return size
    }
}
