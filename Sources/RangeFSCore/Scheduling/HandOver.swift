/// A held background transfer giving its connection up to a reader's request
/// (`CurlMultiLoop.giveUpConnection`). While it stood still its server went on sending into the
/// connection's buffers (on loopback a megabyte or more), which closing the connection would
/// throw away: it first takes what reached this machine, read at memory speed, then gives the
/// connection up. Owned by its `CurlTransfer`, on the client's thread.
struct HandOver {
    /// The reader's request waits this long at most.
    static let longest = Duration.milliseconds(50)
    /// It goes on at least this long (a loaded machine may not run the loop sooner)...
    static let least = Duration.milliseconds(5)
    /// ...and until no byte came for this long. Each round of the loop reads all the socket
    /// holds; on loopback the server's send buffer refills it as it is drained, over a distant
    /// link what is still on the way comes a round trip later and is given up.
    static let settle = Duration.milliseconds(2)

    let began: ContinuousClock.Instant

    init(began: ContinuousClock.Instant = .now) {
        self.began = began
    }

    /// Whether its time is up, whatever it took.
    func ranOutOfTime(now: ContinuousClock.Instant) -> Bool {
        now - began >= Self.longest
    }

    /// Whether it took what had arrived (its latest body byte came at `lastBodyAt`, and the
    /// kernel holds `unreadBytes` more on its connection), or its time is up. The bytes the
    /// socket holds are counted, not only guessed from the clock: on a loaded machine the loop
    /// may not read for longer than `settle`, and what it left there would be asked for again.
    func isOver(lastBodyAt: ContinuousClock.Instant?, unreadBytes: Int = 0, now: ContinuousClock.Instant) -> Bool {
        if ranOutOfTime(now: now) { return true }
        let elapsed = now - began
        guard elapsed >= Self.least, unreadBytes == 0 else { return false }
        return now - max(began, lastBodyAt ?? began) >= Self.settle
    }
}
