/// Finds a node's position from its inode number in O(1), in 4 bytes a slot: an open-addressing
/// table of positions (linear probing). Inode numbers are hashes of paths, so their low bits
/// already spread evenly over the slots.
struct InodeIndex: Sendable {
    private static let empty: Int32 = -1
    private var slots: ContiguousArray<Int32>
    private let mask: Int

    /// Room for `capacity` inodes, at most half the slots in use so probes stay short.
    init(capacity: Int) {
        var slotCount = 8
        while slotCount < 2 * capacity { slotCount *= 2 }
        slots = ContiguousArray(repeating: Self.empty, count: slotCount)
        mask = slotCount - 1
    }

    /// Records that the node at `position` has `inode`, which must not be in the table yet
    /// (`StableInodeAllocator` hands out each number once).
    mutating func insert(_ inode: InodeNumber, at position: Int) {
        var slot = Int(truncatingIfNeeded: inode) & mask
        while slots[slot] != Self.empty {
            slot = (slot + 1) & mask
        }
        slots[slot] = Int32(position)
    }

    /// The position of the node with `inode`; `inodeAt` gives the inode of a stored position.
    func position(of inode: InodeNumber, inodeAt: (Int) -> InodeNumber) -> Int? {
        var slot = Int(truncatingIfNeeded: inode) & mask
        while slots[slot] != Self.empty {
            let position = Int(slots[slot])
            if inodeAt(position) == inode { return position }
            slot = (slot + 1) & mask
        }
        return nil
    }
}
