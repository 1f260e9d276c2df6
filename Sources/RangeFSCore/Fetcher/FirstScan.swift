import Synchronization

/// What the first reader of a file touched near its start and near its end: the bytes a
/// tagger or a media server's scan needs from every file of its type, and so what the heads
/// and tails of the next files of that type should hold (`LearnedHeadTails`). Pure: it sees
/// each read of one handle and gives its lesson when the handle closes.
///
/// - A read nearer the start than the end that starts in the first `HeadTailSizes.learnedCap`
///   bytes, or one that goes on from the head, is a head read: the head reaches as far as such
///   reads end.
/// - A read nearer the end that starts in the last `learnedCap` bytes is a tail read: the tail
///   reaches back to where it starts.
/// - A read in between (a seek into the content of a large file) ends the scan: later reads
///   teach nothing.
/// - A head or tail read that goes past `learnedCap`, or past the middle of the file, is a
///   player or a copy reading the file itself, not its tags: this reader teaches nothing.
///
/// Bytes, not a count of reads, bound it: the kernel's read size decides how many reads the
/// same scan takes.
struct FirstScan {
    let fileSize: UInt64
    private var head: UInt64 = 0
    private var tail: UInt64 = 0
    /// A read landed between head and tail: what was seen until then is the lesson.
    private var ended = false
    /// The reader read the file itself: there is no lesson.
    private var readsTheFile = false

    init(fileSize: UInt64) {
        self.fileSize = fileSize
    }

    /// How far past the head a read may start and still go on from it: a multithreaded FUSE
    /// hands the kernel's read-ahead over a little out of order.
    static let reorderTolerance: UInt64 = 256 << 10

    mutating func saw(_ bytes: Range<UInt64>) {
        guard !ended, !readsTheFile, !bytes.isEmpty, bytes.upperBound <= fileSize else { return }
        let cap = HeadTailSizes.learnedCap
        let limit = min(cap, fileSize / 2)
        let fromEnd = fileSize - bytes.lowerBound
        let nearerTheStart = bytes.lowerBound <= fileSize - bytes.upperBound
        let goesOnFromHead = head > 0 && bytes.lowerBound <= head + Self.reorderTolerance
        if goesOnFromHead || (nearerTheStart && bytes.lowerBound < cap) {
            if bytes.upperBound > limit {
                readsTheFile = true
            } else {
                head = max(head, bytes.upperBound)
            }
        } else if !nearerTheStart, fromEnd <= cap {
            if fromEnd > limit {
                readsTheFile = true
            } else {
                tail = max(tail, fromEnd)
            }
        } else {
            ended = true
        }
    }

    /// The head and tail this reader needed; nil when it read the file itself or read nothing.
    var lesson: HeadTailSizes? {
        guard !readsTheFile, head > 0 || tail > 0 else { return nil }
        return HeadTailSizes(head: head, tail: tail)
    }
}

/// Watches the reads of a file's first handle in a mount (`FileCatalog.open`, when the file
/// is not complete) and hands its lesson to the mount's learned sizes when the handle closes.
final class FirstScanWatch: Sendable {
    private let type: String
    private let learned: LearnedHeadTails
    /// A leaf lock: held only to record a read or take the lesson.
    private let scan: Mutex<FirstScan>

    init(fileSize: UInt64, type: String, learned: LearnedHeadTails) {
        self.type = type
        self.learned = learned
        scan = Mutex(FirstScan(fileSize: fileSize))
    }

    func saw(_ bytes: Range<UInt64>) {
        scan.withLock { $0.saw(bytes) }
    }

    func handleClosed() {
        if let lesson = scan.withLock({ $0.lesson }) { learned.learn(lesson, forType: type) }
    }
}
