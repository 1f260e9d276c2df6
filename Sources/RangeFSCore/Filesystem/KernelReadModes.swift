/// How the kernel serves the reads of one open file handle.
public enum KernelReadMode: Sendable, Equatable {
    /// Reads come here and their pages stay in the kernel's page cache.
    case cached
    /// The kernel reads the cache file itself (FUSE passthrough); reads never come here.
    case passthrough(backingID: Int32)
}

/// Chooses, per open handle, how the kernel reads it, and remembers the choices per inode.
///
/// Passthrough is the fastest way to read a complete file, but Linux puts rules on mixing it
/// (an open that breaks them fails with EIO): an inode with a page-cache handle open cannot get
/// a passthrough one, and once an inode has a passthrough handle open, every further handle
/// must be passthrough too, on the same backing file. So a file that changes on the server
/// while passed-through handles are open is read in the version they opened, whole, by every
/// handle until the last of them closes.
public struct KernelReadModes: Sendable {
    private struct Handles {
        var cached = 0
        var passthrough = 0
        var backingID: Int32?
    }

    private var handles: [InodeNumber: Handles] = [:]

    public init() {}

    /// The mode of a new handle on `inode`. `backingFile` is asked for a backing id when the
    /// inode's first passthrough handle opens; nil from it (passthrough unavailable, the data
    /// gone) means the page cache is used instead.
    public mutating func open(inode: InodeNumber, complete: Bool, backingFile: () -> Int32?) -> KernelReadMode {
        var entry = handles[inode] ?? Handles()
        defer { handles[inode] = entry }
        if entry.passthrough > 0, let backingID = entry.backingID {
            entry.passthrough += 1
            return .passthrough(backingID: backingID)
        }
        if entry.cached == 0, complete, let backingID = backingFile() {
            entry.passthrough = 1
            entry.backingID = backingID
            return .passthrough(backingID: backingID)
        }
        entry.cached += 1
        return .cached
    }

    /// Forgets a closed handle. Returns the inode's backing id when its last passthrough handle
    /// closed, for the caller to unregister.
    public mutating func forgetClosedHandle(inode: InodeNumber, mode: KernelReadMode) -> Int32? {
        guard var entry = handles[inode] else { return nil }
        var unused: Int32?
        switch mode {
        case .cached:
            entry.cached -= 1
        case .passthrough:
            entry.passthrough -= 1
            if entry.passthrough == 0 {
                unused = entry.backingID
                entry.backingID = nil
            }
        }
        handles[inode] = entry.cached == 0 && entry.passthrough == 0 ? nil : entry
        return unused
    }
}
