import Foundation

/// Transfers as they run and end: bytes arriving, success, retries, the search for where the
/// file is served now, final failures and remote changes.
extension FilePlan {
    /// Takes from a transfer's promise the part that covers `count` arriving bytes.
    mutating func takeReservation(of id: Int, for count: UInt64) -> UInt64 {
        let promised = min(transfers[id]?.reserved ?? 0, count)
        transfers[id]?.reserved -= promised
        return promised
    }

    /// `count` bytes of transfer `id` were written at `offset`: answers every read they
    /// complete. Nil when the transfer is gone or the bytes are not where it stands (the
    /// transfer must stop).
    mutating func bytesWritten(by id: Int, at offset: UInt64, count: UInt64, now: ContinuousClock.Instant) -> [Action]? {
        guard var transfer = transfers[id], transfer.frontier == offset else { return nil }
        transfer.written += count
        if transfer.rateSample == nil { transfer.rateSample = (now, transfer.written) }
        if transfer.frontier > transfer.bytes.upperBound {
            // Cut short while these bytes were being written: they are in the file all the same.
            transfer.bytes = transfer.bytes.lowerBound..<transfer.frontier
        }
        rate.record(Int(count), at: now)
        transfers[id] = transfer
        sourceWrote(offset..<(offset + count), by: id, now: now)
        let added = recordWritten(offset..<(offset + count))
        var actions = piecesToVerify(touching: offset..<(offset + count))
        actions += answerWaiters(overlapping: transfer.bytes)
        if added > 0 {
            actions.append(.cachedBytes(Int64(added)))
            uncommitted(at: now)
        }
        actions += commitIfDue(now: now)
        return actions
    }

    /// Records bytes just written; returns how many bytes of blocks became whole.
    mutating func recordWritten(_ bytes: Range<UInt64>) -> UInt64 {
        var completed: UInt64 = 0
        for block in layout.blocks(covering: bytes) where !available.contains(block) {
            let blockBytes = layout.byteRange(ofBlock: block)
            let merged = ((partial[block] ?? []) + [bytes.clamped(to: blockBytes)]).merged()
            // A whole block becomes available once every piece it holds part of matched its hash.
            if merged.count == 1, merged[0] == blockBytes, piecesVerified(covering: blockBytes) {
                available.insert(block)
                partial[block] = nil
                completed += UInt64(blockBytes.count)
            } else {
                partial[block] = merged
            }
        }
        return completed
    }

    /// The cache had no room for the bytes of transfer `id`: it ends without failing (`transferEnded`).
    mutating func stopForSpace(_ id: Int) {
        transfers[id]?.stoppedForSpace = true
    }

    /// Transfer `id` ended: done, to be retried, to look for where the file is now, or failed for good.
    mutating func transferEnded(_ id: Int, _ result: Result<Void, RemoteError>, now: ContinuousClock.Instant) -> [Action] {
        guard var transfer = transfers[id] else { return [] }
        if transfer.stoppedForSpace { return endedForSpace(transfer, id: id, now: now) }
        // Cut short and stopped once it had brought what it still wanted: done, not failed.
        let result = transfer.cut && transfer.frontier >= transfer.bytes.upperBound ? .success(()) : result
        var actions: [Action] = []
        var ended = true
        switch result {
        case .success:
            transfers[id] = nil
            actions += unreserving(transfer)
            lastFailure = nil
            sourceSucceeded(transfer, now: now)
        case .failure(let error):
            let remainder = transfer.frontier..<transfer.bytes.upperBound
            if invalidated != nil {
                // A version that changed on the server is not asked for again.
                transfers[id] = nil
                actions += unreserving(transfer)
                actions += finalFailure(error, of: remainder)
            } else if error == .conditionNotHonoured, !remainder.isEmpty {
                // Not the source's fault and not a change: the same request without the condition.
                actions += askWithoutCondition(id, remainder)
                ended = false
            } else if let (handled, gone) = failedAtSource(id, error, now: now) {
                // A file with mirrors: another source takes the rest (`FilePlan+Sources`).
                actions += handled
                ended = gone
            } else if !remainder.isEmpty, shouldFindSource(after: error, of: transfer) {
                // Kept in `transfers`, so its readers keep waiting for it.
                transfer.sourceLookups += 1
                transfers[id] = transfer
                if awaitingSource.isEmpty { actions.append(.findSource) }
                awaitingSource[id] = error
                ended = false
            } else if let delay = retryDelay(after: error, attempts: transfer.attempts), !remainder.isEmpty {
                transfer.attempts += 1
                // A stream without ranges can only start over; its bytes so far are kept.
                if transfer.wholeBody { transfer.written = 0 }
                transfer.rateSample = nil
                transfers[id] = transfer
                let retried = transfer.wholeBody ? transfer.bytes : remainder
                actions.append(.log(.warning, "GET \(name) bytes \(retried.lowerBound)-\(retried.upperBound - 1): \(error); retry \(transfer.attempts - 1) in \(delay)"))
                actions.append(.retry(id: id, bytes: retried, control: transfer.control,
                                      wholeBody: transfer.wholeBody, after: delay))
                ended = false
            } else {
                transfers[id] = nil
                actions += unreserving(transfer)
                actions += finalFailure(error, of: remainder)
            }
        }
        actions += answerWaiters(overlapping: transfer.bytes)
        var unmounting = false
        if case .failure(.cancelled) = result { unmounting = true }
        if !unmounting {
            actions += refetchForOrphanedWaiters()
            if transfer.startedAs.isForReader, result.isSuccess { actions += continueReadAhead(now: now) }
        }
        if ended, let observer = transfer.onFinish {
            actions.append(.notify(observer, result.isSuccess))
        }
        actions += commitIfDue(now: now, atOnce: unmounting)
        return actions
    }

    /// The server answered a conditional range request with the whole body of the version
    /// held (Apache refuses a date in `If-Range` for a file written within the last second):
    /// the file's requests go without the condition from now on, their replies' validators
    /// checked instead, and this one is asked again at once (it wrote nothing).
    private mutating func askWithoutCondition(_ id: Int, _ remainder: Range<UInt64>) -> [Action] {
        guard var transfer = transfers[id] else { return [] }
        var actions: [Action] = []
        if sendsCondition {
            sendsCondition = false
            actions.append(.log(.notice, "\(name): the server answered a conditional range request with the whole file; asking without the condition"))
        }
        if transfer.wholeBody { transfer.written = 0 }
        transfer.rateSample = nil
        transfers[id] = transfer
        let retried = transfer.wholeBody ? transfer.bytes : remainder
        actions.append(.retry(id: id, bytes: retried, control: transfer.control, wholeBody: transfer.wholeBody, after: .zero))
        return actions
    }

    /// What the budget promised an ended transfer and it did not write goes back.
    func unreserving(_ transfer: Transfer) -> [Action] {
        transfer.reserved > 0 ? [.unreserve(transfer.reserved)] : []
    }

    /// A transfer stopped for lack of room: nothing failed. Its readers get their bytes from the
    /// network unstored; background work on the file waits for space.
    private mutating func endedForSpace(_ transfer: Transfer, id: Int, now: ContinuousClock.Instant) -> [Action] {
        transfers[id] = nil
        var actions = unreserving(transfer)
        actions += answerWaiters(overlapping: transfer.bytes)
        actions += readThroughOrphanedWaiters()
        if let observer = transfer.onFinish {
            waitingForSpace = true
            actions.append(.notify(observer, true))
        }
        actions += commitIfDue(now: now, atOnce: true)
        return actions
    }

    /// Whether a failed transfer should first ask the manifest URL where the file is now: a
    /// redirect led to another copy, or the place a redirect once led to no longer answers
    /// (a mirror gone). Twice at most per transfer.
    func shouldFindSource(after error: RemoteError, of transfer: Transfer) -> Bool {
        guard invalidated == nil, transfer.sourceLookups < 2 else { return false }
        switch error {
        case .servedElsewhere:
            return true
        case .changed, .cancelled, .rangesNotSupported, .conditionNotHonoured, .localStorage:
            return false
        case .status, .transport, .refused, .protocolViolation:
            // Transient trouble is retried where it is first; a final one leaves that mirror.
            return source.location != nil && retryDelay(after: error, attempts: transfer.attempts) == nil
        }
    }

    /// The manifest URL said where the file is now (`findSource`): carry on there when it holds
    /// the same version (another mirror of the same size), start over when the file really changed.
    mutating func sourceFound(_ result: Result<RemoteFileInfo, RemoteError>) -> [Action] {
        let waiting = awaitingSource
        awaitingSource = [:]
        var actions: [Action] = []
        let verdict: FetchSource.Verdict
        switch result {
        case .success(let info):
            verdict = source.verdict(on: info, probedURL: url, origin: url, size: layout.fileSize)
        case .failure(let error):
            // Nowhere to go: each transfer fails with what it met.
            actions.append(.log(.warning, "\(name): cannot find where it is served now: \(error)"))
            verdict = .same
        }
        switch verdict {
        case .changed(let why):
            for id in waiting.keys { actions += endTransfer(id, succeeded: false) }
            return actions + remoteChanged(because: why)
        case .moved(let newSource):
            actions.append(.log(.notice, "\(name) is served from \(newSource.location?.redactedForDisplay ?? name) now (\(waiting.values.first.map { "\($0)" } ?? "moved"))"))
            source = newSource
            actions.append(.saveSource(newSource))
        case .same:
            break
        }
        for (id, error) in waiting.sorted(by: { $0.key < $1.key }) {
            guard var transfer = transfers[id] else { continue }
            let remainder = transfer.frontier..<transfer.bytes.upperBound
            let stillThere: Bool
            if case .moved = verdict { stillThere = false } else { stillThere = true }
            if stillThere, case .failure = result {
                actions += endTransfer(id, succeeded: false)
                actions += finalFailure(error, of: remainder)
                continue
            }
            if stillThere, case .servedElsewhere = error, transfer.sourceLookups >= 2 {
                actions += endTransfer(id, succeeded: false)
                actions += finalFailure(error, of: remainder)
                continue
            }
            transfer.attempts = 1
            if transfer.wholeBody { transfer.written = 0 }
            transfer.rateSample = nil
            transfers[id] = transfer
            let retried = transfer.wholeBody ? transfer.bytes : remainder
            actions.append(.retry(id: id, bytes: retried, control: transfer.control,
                                  wholeBody: transfer.wholeBody, after: .zero))
        }
        return actions
    }

    /// Forgets a transfer that will not go on, telling its observer.
    private mutating func endTransfer(_ id: Int, succeeded: Bool) -> [Action] {
        guard let transfer = transfers.removeValue(forKey: id) else { return [] }
        return transfer.onFinish.map { [.notify($0, succeeded)] } ?? []
    }

    /// How long to wait before trying again, or nil when the error is final or the attempts are
    /// spent: the policy's one rule for every kind of request.
    func retryDelay(after error: RemoteError, attempts: Int) -> Duration? {
        policy.retryDelay(after: error, attempts: attempts)
    }

    private mutating func finalFailure(_ error: RemoteError, of remainder: Range<UInt64>) -> [Action] {
        // This version was already given up (changed or rejected) and said so once.
        if let reason = invalidated {
            return failWaiters(overlapping: remainder, error: FetchError(name, reason))
        }
        switch error {
        case .cancelled:
            return failWaiters(overlapping: remainder, error: FetchError(name, .unmounting))
        case .rangesNotSupported:
            // Nothing was written from that reply. From now on one stream fills the file; its
            // readers wait for the stream (another transfer may have started it already).
            guard !streamOnly else { return planStream() }
            streamOnly = true
            return [.log(.warning, "\(name): the server ignores ranges; reading the file as one stream")]
                + planStream() + [.rangesIgnored]
        case .changed(let why):
            return remoteChanged(because: why)
        default:
            lastFailure = error.description
            return [.log(.error, "GET \(name) bytes \(remainder.lowerBound)-\(remainder.upperBound &- 1) failed: \(error)")]
                + failWaiters(overlapping: remainder, error: FetchError(name, .remote(error)))
        }
    }

    /// This version of the file is gone from the server: fail its readers, forget its data.
    mutating func remoteChanged(because why: String) -> [Action] {
        guard invalidated == nil else { return [] }
        invalidated = .remoteChanged(why)
        lastFailure = invalidated?.description
        let failure = FetchError(name, .remoteChanged(why))
        // The catalog forgets this version before its readers hear of the change: a reader that
        // opens the file again at once must find the new version, not this one.
        var actions: [Action] = [
            .log(.error, "\(name) changed on the server (\(why)); its cached data is discarded and it starts over"),
            .cachedBytes(-Int64(cachedBytes(of: available))), .invalidated,
        ]
        actions += failWaiters(overlapping: 0..<UInt64.max, error: failure, evenIfAvailable: true)
        return actions
    }

    /// A probe of `probedURL` (`rangefs verify`) answered `info`: another place holding the same
    /// version becomes the source; a different size or validator discards this version.
    /// Returns why it differs (nil when it does not) and what to do.
    mutating func verified(_ info: RemoteFileInfo, probedURL: URL) -> (String?, [Action]) {
        switch source.verdict(on: info, probedURL: probedURL, origin: url, size: layout.fileSize) {
        case .same:
            return (nil, [])
        case .moved(let newSource):
            source = newSource
            return (nil, [.saveSource(newSource)])
        case .changed(let why):
            // A rejected version is unreadable already: the catalog only has to forget it, so
            // that the server's new version is fetched.
            return (why, rejected ? [.invalidated] : remoteChanged(because: why))
        }
    }
}
