import Foundation
import Synchronization

/// The network side of a cached file: range requests go out, their bytes are written to the
/// data file as they arrive, and their ends are handed to the plan.
extension CachedFile {
    /// Begins an attempt of transfer `id` and sends it. One round trip of the lock: a retry
    /// comes after its delay, on a queue of its own, long after the step that decided it.
    /// `readAheadFrom`: bytes from there on are fetched ahead of the reader that asked (nil: none are).
    func startFetch(id: Int, bytes: Range<UInt64>, control: TransferControl, wholeBody: Bool, readAheadFrom: UInt64? = nil) {
        let (attempt, replyFile) = state.withLock { ($0.plan.startAttempt(id, now: .now), $0.dataFile) }
        send(attempt, id: id, bytes: bytes, control: control, wholeBody: wholeBody, readAheadFrom: readAheadFrom,
             replyFile: replyFile)
    }

    /// Sends the request of an attempt the plan began (`FilePlan.startAttempt`), or performs
    /// what it decided instead; `replyFile`: the data file when it began.
    func send(_ start: FilePlan.AttemptStart, id: Int, bytes: Range<UInt64>, control: TransferControl, wholeBody: Bool,
              readAheadFrom: UInt64?, replyFile: DataFile?) {
        let source: FetchSource
        switch start.attempt {
        case .request(let target): source = target
        case .later(let actions): return perform(actions, file: replyFile)
        }
        // The prefetcher's work (heads and tails included, which a waiting reader does not hold
        // back) keeps within --max-rate and tells nothing of a reader's speed.
        let background = start.isBackgroundWork
        var request = RangeRequest(url: source.requestURL(origin: url), headers: source.requestHeaders(headers, origin: url),
                                   range: bytes, expectedSize: layout.fileSize, validator: source.validator, control: control,
                                   maxBytesPerSecond: background ? environment.policy.backgroundBytesPerSecond : nil,
                                   wholeBody: wholeBody)
        request.conditional = start.conditional
        let asked = request.url
        if start.learnsVersion {
            request.versionCheck = { [self] info in versionReplied(info, asked: asked) }
        }
        let host = request.url.serverKey
        environment.client.fetch(request, sink: { [self] data, offset in
            environment.metrics.fetched(data.count, at: offset, readAheadFrom: readAheadFrom, background: background)
            return receive(transfer: id, data, at: offset, host: host)
        }, completion: { [self] result in
            // A reader's request that ended tells its host's speed (too short a transfer for
            // `receive` to measure still counts here), from its first byte on: counted in, a
            // server that answers slowly would look slow and get ever smaller requests, each
            // paying its answer time again.
            let now = ContinuousClock.now
            // The file's own server served a range: nothing is held against it (`RangeIgnoringServers`).
            if case .success = result, !wholeBody, host == url.serverKey { events.rangesServed(self) }
            update { state in
                if !background, case .success = result, let transfer = state.plan.transfers[id],
                   let speed = transfer.replyBytesPerSecond(at: now) {
                    environment.hostRates.record(speed, over: transfer.measuredSpan(at: now), host: host, at: now)
                }
                return state.plan.transferEnded(id, result, now: now)
            }
        })
    }

    /// Stores bytes as they arrive and answers every read they complete; a reader's transfer
    /// tells `host`'s speed. False stops the transfer: also once it was cut short and has
    /// brought what it still wants (`FilePlan+Joining`).
    /// Two round trips of the lock per piece, the write between them: under the lock, a write of
    /// up to half a megabyte would keep the file's readers (answered from the cache) and its
    /// other transfers waiting on the disk. The first asks what is still wanted, the second
    /// marks what was written and answers its readers.
    private func receive(transfer id: Int, _ data: UnsafeRawBufferPointer, at offset: UInt64, host: String) -> Bool {
        guard let target = state.withLock({ state -> (file: DataFile, count: UInt64, promised: UInt64)? in
            let count = state.plan.bytesWanted(by: id, at: offset, count: UInt64(data.count))
            guard let file = state.dataFile, count > 0 else { return nil }
            return (file, count, state.plan.takeReservation(of: id, for: count))
        }) else { return false }
        let (file, count, promised) = target
        // Nothing is written below the floor, also when another program filled the disk meanwhile.
        guard budget.claim(count, reservedPart: promised) else { return stopForSpace(transfer: id) }
        do {
            try file.write(UnsafeRawBufferPointer(rebasing: data.prefix(Int(count))), at: offset)
        } catch {
            if CacheBudget.isOutOfSpace(error) { return stopForSpace(transfer: id) }
            environment.logger.error("\(error)")
            state.withLock { $0.plan.lastFailure = "\(error)" }
            return false
        }
        let now = ContinuousClock.now
        let (actions, replyFile, speed, reachedCut) = state.withLock { state in
            (state.plan.bytesWritten(by: id, at: offset, count: count, now: now), state.dataFile,
             state.plan.readerTransferSpeed(id, now: now), state.plan.hasReachedItsCut(id))
        }
        guard let actions else { return false }
        if let speed { environment.hostRates.record(speed.bytesPerSecond, over: speed.span, host: host, at: now) }
        perform(actions, file: replyFile)
        return count == UInt64(data.count) && !reachedCut
    }

    /// The reply to a request that went out before the file's version was known names it (on
    /// the transfer's thread, before its body is used): nil lets it fill the cache. The version
    /// learned is saved before any of the reply's bytes can be committed (one commit queue).
    private func versionReplied(_ info: RemoteFileInfo, asked: URL) -> RemoteError? {
        let (refused, actions, file) = state.withLock { state in
            let (refused, actions) = state.plan.versionReplied(info, asked: asked)
            return (refused, actions, state.dataFile)
        }
        perform(actions, file: file)
        return refused
    }

    /// Ends a transfer whose bytes the cache has no room for (its client sees a refusing sink).
    private func stopForSpace(transfer id: Int) -> Bool {
        state.withLock { $0.plan.stopForSpace(id) }
        return false
    }

    // MARK: Verify

    /// Where `rangefs verify` asks about this file: the place its ranges come from.
    public var verificationRequest: (url: URL, headers: [String: String]) {
        let source = state.withLock { $0.plan.source }
        return (source.requestURL(origin: url), source.requestHeaders(headers, origin: url))
    }

    /// Compares the cached version with what the server says now (`rangefs verify`, which
    /// probed `verificationRequest.url`); a different size, or another validator from the same
    /// place, discards this version. Returns why it differs, or nil.
    func verify(against info: RemoteFileInfo, probedURL: URL) -> String? {
        let (why, actions, file) = state.withLock { state in
            let (why, actions) = state.plan.verified(info, probedURL: probedURL)
            return (why, actions, state.dataFile)
        }
        perform(actions, file: file)
        return why
    }
}

// MARK: Mirrors

extension CachedFile {
    /// Asks source number `index` (at `target`) for the file's size and validator, after
    /// `delay`; the plan decides what its answer means (`FilePlan.sourceProbed`). The headers
    /// of the manifest do not go to another origin (`FetchSource.headers`).
    func probeSource(_ index: Int, at target: URL, after delay: Duration) {
        let headers = FetchSource.headers(self.headers, sentTo: target, origin: url)
        DispatchQueue.global().asyncAfter(deadline: .now() + delay.timeInterval) { [self] in
            environment.client.probe(url: target, headers: headers, connection: .own) { [self] result in
                update { $0.plan.sourceProbed(index, result, now: .now, probed: target) }
            }
        }
    }
}

extension CachedFile {
    /// A refreshed manifest lists `mirrors` after the file's URL (`FilePlan.relist`).
    func relist(mirrors: [URL]) {
        update { $0.plan.relist(mirrors: mirrors) }
    }
}

// MARK: Piece hashes

extension CachedFile {
    /// Hashes piece `index` (at `bytes` in the data file) off the transfer thread and hands the
    /// plan what it found (`FilePlan.pieceChecked`). The plan keeps the file open meanwhile
    /// (`isIdle`), and no transfer writes into a piece being checked: its bytes are all written.
    func verifyPiece(_ index: Int, _ bytes: Range<UInt64>, expected: [UInt8], token: Int, in file: DataFile?) {
        DispatchQueue.global(qos: .userInitiated).async { [self] in
            let check: FilePlan.PieceCheck
            do {
                guard let file else { throw CacheError("its cache file is closed") }
                let digest = try file.sha256Digest(of: bytes)
                check = digest == expected ? .matched : .mismatched(digest.lowercaseHex)
            } catch {
                check = .unreadable("\(error)")
            }
            update { $0.plan.pieceChecked(index, token: token, check, now: .now) }
        }
    }
}
