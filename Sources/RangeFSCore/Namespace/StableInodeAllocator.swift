/// Gives each path the same inode number on every mount, whatever the order of the
/// manifest: the number is a hash of the path, so kernels, NFS exports and tools
/// that remember inodes see a stable tree.
struct StableInodeAllocator {
    /// Inodes stay within 63 bits so they are positive when read as a signed `ino_t`.
    static let inodeMask: UInt64 = 0x7FFF_FFFF_FFFF_FFFF
    /// 0 is never a valid inode and 1 belongs to the root.
    static let firstFreeInode: UInt64 = 2

    /// The number for `path`: its hash, or the next number up that `isTaken` says is free.
    /// Call in an order that does not depend on the manifest (such as sorted paths), and record
    /// each number before asking for the next, so that a hash collision (astronomically rare)
    /// resolves the same way on every mount: the later path takes the next free number.
    /// The caller keeps the taken numbers: the namespace's own inode table already holds them.
    static func inode(for path: PathHash, isTaken: (InodeNumber) -> Bool) -> InodeNumber {
        var inode = path.value & inodeMask
        while inode < firstFreeInode || isTaken(inode) {
            inode = (inode &+ 1) & inodeMask
        }
        return inode
    }
}

/// A 64-bit hash of a full path ("a/b/c"), built one component at a time so a tree
/// walk hashes each byte once: FNV-1a, then a SplitMix64 finaliser so that paths
/// differing only in their last byte still spread across all bits.
struct PathHash {
    private static let offsetBasis: UInt64 = 0xCBF2_9CE4_8422_2325
    private static let prime: UInt64 = 0x0000_0100_0000_01B3

    /// The running FNV-1a state over the path's bytes.
    private let state: UInt64
    /// Whether the path is "", so the next component needs no "/" before it.
    private let isEmptyPath: Bool

    /// The hash of the root's path, "".
    static let root = PathHash(state: offsetBasis, isEmptyPath: true)

    private init(state: UInt64, isEmptyPath: Bool) {
        self.state = state
        self.isEmptyPath = isEmptyPath
    }

    /// The hash of this path followed by "/" (unless this is the root) and `name`.
    func appending(_ name: String) -> PathHash {
        appending(bytes: name.utf8)
    }

    /// The same, for a name given as its UTF-8 bytes.
    func appending(bytes name: some Sequence<UInt8>) -> PathHash {
        var state = self.state
        if !isEmptyPath {
            state = (state ^ UInt64(UInt8(ascii: "/"))) &* Self.prime
        }
        for byte in name {
            state = (state ^ UInt64(byte)) &* Self.prime
        }
        return PathHash(state: state, isEmptyPath: false)
    }

    /// The hash of a whole path given as text.
    init(path: String) {
        var hash = PathHash.root
        if !path.isEmpty {
            for component in path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
                hash = hash.appending(String(Substring(component)))
            }
        }
        self = hash
    }

    var value: UInt64 {
        var hash = state
        hash ^= hash >> 30
        hash &*= 0xBF58_476D_1CE4_E5B9
        hash ^= hash >> 27
        hash &*= 0x94D0_49BB_1331_11EB
        hash ^= hash >> 31
        return hash
    }
}
