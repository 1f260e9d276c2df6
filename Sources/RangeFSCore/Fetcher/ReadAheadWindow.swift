/// Decides how far past a read to fetch. While a reader moves forward (a player, `cp`),
/// the window doubles up to `maximum`; a jump elsewhere starts a new, small window there.
/// Reads a little out of order (a multithreaded FUSE reorders the kernel's read-ahead)
/// still count as sequential.
public struct ReadAheadWindow: Sendable, Equatable {
    public let initial: UInt64
    public let maximum: UInt64
    /// How far a read may start before or after the expected offset and still be sequential.
    public let tolerance: UInt64
    public private(set) var size: UInt64 = 0
    private var frontier: UInt64?

    public init(initial: UInt64 = 512 * 1024, maximum: UInt64 = 16 * 1024 * 1024, tolerance: UInt64 = 1024 * 1024) {
        self.initial = initial
        self.maximum = maximum
        self.tolerance = tolerance
    }

    /// Records a read and returns how many bytes past its end should be fetched with it.
    public mutating func advise(read bytes: Range<UInt64>) -> UInt64 {
        let sequential: Bool
        if let frontier {
            sequential = bytes.lowerBound + tolerance >= frontier && bytes.lowerBound <= frontier + tolerance
        } else {
            // A first read at the start of a file is the classic start of a sequential reader.
            sequential = bytes.lowerBound == 0
        }
        if sequential {
            size = size == 0 ? initial : min(size * 2, maximum)
            frontier = max(frontier ?? 0, bytes.upperBound)
        } else {
            size = 0
            frontier = bytes.upperBound
        }
        return size
    }
}
