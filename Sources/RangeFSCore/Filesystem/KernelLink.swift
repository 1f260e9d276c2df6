/// What the filesystem asks of the kernel besides answering requests: forgetting what it
/// keeps of changed files, and registering cache files it may read by itself (passthrough).
/// The FUSE adapter implements it with `fuse_lowlevel_notify_*` and the passthrough ioctls.
///
/// Notifications may be sent from any thread, but never from inside a request's handler
/// (the kernel may wait on that very request): the filesystem sends them from a queue of its own.
public protocol KernelLink: Sendable {
    /// The kernel drops the cached attributes and pages of `inode`.
    func invalidate(inode: InodeNumber)
    /// The kernel forgets that `name` in `parent` leads where it did.
    func invalidate(parent: InodeNumber, name: String)
    /// Whether the kernel took up passthrough when the mount started (Linux 6.9+, root, not
    /// turned off); without it no cache file is opened to be offered.
    var passesThrough: Bool { get }
    /// Registers an open cache file for passthrough: its backing id, or the errno of the refusal
    /// (ENOTSUP when the kernel or the mount does not offer passthrough).
    func registerBackingFile(descriptor: Int32) -> Result<Int32, KernelRefusal>
    func unregisterBackingFile(_ backingID: Int32)
}

/// An errno the kernel answered with.
public struct KernelRefusal: Error, Sendable, Equatable {
    public var errno: Int32

    public init(errno: Int32) {
        self.errno = errno
    }
}
