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

    /// What the shell needs to send an attempt of a transfer, decided in one step.
    struct AttemptStart {
        var attempt: Attempt
        /// Background work not raised (`TransferPurpose.isBackgroundWork`): it keeps within
        /// `--max-rate`, and its speed is not taken for its host's.
        var isBackgroundWork: Bool
        /// Its reply names the file's version (`learnsVersion`): checked before its body is used.
        var learnsVersion: Bool
        /// It names the version it wants (`sendsCondition`).
        var conditional: Bool
    }

    /// Transfer `id` starts or starts again (`beginAttempt`), with what its request needs.
    mutating func startAttempt(_ id: Int, now: ContinuousClock.Instant) -> AttemptStart {
        let attempt = beginAttempt(id, now: now)
        return AttemptStart(attempt: attempt, isBackgroundWork: transfers[id]?.purpose.isBackgroundWork ?? false,
                            learnsVersion: learnsVersion, conditional: sendsCondition)
    }

    /// Transfer `id` starts or starts again: the best usable source takes it, passing over the
    /// one its last attempt failed at when another is usable.
    mutating func beginAttempt(_ id: Int, now: ContinuousClock.Instant) -> Attempt {
        guard let transfer = transfers[id] else { return .later([]) }
        if sources.isSingle {
            transfers[id]?.source = 0
            transfers[id]?.attemptStarted = (now, transfer.written)
            return .request(source)
        }
        guard let index = sources.best(now: now, avoiding: transfer.source, keeping: pieceWriter(for: id),
                                       running: runningPerSource(besides: id), speedMemory: policy.sourceSpeedMemory) else {
            return .later(waitForSource(id, now: now))
        }
        transfers[id]?.source = index
        transfers[id]?.parked = false
        transfers[id]?.attemptStarted = (now, transfer.written)
        return .request(sources.all[index].fetch!)
    }

    /// With piece hashes, the one source that wrote or is bringing bytes of the piece where
    /// transfer `id` starts (nil when none or several): a piece whose bytes all come from one
    /// source names it when it fails its hash, where one pieced together from several (a
    /// reader's small parts spread over the mirrors) blames none. `best` keeps to it.
    func pieceWriter(for id: Int) -> Int? {
        guard let pieces, let transfer = transfers[id], transfer.frontier < transfer.bytes.upperBound,
              let piece = pieceIndices(covering: transfer.frontier..<(transfer.frontier + 1)).first else { return nil }
        let pieceBytes = pieces.range(ofPiece: piece, fileSize: layout.fileSize)
        var writing = pieceWriters[piece] ?? []
        for (other, running) in transfers where other != id && !running.parked && running.bytes.overlaps(pieceBytes) {
            if let source = running.source { writing.insert(source) }
        }
        return writing.count == 1 ? writing.first : nil
    }

    /// The source a request started now would ask (the record's when none is usable).
    func preferredSource(now: ContinuousClock.Instant) -> FetchSource {
        // Asked on every read: a file with one URL has nothing to rank.
        guard !sources.isSingle else { return source }
        return sources.best(now: now, running: runningPerSource(), speedMemory: policy.sourceSpeedMemory)
            .flatMap { sources.all[$0].fetch } ?? source
    }

    /// The transfers each source serves now (by index into `sources.all`), leaving out `id`
    /// (the transfer being placed) and those waiting for a source.
    func runningPerSource(besides id: Int? = nil) -> [Int] {
        var running = Array(repeating: 0, count: sources.all.count)
        for (other, transfer) in transfers where other != id && !transfer.parked {
            if let index = transfer.source { running[index] += 1 }
        }
        return running
    }

    /// The end of a file's background work, with mirrors: every missing byte is on its way and
    /// a background transfer would still take longer than `slowTailLimit` at its speed, where
    /// another usable source is at least twice as fast. That transfer is cut where both would
    /// end at about the same time, and a new background transfer brings the rest (`best` sends
    /// it to the faster source); the budget's promise for those bytes moves with them. Without
    /// this, one slow mirror holding the last chunk would hold the file's completion.
    /// Nil when no transfer is worth splitting.
    mutating func takeOverSlowTail(now: ContinuousClock.Instant, onFinish: @escaping @Sendable (Bool) -> Void) -> [Action]? {
        guard !sources.isSingle, invalidated == nil, !streamOnly else { return nil }
        var slowest: (id: Int, seconds: Double, rate: Double)?
        for (id, transfer) in transfers.sorted(by: { $0.key < $1.key })
        where !transfer.startedAs.isForReader && !transfer.wholeBody && !transfer.parked && transfer.source != nil {
            guard let rate = transfer.bytesPerSecond(at: now, policy: policy), rate > 0 else { continue }
            let seconds = Double(transfer.bytes.upperBound - transfer.frontier) / rate
            if seconds > slowest?.seconds ?? policy.slowTailLimit.timeInterval { slowest = (id, seconds, rate) }
        }
        guard let slowest, let from = transfers[slowest.id]?.source,
              let to = sources.best(now: now, avoiding: from, running: runningPerSource(), speedMemory: policy.sourceSpeedMemory),
              to != from else { return nil }
        let otherRate = sources.expectedSpeeds(now: now, memory: policy.sourceSpeedMemory)[to]
        guard otherRate >= 2 * slowest.rate, let transfer = transfers[slowest.id] else { return nil }
        // The slow one keeps the share it brings in the time the other needs for the rest.
        let kept = UInt64(Double(transfer.bytes.upperBound - transfer.frontier) * slowest.rate / (slowest.rate + otherRate))
        // At the first block boundary past that share (`cut` refuses one the transfer has passed),
        // and past the piece it falls in: the rest would otherwise follow the slow source there
        // (`pieceWriter`).
        let share = transfer.frontier + max(kept, 1)
        let cutFrom = min(layout.fileSize, pieceAligned(share..<(share + 1)).upperBound)
        let cutBlock = Int((cutFrom + layout.blockSize - 1) / layout.blockSize)
        guard cutBlock < layout.blockCount, let (unreserved, endEarly) = cut(slowest.id, at: layout.byteRange(ofBlock: cutBlock).lowerBound) else { return nil }
        let tail = layout.byteRange(ofBlock: cutBlock).lowerBound..<transfer.bytes.upperBound
        let log = Action.log(.info, "\(name): bytes \(tail.lowerBound)-\(tail.upperBound - 1) move from \(sources.all[from].url.redactedForDisplay) (\(HumanBytes.rate(UInt64(slowest.rate)))) to a faster source")
        return [log, endEarly, addBackgroundTransfer(tail, reserved: unreserved, onFinish: onFinish)]
    }

    /// Each mirror not asked about yet is probed (its size, its validator) before its first range.
    mutating func probeNewSources() -> [Action] {
        guard !sources.isSingle, invalidated == nil else { return [] }
        return sources.takeUnprobed().map { .probeSource($0, sources.all[$0].url, after: .zero) }
    }

    /// The probe of source `index` (at `probed`) answered: it serves the file (same size), is
    /// dropped for it, or is asked again later. Transfers that waited for a source go on. An
    /// answer about a place the list no longer has there (`relist`) is ignored.
    mutating func sourceProbed(_ index: Int, _ result: Result<RemoteFileInfo, RemoteError>,
                               now: ContinuousClock.Instant, probed: URL? = nil) -> [Action] {
        guard invalidated == nil, index < sources.all.count,
              probed.map({ $0.absoluteString == sources.all[index].url.absoluteString }) ?? true else { return [] }
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

    /// A refreshed manifest lists `mirrors` after the file's URL (`FileSources.relist`): running
    /// transfers and unchecked pieces follow their source to its new place, and new mirrors are
    /// probed now if the file is in use (else before its next range).
    mutating func relist(mirrors: [URL]) -> [Action] {
        let moved = sources.relist(mirrors: mirrors)
        for id in transfers.keys {
            if let index = transfers[id]?.source { transfers[id]?.source = moved[index] }
        }
        pieceWriters = pieceWriters.mapValues { Set($0.map { moved[$0] }) }
        return transfers.isEmpty && waiters.isEmpty ? [] : probeNewSources()
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

    /// Transfer `id` ended well: its source is ok, and, for a file with mirrors, measured from
    /// the whole attempt when the transfer was too quick to be measured as it ran (a fast
    /// mirror must not count as unknown, which `best` takes for as fast as the fastest measured).
    /// Such a short reply's speed is only a floor beside a speed measured running
    /// (`FileSources.expectedSpeeds`).
    mutating func sourceSucceeded(_ transfer: Transfer, now: ContinuousClock.Instant) {
        guard let index = transfer.source else { return }
        sources.succeeded(index)
        guard !sources.isSingle, runningPace(of: transfer, at: now) == nil,
              let started = transfer.attemptStarted, now > started.at, transfer.written > started.written else { return }
        sources.measuredShortReply(index, bytesPerSecond: Double(transfer.written - started.written) / (now - started.at).timeInterval,
                                   at: now, memory: policy.sourceSpeedMemory)
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
            actions += unreserving(transfer)
            if let observer = transfer.onFinish { actions.append(.notify(observer, false)) }
        }
        return actions + failWaiters(overlapping: 0..<UInt64.max, error: failure)
    }

    var noSourceError: FetchError {
        FetchError(name, .sourcesFailed(sources.summary))
    }

    /// Bytes of transfer `id` came from its source: the pieces they fall in are that source's
    /// until checked; for a file with mirrors its speed is measured, and the bytes stay the
    /// source's until their blocks are durable. Measured once the transfer's sample has run
    /// `rateSample` (`runningPace`), not at its first `rateSampleBytes`: after a hold or a
    /// raise, bytes that waited in the socket's and a proxy's buffers come at once, and their
    /// pace (gigabytes a second, seen on a 20 MiB/s link) would send a mirror every request.
    mutating func sourceWrote(_ bytes: Range<UInt64>, by id: Int, now: ContinuousClock.Instant) {
        guard let transfer = transfers[id], let index = transfer.source else { return }
        for piece in pieceIndices(covering: bytes) { pieceWriters[piece, default: []].insert(index) }
        guard !sources.isSingle else { return }
        sources.wrote(bytes, from: index)
        if let speed = runningPace(of: transfer, at: now) { sources.measured(index, bytesPerSecond: speed, at: now) }
    }

    /// A transfer's pace as its source's speed is measured while it runs (`sourceWrote`).
    private func runningPace(of transfer: Transfer, at now: ContinuousClock.Instant) -> Double? {
        guard transfer.measuredSpan(at: now) >= policy.rateSample else { return nil }
        return transfer.bytesPerSecond(at: now, policy: policy)
    }

    // MARK: Helpers

    /// Starts transfer `id` again: now when a source is usable (`orRetryNow`, or it was asked
    /// while none was), when the first source's backoff ends, or once a probe finds one (parked).
    private mutating func waitForSource(_ id: Int, now: ContinuousClock.Instant, orRetryNow: Bool = false) -> [Action] {
        if sources.allDropped { return noSourceLeft() }
        if orRetryNow, sources.hasUsable(now: now) { return [retrying(id, after: .zero)] }
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
        if sources.hasUsable(now: now) {
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
        return .retry(id: id, bytes: bytes, control: transfer.control, wholeBody: transfer.wholeBody, after: delay)
    }

    /// Ends transfer `id` for good (its observer is told by `transferEnded`), failing the readers of its rest.
    private mutating func endTransfer(_ id: Int, failingWith failure: FetchError) -> [Action] {
        guard let transfer = transfers.removeValue(forKey: id) else { return [] }
        lastFailure = failure.reason.description
        return unreserving(transfer) + [.log(.error, "\(failure)")]
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
