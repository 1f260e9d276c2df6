// # Scheduling: which transfer goes first, and which one waits
//
// A mount shares one link, and a few connections per server, between two kinds of demand: a
// program blocked in read(2) on bytes it needs now, and background work that fills the cache
// before anyone asks. The rules here keep the first from ever waiting behind the second, and
// leave the second whatever the first does not use. This folder owns them; the rest of the
// mount only says what each transfer is for.
//
// ## One vocabulary
// Every transfer has one `TransferPurpose`, and every rule is a question asked of it:
//
// | purpose         | what it is                                   | makes background wait | waits while readers wait | may be raised |
// | --------------- | -------------------------------------------- | --------------------- | ------------------------ | ------------- |
// | `reader`        | a read waits on its bytes                    | yes                   | no                       | -             |
// | `readAhead`     | a sequential reader's read-ahead, unwaited   | no                    | no                       | yes           |
// | `probe`         | a size probe (`ProbeQueue` orders them)      | yes                   | no                       | -             |
// | `document`      | a manifest, a feed, a listing's page         | yes                   | no                       | -             |
// | `headsAndTails` | the heads and tails a library scan reads next| no                    | no                       | yes           |
// | `background`    | whole-file completion                        | no                    | yes                      | yes           |
//
// `headsAndTails` and `background` are *background work*: they yield their connections to
// readers, start only within the background connection limit, keep within `--max-rate` (all of
// them together: `BackgroundRateBudget`, beside libcurl's cap on each) and say nothing of a
// reader's speed. A read that starts waiting on a transfer that may be raised
// raises it to `reader` (`TransferControl.raise`); nothing lowers one.
//
// ## The rules, in the order they act
// 1. Holding. While a transfer that makes background wait is handed in or running, `background`
//    transfers stand still: they stop receiving (TCP flow control slows their senders), from
//    their own write callback, within one buffer (`BackgroundGate`). Read-ahead holds nobody: a
//    player reads ahead for as long as it plays. Heads and tails are not held by readers: a
//    scan's reader waits on the network for every file whose head it reads next.
// 2. Quiets. Background work also stands still for a while with no reader waiting
//    (`BackgroundQuiet`): after a complete file is opened (the kernel reads it from the cache
//    disk, unseen), while programs read cached bytes faster than a link brings them (bound by
//    the CPU and the cache disk, `CachedReadPace`; not where the server is known to be slow),
//    while a program walks a near server's tree without opening files (heads and tails too:
//    such a walk is bound by the CPU), and just after the mount. A pause holds all background
//    work until resumed.
// 3. Connections. Background transfers never start on a server's last reserved connections
//    (`CurlClient.Configuration.connectionsKeptForReaders`). A reader's request that would
//    still queue for a connection makes one free: a background transfer whose rest comes within
//    `backgroundFinishesWithin` at its own pace (`TransferPace`, which leaves out the time it was
//    held) runs to its end, not held any more; a slower one takes what its server sent while it
//    stood still (`HandOver`), gives its connection up and asks for its rest again once readers
//    are done. Size probes libcurl still queues for that server go behind the reader's request
//    (`CurlMultiLoop+Scheduling`).
// 4. Streams. Every transfer has a connection of its own, HTTP/2 included, so read-ahead fans out
//    and a reader's bytes never queue behind another's inside one TCP connection; only a
//    listing's many small requests to an https server share one (`ConnectionRules`).
// 5. Late transfers. A reader waits for a running transfer only if it brings the reader's bytes
//    about as soon as a fresh request would. One that would be late is cut where its late bytes
//    begin (`FilePlan+Joining`, `TransferControl.endEarly`): it keeps what it brings first, the
//    reader's own request brings the rest, and no byte is fetched twice.
// 6. Shares. The prefetcher gives every server with work one slot before any gets a second
//    (`HostShares`). Probes go readers' first, then listings', then background ones, which wait
//    a moment after a probe a reader waited on so the reader's next request finds its idle
//    connection (`ProbeQueue`, `ProbePriority`: who waits for a file's size, not a transfer's
//    purpose).
//
// Why purposes and not a priority number: each rule is a yes or no about a pair (does A hold B
// still? may A take B's connection?), and no single order can say that read-ahead neither holds
// nor is held, or that heads and tails stand still for a pause but not for a reader.
//
// ## Where the state lives
// A transfer's purpose and its cut are shared by its file's plan and the client's loop thread
// in one `TransferControl`, behind a lock of its own (a leaf). The plan keeps its own copy of
// the purpose (`FilePlan.Transfer.purpose`), changed in the step that decides the raise, so the
// plan stays a value with no lock; it hands the control out in its actions and never reads or
// changes it. The shell (`CachedFile`) performs `.raise` and `.endEarly` on it after the file's
// lock is released; the loop reads it. The gate's conditions are atomics, read by the loop
// thread and by the write callbacks in the middle of `curl_multi_perform`.

/// What a transfer is for: the one fact every scheduling rule above is derived from.
public enum TransferPurpose: Sendable, Equatable, CaseIterable {
    /// A read waits on its bytes (its own, or read-ahead or background work a read now waits on).
    case reader
    /// A sequential reader's read-ahead that no read waits on yet: it goes out and gets its
    /// connection as a reader's request does, but background work goes on beside it.
    case readAhead
    /// A size probe (HEAD, or a one-byte GET).
    case probe
    /// A whole document: a manifest, a feed, a listing's page, a `PROPFIND`.
    case document
    /// Background work a reader is about to need: the heads and tails a library's scan reads next.
    case headsAndTails
    /// Background completion of whole files.
    case background

    /// Background work: yields its connection to readers, starts within the background
    /// connection limit, keeps within `--max-rate`, and tells nothing of a reader's speed.
    public var isBackgroundWork: Bool {
        self == .headsAndTails || self == .background
    }

    /// While a transfer of this purpose is handed in or running, `background` transfers stand still.
    public var makesBackgroundWait: Bool {
        self == .reader || self == .probe || self == .document
    }

    /// Stands still while a transfer that makes background wait runs (and during every quiet).
    public var waitsWhileReadersWait: Bool {
        self == .background
    }

    /// A read that starts waiting on it makes it a `reader` transfer.
    public var mayBeRaised: Bool {
        self == .readAhead || isBackgroundWork
    }

    /// Started for a reader (its own bytes or its read-ahead), not as background work.
    public var isForReader: Bool {
        self == .reader || self == .readAhead
    }
}
