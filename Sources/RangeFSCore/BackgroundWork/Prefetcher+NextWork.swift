import Foundation

/// What a free slot does next, in the prefetcher's order: pinned entries, files open now, the
/// heads and tails of the manifest's files (policy `all`), files opened earlier, then every
/// file whole in manifest order; first on a server with nothing running, if one has work.
extension Prefetcher {
    /// Starts one background transfer or size probe in a reserved slot; false if there is none
    /// to start. First only on a host with nothing running, if any has work; then anywhere.
    func startNext() -> Bool {
        let busy = state.withLock { $0.hostShares.busy }
        if !busy.isEmpty, startNext(onHostsOtherThan: busy) { return true }
        return startNext(onHostsOtherThan: [])
    }

    private func startNext(onHostsOtherThan busy: Set<String>) -> Bool {
        if hasWholeFileSlot, startNextUrgent(onHostsOtherThan: busy) { return true }
        guard configuration.policy != .none, catalog.budget.hasRoom(for: configuration.chunkBytes) else { return false }
        // While heads are fetched, files opened earlier wait for them: a library's scan opens every
        // file once, and the heads of the files it has not reached yet are what it needs next.
        let headsFirst = state.withLock { !$0.heads.isFinished }
        if hasWholeFileSlot {
            let files = headsFirst ? catalog.filesOpenNow() : catalog.filesInUse()
            for file in files where !busy.contains(file.url.serverKey) && startChunk(of: file) {
                return true
            }
        }
        guard configuration.policy == .all else { return false }
        if headsFirst {
            return busy.isEmpty ? startNextHeadOrTail() : startHeadOrTailAhead(onHostsOtherThan: busy)
        }
        guard hasWholeFileSlot else { return false }
        return busy.isEmpty ? startNextFromManifest() : startFromManifestAhead(onHostsOtherThan: busy)
    }

    /// Finds the size of an entry in a slot: that is background work on its host too. False
    /// when whole-file work has all its slots.
    @discardableResult
    private func startProbe(ofEntry index: Int, as work: Work = .wholeFile) -> Bool {
        guard claim(work) else { return false }
        let entry = catalog.manifest.entries[index]
        let (key, host) = (entry.urlString, entry.url.serverKey)
        state.withLock { $0.hostShares.started(on: host) }
        catalog.file(forEntry: index, priority: .background) { [self] result in
            state.withLock { _ = $0.headsProbing.remove(index) }
            finished(key, host: host, work: work, succeeded: result.isSuccess)
        }
        return true
    }

    /// Pinned entries first; one that is complete (or whose blocks are all on their way) leaves the list.
    private func startNextUrgent(onHostsOtherThan busy: Set<String>) -> Bool {
        for index in state.withLock({ $0.urgent }) {
            let key = catalog.manifest.entries[index].urlString
            guard !isResting(key), !busy.contains(catalog.manifest.entries[index].url.serverKey) else { continue }
            guard let file = catalog.knownFile(forEntry: index) else {
                return startProbe(ofEntry: index)
            }
            // Pinning is the user's request, not speculation: like a read, it may evict what is not pinned.
            if !file.isComplete, !catalog.budget.hasRoom(for: configuration.chunkBytes) {
                catalog.makeRoom(forRead: configuration.chunkBytes)
            }
            if startChunk(of: file) { return true }
            if file.isComplete { state.withLock { $0.urgent.removeAll { $0 == index } } }
        }
        return false
    }

    private func startChunk(of file: CachedFile) -> Bool {
        startTransfer(of: file, as: .wholeFile) { file.fetchNextMissing(maxBytes: configuration.chunkBytes, onFinish: $0) }
    }

    /// Starts one background transfer of `file` in the reserved slot (`start` asks the file for
    /// it with the observer of its end); false when it is resting or none starts.
    private func startTransfer(of file: CachedFile, as work: Work,
                               _ start: (_ onFinish: @escaping @Sendable (Bool) -> Void) -> Bool) -> Bool {
        let key = file.url.absoluteString
        guard !isResting(key), claim(work) else { return false }
        let host = file.url.serverKey
        // Counted before it starts: it may end (and be counted off) before `start` returns.
        state.withLock { $0.hostShares.started(on: host) }
        let started = start { [self] succeeded in
            finished(key, host: host, work: work, succeeded: succeeded)
        }
        if !started {
            state.withLock { $0.hostShares.ended(on: host) }
            unclaim(work)
        }
        return started
    }

    // MARK: Heads and tails

    /// What one entry's heads and tails need next.
    private enum HeadStep {
        /// A size probe or a transfer of its head or tail started.
        case started
        /// Its head and tail are here or on their way, or it is complete, or it failed (the
        /// completion walk comes back to it): it leaves the heads.
        case done
        /// Its size is being found: its head and tail come later.
        case later
        /// The cache has no room: the walk stops here and waits for space.
        case noRoom
    }

    /// Walks the heads from where it left off, staying on a file until its head and tail are
    /// on their way.
    private func startNextHeadOrTail() -> Bool {
        for _ in 0..<state.withLock({ $0.heads.remaining }) {
            guard let index = state.withLock({ $0.heads.current() }) else { return false }
            switch startHeadOrTail(ofEntry: index) {
            case .started: return true
            case .noRoom: return false
            case .done: state.withLock { $0.heads.finish(index) }
            case .later: state.withLock { $0.heads.pass(index) }
            }
        }
        return false
    }

    /// The next entries of the heads walk (`idleHostLookAhead` at most) searched for work on a
    /// server not in `busy`; the walk's place does not move.
    private func startHeadOrTailAhead(onHostsOtherThan busy: Set<String>) -> Bool {
        let upcoming = state.withLock { $0.heads.upcoming(Self.idleHostLookAhead) }
        let entries = catalog.manifest.entries
        for index in upcoming where !busy.contains(entries[index].url.serverKey) {
            if case .started = startHeadOrTail(ofEntry: index) { return true }
        }
        return false
    }

    /// Starts the next step of an entry's head and tail in the reserved slot: its size probe
    /// first when its size is not known (the tail needs it), then its head, then its tail.
    private func startHeadOrTail(ofEntry index: Int) -> HeadStep {
        let entry = catalog.manifest.entries[index]
        if isResting(entry.urlString) { return .done }
        if state.withLock({ $0.headsProbing.contains(index) }) { return .later }
        guard let file = catalog.knownFile(forEntry: index) else {
            state.withLock { _ = $0.headsProbing.insert(index) }
            startProbe(ofEntry: index, as: .headOrTail)
            return .started
        }
        if file.isComplete { return .done }
        let sizes = catalog.environment.learnedHeadTails.sizes(forType: HeadTailSizes.fileType(ofName: entry.path.lastComponent))
        if startTransfer(of: file, as: .headOrTail, {
            file.fetchHeadAndTail(sizes, maxBytes: configuration.chunkBytes, onFinish: $0)
        }) {
            return .started
        }
        return catalog.budget.hasRoom(for: configuration.chunkBytes) ? .done : .noRoom
    }

    /// The next entries of the manifest walk (`idleHostLookAhead` at most) searched for work on a
    /// server not in `busy`; the walk's place does not move.
    private func startFromManifestAhead(onHostsOtherThan busy: Set<String>) -> Bool {
        let upcoming = state.withLock { state -> [Int] in
            guard !state.pending.isEmpty else { return [] }
            return (0..<min(state.pending.count, Self.idleHostLookAhead)).map {
                state.pending[(state.cursor + $0) % state.pending.count]
            }
        }
        for index in upcoming {
            let entry = catalog.manifest.entries[index]
            guard !busy.contains(entry.url.serverKey), !isResting(entry.urlString) else { continue }
            guard let file = catalog.knownFile(forEntry: index) else {
                return startProbe(ofEntry: index)
            }
            if !file.isComplete, startChunk(of: file) { return true }
        }
        return false
    }

    /// Walks the manifest from where it left off, staying on a file until all of it is on its way.
    private func startNextFromManifest() -> Bool {
        let count = state.withLock { $0.pending.count }
        for _ in 0..<count {
            guard let index = state.withLock({ state -> Int? in
                guard !state.pending.isEmpty else { return nil }
                state.cursor %= state.pending.count
                return state.pending[state.cursor]
            }) else { return false }
            let key = catalog.manifest.entries[index].urlString
            if isResting(key) {
                advance(past: index, remove: false)
                continue
            }
            guard let file = catalog.knownFile(forEntry: index) else {
                // Size unknown yet: finding it takes this slot.
                guard startProbe(ofEntry: index) else { return false }
                advance(past: index, remove: false)
                return true
            }
            if file.isComplete {
                advance(past: index, remove: true)
                continue
            }
            if startChunk(of: file) { return true }
            advance(past: index, remove: false)
        }
        return false
    }

    private func advance(past index: Int, remove: Bool) {
        state.withLock { state in
            guard state.cursor < state.pending.count, state.pending[state.cursor] == index else { return }
            if remove {
                state.pending.remove(at: state.cursor)
            } else {
                state.cursor += 1
            }
        }
    }
}
