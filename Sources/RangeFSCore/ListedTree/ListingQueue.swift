import Foundation

/// The directories waiting to be listed: those a caller waits on first, the latest of them
/// first, then those asked for ahead of need in the order asked. Each step costs the same
/// however many wait (a walk of a tree of 100,000 directories queues them all).
struct ListingQueue {
    /// Waited on; the last put is taken first.
    private var waitedOn: [String] = []
    /// Ahead of need, in the order asked, from `aheadStart` on.
    private var ahead: [String] = []
    private var aheadStart = 0

    mutating func putFirst(_ path: String) {
        waitedOn.append(path)
    }

    mutating func putLast(_ path: String) {
        ahead.append(path)
    }

    /// The next path to list. A path put first after it was put last comes out twice: the
    /// caller skips what it lists already.
    mutating func next() -> String? {
        if let path = waitedOn.popLast() { return path }
        guard aheadStart < ahead.count else { return nil }
        let path = ahead[aheadStart]
        aheadStart += 1
        // Taken paths are dropped once they are half the array: each is moved at most once.
        if aheadStart * 2 >= ahead.count {
            ahead.removeFirst(aheadStart)
            aheadStart = 0
        }
        return path
    }
}
