import Foundation

/// A file's sources at work: which source each attempt of a transfer asks, what a source's
/// failure means for it (backing off, dropped for this file) and for the transfer (another
/// source at once, one later, or none left), and what a probe of a mirror found. A file with
/// one URL always asks it, and its failures go the usual way (`FilePlan+Transfers`).
extension FilePlan {
    /// Where an attempt of a transfer goes, or why none goes now.
    enum Attempt {
        /// Ask there (`requestURL(origin: url)`, with that place's validator).
        case request(FetchSource)
        /// Nothing to ask now; these actions follow (a later retry, the failure of a file no source serves).
        case later([Action])
    }

    /// Transfer `id` starts or starts again: the best usable source takes it, passing over the
    /// one its last attempt failed at when another is usable.
    mutating func beginAttempt(_ id: Int, now: ContinuousClock.Instant) -> Attempt {
        guard let transfer = transfers[id] else { return .later([]) }
        if sources.isSingle {
            transfers[id]?.source = 0
            return .request(source)
        }
        guard let index = sources.best(now: now, avoiding: transfer.source) else {
            return .later(waitForSource(id, now: now))
        }
        transfers[id]?.source = index
        transfers[id]?.parked = false
        return .request(sources.all[index].fetch!)
    }

    /// The source a request started now would ask (the record's when none is usable).
    func preferredSource(now: ContinuousClock.Instant) -> FetchSource {
        // Asked on every read: a file with one URL has nothing to rank.
        guard !sources.isSingle else { return source }
        return sources.best(now: now).flatMap { sources.all[$0].fetch } ?? source
    }

    /// Each mirror not asked about yet is probed (its size, its validator) before its first range.
    mutating func probeNewSources() -> [Action] {
        guard !sources.isSingle, invalidated == nil else { return [] }
        return sources.takeUnprobed().map { .probeSource($0, sources.all[$0].url, after: .zero) }
    }

    /// The probe of source `index` answered: it serves the file (same size), is dropped for it,
    /// or is asked again later. Transfers that waited for a source go on.
    mutating func sourceProbed(_ index: Int, _ result: Result<RemoteFileInfo, RemoteError>,
                               now: ContinuousClock.Instant) -> [Action] {
        guard invalidated == nil, index < sources.all.count else { return [] }
        let wasDropped = sources.isDropped(index)
        var actions: [Action] = []
        switch sources.probed(index, result, fileSize: layout.fileSize, origin: url, now: now, policy: policy) {
        case .usable:
            break
        case .dropped(let why):
            if !wasDropped { actions.append(droppedLine(index, why)) }
            actions += forgetUnsettledBytes(of: index)
        case .probeAgain(let delay):
            actions.append(.probeSource(index, sources.all[index].url, after: delay))
        }
        return actions + resumeParked(now: now)
    }

    /// Transfer `id` failed at its source, for a file with mirrors: the source backs off
    /// (transient trouble) or is dropped for this file (another copy, or it does not serve the
    /// file), and the rest of the transfer goes to another source at once, to the first one out
    /// of its backoff, or waits for a probe. It fails once every source's share of attempts is
    /// spent, or no source is left. Nil when the failure is not the source's (an unmount, the
    /// local disk, nothing left to bring): the usual path handles it. `ended`: the transfer is gone.
    mutating func failedAtSource(_ id: Int, _ error: RemoteError,
                                 now: ContinuousClock.Instant) -> (actions: [Action], ended: Bool)? {
        guard !sources.isSingle, invalidated == nil, var transfer = transfers[id], let index = transfer.source,
              transfer.frontier < transfer.bytes.upperBound else { return nil }
        var actions: [Action] = []
        switch error {
        case .cancelled, .localStorage:
            return nil
        case .changed(let why):
            actions += dropSource(index, because: "its copy differs (\(why))", forgetBytes: true)
        case .rangesNotSupported:
            actions += dropSource(index, because: "it ignores ranges", forgetBytes: false)
        case .servedElsewhere(let why):
            sources.forgetWhereItLeads(index)
            actions.append(.log(.notice, "\(name): \(sources.all[index].url.redactedForDisplay) leads to another copy (\(why)); asking it again"))
            actions.append(.probeSource(index, sources.all[index].url, after: .zero))
        default:
            if error.isTransient {
                let delay = sources.backOff(index, after: error, now: now, policy: policy)
                actions.append(.log(.warning, "GET \(name) from \(sources.all[index].url.redactedForDisplay) bytes \(transfer.frontier)-\(transfer.bytes.upperBound - 1): \(error); that source rests \(delay)"))
            } else {
                actions += dropSource(index, because: error.description, forgetBytes: false)
            }
        }
        if sources.allDropped {
            return (actions + endTransfer(id, failingWith: noSourceError) + noSourceLeft(), true)
        }
        transfer.attempts += 1
        guard transfer.attempts <= policy.maxAttempts * sources.all.count else {
            return (actions + endTransfer(id, failingWith: noSourceError), true)
        }
        // A stream without ranges can only start over; its bytes so far are kept.
        if transfer.wholeBody { transfer.written = 0 }
        transfer.rateSample = nil
        transfers[id] = transfer
        return (actions + waitForSource(id, now: now, orRetryNow: true), false)
    }

    /// No source serves the file any more: every transfer ends and every waiting reader fails,
    /// naming each source and why.
    mutating func noSourceLeft() -> [Action] {
        let failure = noSourceError
        lastFailure = failure.reason.description
        guard !transfers.isEmpty || !waiters.isEmpty else { return [] }
        var actions: [Action] = [.log(.error, failure.description)]
        for id in transfers.keys.sorted() {
            let transfer = transfers.removeValue(forKey: id)!
            actions += releasing(transfer)
            if let observer = transfer.onFinish { actions.append(.notify(observer, false)) }
        }
        return actions + failWaiters(overlapping: 0..<UInt64.max, error: failure)
    }

    var noSourceError: FetchError {
        FetchError(name, .sourcesFailed(sources.summary))
    }

    /// Bytes of transfer `id` came from its source: the pieces they fall in are that source's
    /// until checked; for a file with mirrors its speed is measured, and the bytes stay the
    /// source's until their blocks are durable.
    mutating func sourceWrote(_ bytes: Range<UInt64>, by id: Int, now: ContinuousClock.Instant) {
        guard let transfer = transfers[id], let index = transfer.source else { return }
        for piece in pieceIndices(covering: bytes) { pieceWriters[piece, default: []].insert(index) }
        guard !sources.isSingle else { return }
        sources.wrote(bytes, from: index)
        if let speed = transfer.bytesPerSecond(at: now, policy: policy) { sources.measured(index, bytesPerSecond: speed) }
    }

    // MARK: Helpers

    /// Starts transfer `id` again: now when a source is usable (`orRetryNow`, or it was asked
    /// while none was), when the first source's backoff ends, or once a probe finds one (parked).
    private mutating func waitForSource(_ id: Int, now: ContinuousClock.Instant, orRetryNow: Bool = false) -> [Action] {
        if sources.allDropped { return noSourceLeft() }
        if orRetryNow, sources.best(now: now) != nil { return [retrying(id, after: .zero)] }
        if let recovery = sources.nextRecovery() {
            return [retrying(id, after: max(.zero, recovery - now))]
        }
        transfers[id]?.parked = true
        return []
    }

    /// Parked transfers go on once a source is usable; with every source dropped they fail.
    private mutating func resumeParked(now: ContinuousClock.Instant) -> [Action] {
        if sources.allDropped { return noSourceLeft() }
        let parked = transfers.filter(\.value.parked).keys.sorted()
        guard !parked.isEmpty else { return [] }
        let delay: Duration
        if sources.best(now: now) != nil {
            delay = .zero
        } else if let recovery = sources.nextRecovery() {
            delay = max(.zero, recovery - now)
        } else {
            return []
        }
        return parked.map { id in
            transfers[id]?.parked = false
            return retrying(id, after: delay)
        }
    }

    private func retrying(_ id: Int, after delay: Duration) -> Action {
        let transfer = transfers[id]!
        let bytes = transfer.wholeBody ? transfer.bytes : transfer.frontier..<transfer.bytes.upperBound
        return .retry(id: id, bytes: bytes, urgency: transfer.urgency, wholeBody: transfer.wholeBody, after: delay)
    }

    /// Ends transfer `id` for good (its observer is told by `transferEnded`), failing the readers of its rest.
    private mutating func endTransfer(_ id: Int, failingWith failure: FetchError) -> [Action] {
        guard let transfer = transfers.removeValue(forKey: id) else { return [] }
        lastFailure = failure.reason.description
        return releasing(transfer) + [.log(.error, "\(failure)")]
            + failWaiters(overlapping: transfer.frontier..<transfer.bytes.upperBound, error: failure)
    }

    /// Drops source `index` for this file, saying why; with `forgetBytes` (its copy differs),
    /// what it wrote that is not durable yet is forgotten, to be fetched again from another.
    mutating func dropSource(_ index: Int, because why: String, forgetBytes: Bool) -> [Action] {
        guard !sources.isDropped(index) else { return [] }
        sources.drop(index, because: why)
        return [droppedLine(index, why)] + (forgetBytes ? forgetUnsettledBytes(of: index) : [])
    }

    private func droppedLine(_ index: Int, _ why: String) -> Action {
        .log(.warning, "\(name): source \(sources.all[index].url.redactedForDisplay) dropped for this file: \(why)")
    }

    /// Forgets the blocks source `index` wrote that are not durable yet (and whatever else was
    /// written into them): readers waiting there, and background work, fetch them again.
    private mutating func forgetUnsettledBytes(of index: Int) -> [Action] {
        var forgotten: UInt64 = 0
        for range in sources.takeUnsettled(index) {
            for block in layout.blocks(covering: range) where !durable.contains(block) {
                forgotten += forgetBlock(block)
            }
        }
        return forgotten > 0 ? [.cachedBytes(-Int64(forgotten))] : []
    }
}
