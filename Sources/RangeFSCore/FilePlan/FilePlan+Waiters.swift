import Foundation

/// Readers waiting for bytes: answered when their bytes are written, failed when nothing will
/// bring them, asked for again when their transfer left them behind.
extension FilePlan {
    mutating func answerWaiters(overlapping bytes: Range<UInt64>) -> [Action] {
        var actions: [Action] = []
        var waiting: [Waiter] = []
        for waiter in waiters {
            if waiter.bytes.overlaps(bytes), isAvailable(waiter.bytes) {
                actions.append(.answer(waiter.completion, waiter.bytes))
            } else {
                waiting.append(waiter)
            }
        }
        waiters = waiting
        return actions
    }

    mutating func failWaiters(overlapping bytes: Range<UInt64>, error: FetchError, evenIfAvailable: Bool = false) -> [Action] {
        var actions: [Action] = []
        var waiting: [Waiter] = []
        for waiter in waiters {
            if waiter.bytes.overlaps(bytes), evenIfAvailable || !isAvailable(waiter.bytes) {
                actions.append(.fail(waiter.completion, error))
            } else {
                waiting.append(waiter)
            }
        }
        waiters = waiting
        return actions
    }

    /// Reads that waited past their deadline fail rather than hang.
    mutating func expireWaiters(now: ContinuousClock.Instant) -> [Action] {
        guard waiters.contains(where: { $0.deadline <= now }) else { return [] }
        let late = waiters.filter { $0.deadline <= now }
        waiters.removeAll { $0.deadline <= now }
        return late.flatMap { waiter -> [Action] in
            [.log(.error, "read of \(name) timed out after \(policy.readDeadline)"),
             .fail(waiter.completion, FetchError(name, .timedOut(policy.readDeadline)))]
        }
    }

    /// Removes and returns the readers waiting for bytes that nothing will bring. Normally
    /// nothing is unbrought for a waiting reader; a failed commit can drop bytes a running
    /// transfer has already passed, and a transfer stopped for lack of room leaves its rest.
    mutating func takeOrphanedWaiters() -> [Waiter] {
        var orphaned: [Waiter] = []
        var waiting: [Waiter] = []
        for waiter in waiters {
            if missingPieces(of: waiter.bytes, allInFlight: true).isEmpty {
                waiting.append(waiter)
            } else {
                orphaned.append(waiter)
            }
        }
        waiters = waiting
        return orphaned
    }

    /// Fails the readers waiting for bytes that nothing will bring (after a failed commit:
    /// fetching again into a cache that cannot keep data would not end).
    mutating func failOrphanedWaiters(error: FetchError) -> [Action] {
        takeOrphanedWaiters().map { .fail($0.completion, error) }
    }

    /// Readers waiting for bytes that no transfer brings any more get them from the network
    /// without storing (the cache had no room to keep them).
    mutating func readThroughOrphanedWaiters() -> [Action] {
        takeOrphanedWaiters().map { .readThrough($0.bytes, $0.completion) }
    }

    /// When a transfer ends, readers still waiting for bytes that nothing will bring ask for
    /// exactly those pages again, so no reader is left to its deadline.
    mutating func refetchForOrphanedWaiters() -> [Action] {
        guard invalidated == nil, !streamOnly else { return [] }
        var actions: [Action] = []
        for waiter in waiters {
            for piece in missingPieces(of: pageAligned(pieceAligned(waiter.bytes)), allInFlight: true) {
                actions.append(startPageTransfer(bytes: piece))
            }
        }
        return actions
    }
}
