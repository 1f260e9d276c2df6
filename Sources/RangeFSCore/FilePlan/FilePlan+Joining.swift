import Foundation

/// Whether a reader waits for a running transfer to bring its blocks or asks for them itself.
/// It waits only for a transfer that will get there about as soon as a fresh request would.
/// A transfer that would be late is cut where the reader's blocks begin: it still brings what
/// lies before them, the reader's own request brings the rest, and no byte is fetched twice.
/// (Stopping the transfer outright would throw away the bytes it is about to bring; letting it
/// run on would fetch the reader's blocks a second time, at the slow pace that made it late.)
extension FilePlan {
    /// True when a reader of the block starting at `start` should wait for `transfer`, which
    /// brings it: the transfer is in that block already, or reaches it within `joinWaitLimit`
    /// at its own measured speed, else at the speed `hostBytesPerSecond` its host moved at
    /// lately. Background work that may be held back (it stands still while readers wait) is
    /// judged by the faster of the two: once a reader waits on it, it is let go and moves at
    /// its host's pace. With no speed known at all, a block within `joinDistanceBlocks` of the
    /// frontier is waited for, and beyond that only a transfer started for a reader: a
    /// sequential reader whose kernel reads ahead of its own fresh transfer must not fetch
    /// those blocks twice, while background work (a large chunk, maybe on a slow link) must not
    /// make a reader far ahead wait for it. (With a speed known, distance alone says nothing:
    /// two blocks are a few milliseconds on loopback and seconds where a server limits each
    /// connection.)
    func isComingSoon(_ start: UInt64, in transfer: Transfer, now: ContinuousClock.Instant,
                      hostBytesPerSecond: Double?) -> Bool {
        if start <= transfer.frontier { return true }
        let own = transfer.bytesPerSecond(at: now, policy: policy)
        let speed = transfer.mayBeHeldBack ? [own, hostBytesPerSecond].compactMap { $0 }.max() : own ?? hostBytesPerSecond
        guard let rate = speed else {
            return start <= transfer.frontier + policy.joinDistanceBlocks * layout.blockSize || transfer.forReader
        }
        guard rate > 0 else { return false }
        return Double(start - transfer.frontier) / rate <= policy.joinWaitLimit.timeInterval
    }

    /// Cuts every transfer that brings some of a reader's `blocks` but would reach one of them
    /// late, at the first such block (a transfer late for one block is late for every block
    /// after it); background work also where it would bring a block of `withReadAhead` (the
    /// read's blocks and its read-ahead) late: a reader's own transfers there are the
    /// read-ahead. Returns the budget the cut transfers give back; `cutAny` says whether any was cut.
    mutating func cutLateTransfers(bringing blocks: Range<Int>, withReadAhead: Range<Int>? = nil, now: ContinuousClock.Instant,
                                   hostBytesPerSecond: Double?) -> (actions: [Action], cutAny: Bool) {
        var actions: [Action] = []
        var cutAny = false
        for (id, transfer) in transfers.sorted(by: { $0.key < $1.key }) where !transfer.wholeBody {
            let shared = transfer.blocks.clamped(to: transfer.forReader ? blocks : withReadAhead ?? blocks)
            guard let late = shared.first(where: { block in
                !available.contains(block) && !isComingSoon(layout.byteRange(ofBlock: block).lowerBound, in: transfer,
                                                            now: now, hostBytesPerSecond: hostBytesPerSecond)
            }) else { continue }
            if let (released, endEarly) = cut(id, atBlock: late) {
                cutAny = true
                actions.append(endEarly)
                if released > 0 { actions.append(.release(released)) }
                actions.append(.log(.debug, "\(name): a reader of block \(late) does not wait for the transfer of bytes \(transfer.bytes) at \(transfer.frontier); it ends before that block"))
            }
        }
        return (actions, cutAny)
    }

    /// Makes transfer `id` end where `block` starts. Returns the bytes the budget promised it
    /// beyond that and the action that tells its request (`endEarly`), or nil when it cannot be
    /// cut there (it has passed that point).
    mutating func cut(_ id: Int, atBlock block: Int) -> (released: UInt64, endEarly: Action)? {
        guard var transfer = transfers[id] else { return nil }
        let end = layout.byteRange(ofBlock: block).lowerBound
        guard transfer.frontier < end, end < transfer.bytes.upperBound else { return nil }
        transfer.bytes = transfer.bytes.lowerBound..<end
        transfer.blocks = transfer.blocks.lowerBound..<max(transfer.blocks.lowerBound, block)
        transfer.cut = true
        let released = transfer.reserved - min(transfer.reserved, end - transfer.frontier)
        transfer.reserved -= released
        transfers[id] = transfer
        return (released, .endEarly(transfer.urgency, at: end))
    }

    /// How many of `count` bytes arriving for transfer `id` at `offset` it still wants: fewer
    /// once it was cut short, none once it is gone.
    func bytesWanted(by id: Int, at offset: UInt64, count: UInt64) -> UInt64 {
        guard let end = transfers[id]?.bytes.upperBound, offset < end else { return 0 }
        return min(count, end - offset)
    }

    /// True once a transfer that was cut short has brought everything it still wants: its
    /// response goes on past that point and must be stopped.
    func hasReachedItsCut(_ id: Int) -> Bool {
        guard let transfer = transfers[id], transfer.cut else { return false }
        return transfer.frontier >= transfer.bytes.upperBound
    }

    /// The measured speed of transfer `id` when it was started for a reader (what the shell
    /// remembers as its host's speed); nil for background work or before it is known.
    func readerTransferSpeed(_ id: Int, now: ContinuousClock.Instant) -> Double? {
        guard let transfer = transfers[id], transfer.forReader else { return nil }
        return transfer.bytesPerSecond(at: now, policy: policy)
    }
}
