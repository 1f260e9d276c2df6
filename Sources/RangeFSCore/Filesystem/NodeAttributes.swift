import Foundation

/// Who the files appear to belong to (`-o uid=,gid=,umask=`; default: the mounting user).
public struct FileOwnership: Sendable, Equatable {
    public var uid: uid_t
    public var gid: gid_t
    /// Permission bits cleared from every mode.
    public var umask: mode_t

    public init(uid: uid_t = getuid(), gid: gid_t = getgid(), umask: mode_t = 0) {
        self.uid = uid
        self.gid = gid
        self.umask = umask
    }
}

/// What `stat` shows of a node, ready to be copied field by field into a `struct stat`.
public struct NodeAttributes: Sendable, Equatable {
    public var inode: InodeNumber
    /// File type and permission bits (`S_IFDIR | 0555`, `S_IFREG | 0444`, less the umask).
    public var mode: mode_t
    public var linkCount: Int
    public var size: UInt64
    /// In 512-byte units.
    public var blocks: UInt64
    /// The I/O size the kernel is told to prefer.
    public var blockSize: Int
    public var uid: uid_t
    public var gid: gid_t
    public var accessed: Date
    public var modified: Date
    public var changed: Date

    public var isDirectory: Bool { mode & S_IFMT == S_IFDIR }

    /// A directory: read and search for everyone, shown the mount's start time.
    static func directory(_ inode: InodeNumber, ownership: FileOwnership, mountTime: Date) -> NodeAttributes {
        NodeAttributes(inode: inode, mode: S_IFDIR | (0o555 & ~ownership.umask), linkCount: 2, size: 4096, blocks: 8,
                       blockSize: preferredIOSize, uid: ownership.uid, gid: ownership.gid,
                       accessed: mountTime, modified: mountTime, changed: mountTime)
    }

    /// A file: read-only for everyone; modified when the server or manifest says, else at mount time.
    static func file(_ inode: InodeNumber, size: UInt64, modified: Date?, ownership: FileOwnership,
                     mountTime: Date) -> NodeAttributes {
        NodeAttributes(inode: inode, mode: S_IFREG | (0o444 & ~ownership.umask), linkCount: 1, size: size,
                       blocks: size.unitsRoundedUp(of: 512), blockSize: preferredIOSize, uid: ownership.uid, gid: ownership.gid,
                       accessed: mountTime, modified: modified ?? mountTime, changed: modified ?? mountTime)
    }

    /// Readers that honour `st_blksize` (cp, cat) then read in pieces worth a round trip.
    static let preferredIOSize = 128 * 1024
}

/// The filesystem's totals for `statfs`: full and read-only, so nothing is free.
public struct FilesystemTotals: Sendable, Equatable {
    public var blockSize: Int
    public var blocks: UInt64
    public var files: Int
    public var maximumNameLength: Int
}
