/// What the client's loop asks of a transfer it schedules: its purpose, read afresh each time
/// (a range's may be raised while it runs), and the bytes it still wants after a cut.
extension TransferSpec {
    /// A range's purpose as its plan set it (`TransferControl`); probes and documents have their own.
    var purpose: TransferPurpose {
        switch self {
        case .probe: .probe
        case .range(let request, _, _): request.control.purpose
        case .document: .document
        }
    }

    /// A background range kept to `--max-rate`: it starts only while the background's rate
    /// budget has bytes left (`BackgroundRateBudget`). One raised to a reader's while it waited
    /// is not background work any more and starts at once, uncapped.
    var isRateCapped: Bool {
        guard case .range(let request, _, _) = self else { return false }
        return request.maxBytesPerSecond != nil && purpose.isBackgroundWork
    }

    /// The request as it goes out now: a range cut short while it waited to start (or to go on
    /// after giving its connection up) asks only for the bytes still wanted.
    var trimmedToItsEnd: TransferSpec {
        guard case .range(var request, let sink, let completion) = self, !request.wholeBody else { return self }
        let wanted = request.wantedRange
        guard !wanted.isEmpty, wanted != request.range else { return self }
        request.range = wanted
        return .range(request, sink: sink, completion: completion)
    }
}
