/// The prefetcher's walk over the heads and tails of a manifest's files (policy `all`): one entry
/// at a time in manifest order, until its head and tail are here or on their way; an entry whose
/// size is still being found is passed and comes back after the others. Files are completed
/// once it is finished. Every step is O(1): a walk over 100,000 entries removes none from the
/// middle of an array.
struct HeadsWalk {
    private var entries: [Int]
    private var next = 0
    private var passed: [Int] = []
    /// Entries that left the walk: a new manifest's walk leaves them out.
    private var done: Set<Int> = []

    init(entries: [Int]) {
        self.entries = entries
    }

    var isFinished: Bool { next == entries.count && passed.isEmpty }

    /// Entries still to visit, those passed included.
    var remaining: Int { entries.count - next + passed.count }

    /// The entry to work on, or nil once the walk is finished. The passed entries come back
    /// once every other was visited.
    mutating func current() -> Int? {
        if next == entries.count, !passed.isEmpty {
            entries = passed
            passed = []
            next = 0
        }
        return next < entries.count ? entries[next] : nil
    }

    /// Up to `count` entries from the current one on, for a look ahead that leaves the walk's place.
    func upcoming(_ count: Int) -> ArraySlice<Int> {
        entries[next..<min(entries.count, next + count)]
    }

    /// `entry`, the current one, needs nothing more: its head and tail are here or on their
    /// way, or it is complete, or it failed. Nothing happens if another step moved on meanwhile.
    mutating func finish(_ entry: Int) {
        guard next < entries.count, entries[next] == entry else { return }
        done.insert(entry)
        next += 1
    }

    /// `entry`, the current one, must wait (its size is being found): it comes back later.
    mutating func pass(_ entry: Int) {
        guard next < entries.count, entries[next] == entry else { return }
        passed.append(entry)
        next += 1
    }

    /// A new manifest: its entries (in its order) not done in this walk before.
    mutating func restart(with entries: [Int]) {
        self.entries = entries.filter { !done.contains($0) }
        next = 0
        passed = []
    }
}
