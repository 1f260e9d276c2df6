/// The pace a transfer's body came at while it was let run: from the request's start to its
/// latest byte, leaving out the time it was held (paused). Held time is not the server's pace:
/// a transfer held half a second after its first 192 KiB on loopback is still one whose rest
/// the server has sent by now. Owned by its `CurlTransfer`, on the client's thread.
struct TransferPace {
    /// When the request was handed to libcurl.
    let startedAt = ContinuousClock.now
    /// When its latest body byte arrived.
    private(set) var lastBodyAt: ContinuousClock.Instant?
    private var heldFor: Duration = .zero
    private var heldSince: ContinuousClock.Instant?

    mutating func bodyArrived() {
        lastBodyAt = .now
    }

    /// The transfer is held from now on, or let go.
    mutating func setHeld(_ held: Bool) {
        if held {
            heldSince = heldSince ?? .now
        } else if let since = heldSince {
            heldFor += .now - since
            heldSince = nil
        }
    }

    /// How long `rest` more bytes would take at the pace `received` bytes came; nil before the
    /// first byte.
    func restDuration(received: UInt64, rest: UInt64) -> Duration? {
        guard let lastBodyAt, received > 0 else { return nil }
        let receiving = max((lastBodyAt - startedAt - heldFor).timeInterval, 0)
        return .seconds(receiving * Double(rest) / Double(received))
    }
}
