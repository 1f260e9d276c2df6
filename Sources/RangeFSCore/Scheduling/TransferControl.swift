import Synchronization

/// The part of a running transfer its plan may change while the client runs it: its purpose,
/// which may rise (a read that starts waiting on read-ahead or background work makes it a
/// `reader` transfer, so it is not held back behind others), and its end, which may come sooner
/// (a reader's own request brings the bytes past it, `FilePlan.cut`).
///
/// Shared, and the only mutable state a transfer shares: the plan (`FilePlan.Transfer.control`)
/// holds it only to hand it out in actions and never reads or changes it; the shell
/// (`CachedFile.perform`) raises and cuts it after the file's lock is released, and reads its
/// purpose under that lock as a request goes out; the client's loop thread and its write
/// callbacks read it (`TransferSpec.purpose`, `RangeRequest.wantedRange`). Its lock is a leaf,
/// taken under `CachedFile.state` and under `CurlInbox.state`; the raise handler runs after
/// it is released.
public final class TransferControl: Sendable {
    /// A struct, not a tuple: a closure kept in a tuple (or bare) inside a `Mutex` is wrapped in
    /// one more reabstraction thunk at every `withLock`, and a transfer reads its purpose for
    /// every piece it receives; the chain then overflows the stack when it is called or freed.
    private struct State {
        var purpose: TransferPurpose
        var end: UInt64?
        var onRaise: (@Sendable () -> Void)?
    }

    private let state: Mutex<State>

    public init(_ purpose: TransferPurpose) {
        state = Mutex(State(purpose: purpose))
    }

    public var purpose: TransferPurpose {
        state.withLock { $0.purpose }
    }

    /// Where the transfer was cut short: bytes from here on are not wanted. Nil while it was not.
    public var end: UInt64? {
        state.withLock { $0.end }
    }

    /// Makes the transfer a reader's from now on (`TransferPurpose.mayBeRaised`).
    public func raise() {
        let onRaise = state.withLock { state -> (@Sendable () -> Void)? in
            guard state.purpose != .reader else { return nil }
            state.purpose = .reader
            return state.onRaise
        }
        onRaise?()
    }

    /// The transfer wants no bytes from `offset` on: a request for its rest (after it gave its
    /// connection up, `CurlTransfer.remainder`) asks only up to there, and its pace is judged
    /// by what it still has to bring.
    public func endEarly(at offset: UInt64) {
        state.withLock { $0.end = min($0.end ?? offset, offset) }
    }

    /// The client's way to hear of a raise (to stop holding the transfer back at once).
    func whenRaised(_ handler: @escaping @Sendable () -> Void) {
        state.withLock { $0.onRaise = handler }
    }
}
