import Foundation

/// The prefetcher's slots: how many transfers and probes run at once and of which kind, and
/// files left alone for a while after their fetch failed.
extension Prefetcher {
    /// What a slot holds: whole-file work never takes more than `maxDownloads` slots.
    enum Work {
        case wholeFile, headOrTail
    }

    func reserveSlot() -> Bool {
        state.withLock { state in
            let slots = state.heads.isFinished ? configuration.maxDownloads
                : max(configuration.maxDownloads, configuration.maxHeadTransfers)
            guard !state.stopped, !state.paused, state.running < slots else { return false }
            state.running += 1
            return true
        }
    }

    func freeSlot() {
        state.withLock { $0.running -= 1 }
    }

    var hasWholeFileSlot: Bool {
        state.withLock { $0.runningWholeFile < configuration.maxDownloads }
    }

    /// Takes the reserved slot for `work`: false when whole-file work has all it may have.
    func claim(_ work: Work) -> Bool {
        guard work == .wholeFile else { return true }
        return state.withLock { state in
            guard state.runningWholeFile < configuration.maxDownloads else { return false }
            state.runningWholeFile += 1
            return true
        }
    }

    func unclaim(_ work: Work) {
        if work == .wholeFile { state.withLock { $0.runningWholeFile -= 1 } }
    }

    func finished(_ key: String, host: String, work: Work, succeeded: Bool) {
        let until = ContinuousClock.now + configuration.failureBackoff
        state.withLock { state in
            if !succeeded { state.restingUntil[key] = until }
            state.hostShares.ended(on: host)
        }
        unclaim(work)
        freeSlot()
        pump()
    }

    func isResting(_ key: String) -> Bool {
        state.withLock { state in
            guard let until = state.restingUntil[key] else { return false }
            if ContinuousClock.now >= until {
                state.restingUntil[key] = nil
                return false
            }
            return true
        }
    }
}
