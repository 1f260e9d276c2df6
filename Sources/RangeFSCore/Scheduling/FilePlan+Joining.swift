import Foundation

/// Whether a reader waits for a running transfer to bring its bytes or asks for them itself.
/// It waits only for what a transfer will bring about as soon as a fresh request would.
/// A transfer that would be late is cut where its late bytes begin: it still brings what lies
/// before them, the reader's own request brings the rest, and no byte is fetched twice.
/// (Stopping the transfer outright would throw away the bytes it is about to bring; letting it
/// run on would fetch the reader's bytes a second time, at the slow pace that made it late.)
extension FilePlan {
    /// The first byte of `region` (bytes a reader wants) that `transfer` would bring late, or
    /// nil when it brings all of them soon, or none. Soon is within `joinWaitLimit` at the
    /// transfer's own measured speed, else at the speed `hostBytesPerSecond` its host moved at
    /// lately. Background work that may be held back (it stands still while readers wait) is
    /// judged by the faster of the two: once a reader waits on it, it is let go and moves at its
    /// host's pace; raised, it is a reader's, and its own speed counts from the raise, not from
    /// the time it stood still (`Transfer.raise`). (Distance alone says nothing: two blocks are
    /// a few milliseconds on loopback and seconds where a server limits each connection.) With no
    /// speed known at all, a transfer started for a reader is waited for: a sequential reader
    /// whose kernel reads ahead of its own fresh transfer must not fetch those bytes twice.
    /// Background work (a large chunk, or a file's head not let go yet, maybe on a slow link) is
    /// waited for only as far as the reader's own first request would bring (`joinDistance`):
    /// the rest comes in requests of the reader's own at once, not at one connection's pace.
    /// A reader's own transfer is cut at a block's start only, so that the parts a slow link's
    /// reads go out in are not cut again and again; background work inside a block too.
    func firstLateByte(of region: Range<UInt64>, in transfer: Transfer, now: ContinuousClock.Instant,
                       hostBytesPerSecond: Double?) -> UInt64? {
        let wanted = region.clamped(to: transfer.frontier..<transfer.bytes.upperBound)
        guard !wanted.isEmpty else { return nil }
        let own = transfer.bytesPerSecond(at: now, policy: policy)
        let speed = transfer.purpose.isBackgroundWork ? [own, hostBytesPerSecond].compactMap { $0 }.max() : own ?? hostBytesPerSecond
        // Bytes up to `reach` come soon; the transfer can be cut at a multiple of `step`.
        let reach: Double
        let step = transfer.startedAs.isForReader ? layout.blockSize : Self.pageSize
        if let rate = speed {
            reach = Double(transfer.frontier) + max(rate, 0) * policy.joinWaitLimit.timeInterval
        } else if transfer.startedAs.isForReader {
            return nil
        } else {
            reach = Double(transfer.frontier + policy.joinDistance)
        }
        guard reach < Double(wanted.upperBound) else { return nil }
        // The first multiple of `step` past `reach`: no byte before it is late.
        let late = max(wanted.lowerBound, (UInt64(reach) / step + 1) * step)
        return late < wanted.upperBound ? late : nil
    }

    /// Cuts every transfer that brings some of a reader's `bytes` but would bring some of them
    /// late, where its late bytes begin; background work also where it would bring bytes of
    /// `withReadAhead` (the read's blocks and its read-ahead) late: a reader's own transfers
    /// there are the read-ahead. Returns the budget the cut transfers give back; `cutAny` says
    /// whether any was cut.
    mutating func cutLateTransfers(bringing bytes: Range<UInt64>, withReadAhead: Range<UInt64>? = nil, now: ContinuousClock.Instant,
                                   hostBytesPerSecond: Double?) -> (actions: [Action], cutAny: Bool) {
        var actions: [Action] = []
        var cutAny = false
        for (id, transfer) in transfers.sorted(by: { $0.key < $1.key }) where !transfer.wholeBody {
            let region = transfer.startedAs.isForReader ? bytes : withReadAhead ?? bytes
            guard let late = firstLateByte(of: region, in: transfer, now: now, hostBytesPerSecond: hostBytesPerSecond) else { continue }
            if let (unreserved, endEarly) = cut(id, at: late) {
                cutAny = true
                actions.append(endEarly)
                if unreserved > 0 { actions.append(.unreserve(unreserved)) }
                let own = transfer.bytesPerSecond(at: now, policy: policy).map { "\(Int($0)) B/s" } ?? "unknown"
                let host = hostBytesPerSecond.map { "\(Int($0)) B/s" } ?? "unknown"
                actions.append(.log(.debug, "\(name): a reader of byte \(late) does not wait for the transfer of bytes \(transfer.bytes) at \(transfer.frontier) (its speed \(own), its host's \(host)); it ends there"))
            }
        }
        return (actions, cutAny)
    }

    /// Cuts background work that would bring bytes of `window` (a reader's read-ahead) late;
    /// a reader's own transfers there are that read-ahead and are left alone.
    mutating func cutLateBackgroundWork(in window: Range<UInt64>, now: ContinuousClock.Instant,
                                        hostBytesPerSecond: Double?) -> (actions: [Action], cutAny: Bool) {
        cutLateTransfers(bringing: window.lowerBound..<window.lowerBound, withReadAhead: window, now: now,
                         hostBytesPerSecond: hostBytesPerSecond)
    }

    /// Makes transfer `id` end at `end`. Returns the bytes the budget promised it beyond that
    /// and the action that tells its request (`endEarly`), or nil when it cannot be cut there
    /// (it has passed that point).
    mutating func cut(_ id: Int, at end: UInt64) -> (unreserved: UInt64, endEarly: Action)? {
        guard var transfer = transfers[id], transfer.frontier < end, end < transfer.bytes.upperBound else { return nil }
        transfer.bytes = transfer.bytes.lowerBound..<end
        if !transfer.blocks.isEmpty { transfer.blocks = layout.blocks(covering: transfer.bytes) }
        transfer.cut = true
        let unreserved = transfer.reserved - min(transfer.reserved, end - transfer.frontier)
        transfer.reserved -= unreserved
        transfers[id] = transfer
        return (unreserved, .endEarly(transfer.control, at: end))
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
    /// remembers as its host's speed), and the span it was measured over; nil for background
    /// work or before it is known.
    func readerTransferSpeed(_ id: Int, now: ContinuousClock.Instant) -> (bytesPerSecond: Double, span: Duration)? {
        guard let transfer = transfers[id], transfer.startedAs.isForReader,
              let speed = transfer.bytesPerSecond(at: now, policy: policy) else { return nil }
        return (speed, transfer.measuredSpan(at: now))
    }
}
