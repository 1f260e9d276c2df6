/// A hash set of positions in an array the caller owns, 4 bytes a slot: it finds an element
/// by its hash and an equality test without holding a copy of its key. For indexes over
/// 100,000 elements where a `Dictionary` would store every key a second time (open addressing,
/// linear probing, at most half the slots in use so probes stay short).
struct PositionTable: Sendable {
    private static let empty: Int32 = -1
    private var slots: ContiguousArray<Int32>
    private(set) var count = 0

    /// Room for `capacity` positions before the table has to grow.
    init(capacity: Int = 0) {
        slots = ContiguousArray(repeating: Self.empty, count: Self.slotCount(for: capacity))
    }

    /// Adds `position`, whose element hashes to `hash`. `hashAt` gives the hash of the element
    /// at any position already added, to place them again when the table grows.
    mutating func insert(_ position: Int, hash: Int, hashAt: (Int) -> Int) {
        precondition(position >= 0 && position < Int(Int32.max), "position out of range")
        if 2 * (count + 1) > slots.count {
            let old = slots
            slots = ContiguousArray(repeating: Self.empty, count: Self.slotCount(for: count + 1))
            for stored in old where stored != Self.empty {
                place(stored, hash: hashAt(Int(stored)))
            }
        }
        place(Int32(position), hash: hash)
        count += 1
    }

    /// The position of the element that hashes to `hash` and `matches`. Meant for distinct
    /// elements: of equal ones, any may be found.
    func first(hash: Int, where matches: (Int) -> Bool) -> Int? {
        let mask = slots.count - 1
        var slot = hash & mask
        while slots[slot] != Self.empty {
            if matches(Int(slots[slot])) { return Int(slots[slot]) }
            slot = (slot + 1) & mask
        }
        return nil
    }

    private mutating func place(_ position: Int32, hash: Int) {
        let mask = slots.count - 1
        var slot = hash & mask
        while slots[slot] != Self.empty { slot = (slot + 1) & mask }
        slots[slot] = position
    }

    /// A power of two at least twice `capacity`.
    private static func slotCount(for capacity: Int) -> Int {
        var count = 8
        while count < 2 * capacity { count *= 2 }
        return count
    }
}
