import Foundation

/// Background work on one file (`BackgroundWork/`'s prefetcher asks): the next missing blocks,
/// the next part of its head and tail, and whether it waits for room or for a reader.
extension CachedFile {
    /// Background work on this file stopped (or may go on) for lack of room, as the
    /// prefetcher found; a complete file waits for nothing.
    public func setWaitingForSpace(_ waiting: Bool) {
        state.withLock { state in state.plan.waitingForSpace = waiting && !state.plan.complete }
    }

    /// Starts a background transfer of the next missing blocks nobody is fetching yet (at
    /// most `maxBytes`), and tells `onFinish` when it ends. Returns false when there is nothing
    /// left to start: the file is complete, or every missing block is already on its way.
    public func fetchNextMissing(maxBytes: UInt64, onFinish: @escaping @Sendable (Bool) -> Void) -> Bool {
        let actions = state.withLock { state -> [FilePlan.Action]? in
            switch state.plan.nextBackgroundStep(maxBytes: maxBytes, now: .now, onFinish: onFinish) {
            case .none: return nil
            case .start(let actions): return actions
            case .piece(let piece): return startBackgroundTransfer(of: piece, in: &state, onFinish: onFinish)
            }
        }
        guard let actions else { return false }
        perform(actions, file: nil)
        return true
    }

    /// Background work on it waits until a sequential reader stops (`FilePlan.readerZone`).
    public var backgroundWaitsForReader: Bool {
        state.withLock { $0.plan.backgroundWaitsForReader(now: .now) }
    }

    /// Starts a background transfer of the next part of the file's head and tail of `sizes`
    /// (`FilePlan+Heads`, at most `maxBytes`) that is neither here nor on its way, and tells
    /// `onFinish` when it ends. Returns false when there is none to start (or no room for it).
    /// A reader that waits does not hold it still (`TransferPurpose.headsAndTails`): a scan's
    /// reader, which waits on the network for every file whose head is not here yet, would
    /// otherwise hold back the heads it needs next for as long as it scans.
    func fetchHeadAndTail(_ sizes: HeadTailSizes, maxBytes: UInt64, onFinish: @escaping @Sendable (Bool) -> Void) -> Bool {
        let actions = state.withLock { state -> [FilePlan.Action]? in
            guard state.plan.wantsBackgroundWork, let piece = state.plan.nextHeadOrTailPiece(sizes, maxBytes: maxBytes) else {
                return nil
            }
            return startBackgroundTransfer(of: piece, in: &state, purpose: .headsAndTails, onFinish: onFinish)
        }
        guard let actions else { return false }
        perform(actions, file: nil)
        return true
    }

    /// Under the lock: opens the data file and starts a background transfer of `piece`, if the
    /// budget has room for it; nil when it does not start.
    private func startBackgroundTransfer(of piece: Range<UInt64>, in state: inout State, purpose: TransferPurpose = .background,
                                         onFinish: @escaping @Sendable (Bool) -> Void) -> [FilePlan.Action]? {
        do {
            _ = try openDataFile(&state)
        } catch {
            environment.logger.error("\(error)")
            return nil
        }
        // Background work never digs below the floor: it waits for room instead.
        guard budget.reserve(UInt64(piece.count)) else {
            state.plan.waitingForSpace = true
            return nil
        }
        return state.plan.startBackgroundTransfer(piece, purpose: purpose, onFinish: onFinish)
    }
}
