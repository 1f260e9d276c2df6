import Foundation
import Logging
import Synchronization

// Design note: the filesystem core, the mount as the kernel sees it.
//
// - One call per operation, one answer: lookup and getattr give `NodeAttributes` once a file's
//   size is known; readdir a `DirectoryListing` (".", "..", the children; offset n is the n-th
//   name); open an `OpenedFile` (the handle's number and its read path); read `ReadyBytes` (a
//   cache file and the range in it, which the adapter splices to the kernel); getxattr and
//   listxattr an `AttributeAnswer`; statfs `FilesystemTotals`. opendir tells the catalog to probe
//   ahead of the listing.
// - Handles live in `OpenHandleTable`: the kernel's `fh` is a number, never a pointer, and no
//   number is handed out twice in a mount, so a stale one finds nothing (`EBADF`).
// - Errors: `FilesystemError` carries one `Cause`; `errno(for:)` in FilesystemError.swift is the
//   only place an errno is chosen. A fetch failure is `.fetch(FetchError)`, whose reason (the
//   server after its retries, the cache disk, a remote change, a failed sha256, the read
//   deadline, the unmount) has its errno in the same table.
// - The kernel link: `KernelLink` is what the core asks of the kernel outside replies
//   (invalidate an inode or a name, register and drop a passthrough backing file). The adapter
//   implements it; tests record it. Invalidations go out on the core's own serial queue, never
//   from inside a request's handler (`KernelForgetting`).
// - Read paths: `KernelReadPaths` decides per open handle whether the kernel reads through the
//   page cache or by passthrough, with `KernelReadModes` keeping the kernel's mixing rules per
//   inode; the first refused backing file turns passthrough off for the mount.

/// The mounted filesystem as the kernel sees it, without the kernel: it owns the tree on show,
/// the open file handles, the extended attributes and what the kernel must forget when files
/// change, and answers each operation with a value or one `FilesystemError`. The FUSE adapter
/// only translates its answers into replies; tests drive it without a mount.
///
/// Locks: `tree`, `handles`, `kernel` and `listAheadWindows` are each taken alone and never held
/// while calling the catalog or the kernel. `KernelReadPaths` holds its own lock while it opens
/// and registers a complete file's backing file (which takes that `CachedFile`'s state lock inside).
public final class MountedFilesystem: Sendable {
    /// What a successful open gives the kernel: the handle's number for `fh`, and how it reads.
    public struct OpenedFile: Sendable, Equatable {
        public var handle: UInt64
        public var readPath: ReadPath
    }

    public enum ReadPath: Sendable, Equatable {
        /// The kernel reads the registered cache file by itself (FUSE passthrough).
        case passthrough(backingID: Int32)
        /// Reads come here. With `keepCache` (a complete file, which never changes again) the
        /// kernel may keep the pages it has from earlier opens.
        case daemon(keepCache: Bool)
    }

    /// What the handle table holds for one open handle.
    private struct OpenHandle: Sendable {
        let file: OpenFile
        let inode: InodeNumber
        let mode: KernelReadMode
    }

    /// Names and sizes do not change under a mount (a refresh says so itself), so the kernel
    /// may keep them a while.
    public let attributeTimeout: Double = 300

    /// Leaf locks, this one and `handles` and `kernel` below: each is held only to read or
    /// replace its value; the catalog, the files and the kernel are called after it is released.
    private let tree: Mutex<MountedTree>
    private let catalog: FileCatalog
    /// For a tree made from a server's listings: lists each directory when first looked at.
    /// Nil for a manifest's tree, which is whole from the start.
    private let directories: ListedDirectories?
    private let fileStatus: @Sendable (Int) -> FileStatus
    /// Where `rangefs status`, `pause` and `resume` reach this mount (shown on the root).
    private let controlSocketPath: String?
    private let ownership: FileOwnership
    private let mountTime = Date()
    private let handles = Mutex(OpenHandleTable<OpenHandle>())
    /// A leaf lock as `handles`: held only while the windows are read and moved.
    private let listAheadWindows = Mutex(ListAheadWindows())
    private let kernel = Mutex<(any KernelLink)?>(nil)
    private let readPaths: KernelReadPaths
    /// Notifications wait here: they must never be sent from inside a request's handler.
    private let notifications = DispatchQueue(label: "rangefs.kernel-notifications")

    /// - Parameter fileStatus: a catalog entry's state as `rangefs status` shows it.
    public init(tree: MountedTree, catalog: FileCatalog, directories: ListedDirectories? = nil,
                fileStatus: @escaping @Sendable (Int) -> FileStatus,
                controlSocketPath: String?, ownership: FileOwnership = FileOwnership(), logger: Logger) {
        self.tree = Mutex(tree)
        self.catalog = catalog
        self.directories = directories
        self.fileStatus = fileStatus
        self.controlSocketPath = controlSocketPath
        self.ownership = ownership
        readPaths = KernelReadPaths(logger: logger)
        catalog.onRemoteChange { [weak self] url in self?.forgetKernelCopy(of: url) }
    }

    /// While mounted: the kernel to notify and to register backing files with; nil after.
    public func attach(_ kernel: (any KernelLink)?) {
        self.kernel.withLock { $0 = kernel }
    }

    /// What the kernel is shown right now; each request works on one snapshot of it.
    private var current: MountedTree {
        tree.withLock { $0 }
    }

    private var attachedKernel: (any KernelLink)? {
        kernel.withLock { $0 }
    }

    /// After `rangefs refresh`: shows the new tree, and tells the kernel to forget the names
    /// that are gone or now lead elsewhere.
    public func replaceTree(with newTree: MountedTree) {
        let old = tree.withLock { tree in
            defer { tree = newTree }
            return tree
        }
        guard let kernel = attachedKernel else { return }
        let stale = KernelForgetting.staleNames(from: old, to: newTree)
        notifications.async {
            for (parent, name) in stale { kernel.invalidate(parent: parent, name: name) }
        }
    }

    private func forgetAttributes(of inode: InodeNumber) {
        guard let kernel = attachedKernel else { return }
        notifications.async { kernel.invalidate(inode: inode) }
    }

    /// A remote file changed: the kernel must drop its cached size and pages of every path that shows it.
    private func forgetKernelCopy(of url: URL) {
        guard let kernel = attachedKernel else { return }
        let inodes = KernelForgetting.inodes(showing: url, in: current, entries: catalog.manifest.entries,
                                             activeEntries: catalog.activeEntries)
        notifications.async {
            for inode in inodes { kernel.invalidate(inode: inode) }
        }
    }

    // MARK: Names and attributes

    public func lookup(parent: InodeNumber, name: String,
                       completion: @escaping @Sendable (Result<NodeAttributes, FilesystemError>) -> Void) {
        whenListed(parent) { [self] listed in
            if case .failure(let error) = listed { return completion(.failure(FilesystemError(.fetch(error)))) }
            let tree = current
            guard let node = tree.namespace.lookup(parent: parent, name: name) else {
                return completion(.failure(FilesystemError(.noSuchEntry)))
            }
            catalog.nameLookedUp(node, in: tree, recentListingTime: directories?.recentListingTime ?? .zero)
            attributes(of: node, in: tree, completion: completion)
        }
    }

    /// Runs `body` once the directory `inode` is listed: at once in a manifest's tree, for a
    /// directory listed already, or for any other inode (whose caller then finds what it finds).
    private func whenListed(_ inode: InodeNumber, _ body: @escaping @Sendable (Result<Void, FetchError>) -> Void) {
        guard let directories else { return body(.success(())) }
        let namespace = current.namespace
        guard let node = namespace.node(inode), node.isDirectory else { return body(.success(())) }
        let path = node.inode == Namespace.rootInode
            ? nil : EntryPath(trustedComponents: namespace.path(of: node).split(separator: "/").map(String.init))
        directories.ensureListed(path, completion: body)
    }

    public func attributes(of inode: InodeNumber,
                           completion: @escaping @Sendable (Result<NodeAttributes, FilesystemError>) -> Void) {
        let tree = current
        guard let node = tree.namespace.node(inode) else { return completion(.failure(FilesystemError(.noSuchEntry))) }
        attributes(of: node, in: tree, completion: completion)
    }

    /// A directory's at once; a file's once its size is known (which may take a probe).
    private func attributes(of node: NamespaceNode, in tree: MountedTree,
                            completion: @escaping @Sendable (Result<NodeAttributes, FilesystemError>) -> Void) {
        guard let index = tree.catalogIndex(of: node) else {
            return completion(.success(.directory(node.inode, ownership: ownership, mountTime: mountTime)))
        }
        if let held = versionHeldOpen(on: node.inode) {
            return completion(.success(.file(node.inode, size: held.layout.fileSize, modified: catalog.modified(ofEntry: index, file: held),
                                             ownership: ownership, mountTime: mountTime)))
        }
        if let stated = catalog.statedAttributes(ofEntry: index) {
            return completion(.success(.file(node.inode, size: stated.size, modified: stated.modified,
                                             ownership: ownership, mountTime: mountTime)))
        }
        catalog.file(forEntry: index) { [self] result in
            completion(result.map { file in
                .file(node.inode, size: file.layout.fileSize, modified: catalog.modified(ofEntry: index, file: file),
                      ownership: ownership, mountTime: mountTime)
            }.mapError { FilesystemError(.fetch($0)) })
        }
    }

    // MARK: Directories

    /// Opens a directory for listing, once its names are known (in a listed tree, after the
    /// server's listing of it arrived).
    public func openDirectory(_ inode: InodeNumber, completion: @escaping @Sendable (Result<Void, FilesystemError>) -> Void) {
        guard let node = current.namespace.node(inode) else { return completion(.failure(FilesystemError(.noSuchEntry))) }
        guard node.isDirectory else { return completion(.failure(FilesystemError(.notADirectory))) }
        whenListed(inode) { [self] listed in
            if case .failure(let error) = listed { return completion(.failure(FilesystemError(.fetch(error)))) }
            catalog.directoryOpened(inode, in: current, recentListingTime: directories?.recentListingTime ?? .zero)
            completion(.success(()))
        }
        listSiblingsAhead(of: node)
    }

    /// Directories a walk will open next are listed while it reads this one: a few, and more
    /// as the walk goes on (`ListAheadWindows`).
    private func listSiblingsAhead(of node: NamespaceNode) {
        guard let directories, node.inode != Namespace.rootInode else { return }
        let namespace = current.namespace
        let siblings = namespace.children(of: node.parent)
        let opened = node.position - siblings.startIndex
        let ahead = listAheadWindows.withLock {
            $0.toListAhead(parent: node.parent, opened: opened, childCount: siblings.count)
        }
        let next = ahead.map { siblings[siblings.startIndex + $0] }.filter(\.isDirectory)
        guard !next.isEmpty else { return }
        directories.listAhead(next.map { EntryPath(trustedComponents: namespace.path(of: $0).split(separator: "/").map(String.init)) })
    }

    public func listDirectory(_ inode: InodeNumber) -> Result<DirectoryListing, FilesystemError> {
        let namespace = current.namespace
        guard let node = namespace.node(inode), node.isDirectory else { return .failure(FilesystemError(.notADirectory)) }
        return .success(DirectoryListing(directory: node, children: namespace.children(of: inode)))
    }

    // MARK: Files

    /// Opens a file for reading (`flags` as `open(2)` got them), once its size is known.
    public func open(_ inode: InodeNumber, flags: Int32,
                     completion: @escaping @Sendable (Result<OpenedFile, FilesystemError>) -> Void) {
        let tree = current
        guard let node = tree.namespace.node(inode) else { return completion(.failure(FilesystemError(.noSuchEntry))) }
        guard let index = tree.catalogIndex(of: node) else { return completion(.failure(FilesystemError(.isADirectory))) }
        guard flags & O_ACCMODE == O_RDONLY else { return completion(.failure(FilesystemError(.readOnly))) }
        let stated = catalog.statedAttributes(ofEntry: index)
        catalog.open(entry: index) { [self] result in
            // The kernel was told the listing's size; the server's own differs (the file changed
            // since it was listed): it must ask again.
            if case .success(let file) = result, let stated, stated.size != file.file.layout.fileSize {
                forgetAttributes(of: inode)
            }
            completion(result.map { file in
                let kernel = attachedKernel
                let mode = readPaths.mode(forOpening: inode, of: file.file, kernel: kernel)
                let handle = handles.withLock { $0.insert(OpenHandle(file: file, inode: inode, mode: mode)) }
                switch mode {
                case .passthrough(let backingID): return OpenedFile(handle: handle, readPath: .passthrough(backingID: backingID))
                case .cached: return OpenedFile(handle: handle, readPath: .daemon(keepCache: file.file.isComplete))
                }
            }.mapError { FilesystemError(.fetch($0)) })
        }
    }

    /// The bytes of an open file at `offset`: a cache file and the range in it, once they are there.
    public func read(handle: UInt64, offset: Int64, size: Int,
                     completion: @escaping @Sendable (Result<ReadyBytes, FilesystemError>) -> Void) {
        guard offset >= 0 else { return completion(.failure(FilesystemError(.negativeOffset))) }
        guard let open = handles.withLock({ $0[handle] }) else { return completion(.failure(FilesystemError(.unknownHandle))) }
        let timing = ReadTiming(metrics: catalog.metrics)
        open.file.read(offset: UInt64(offset), length: UInt64(size)) { result in
            timing.answered(result)
            completion(result.mapError { FilesystemError(.fetch($0)) })
        }
        timing.returned()
    }

    /// Closes a handle: after the kernel's release, or when the reply to its open could not be
    /// delivered (the open was interrupted), so that the file does not count as open for ever.
    @discardableResult
    public func closeHandle(_ handle: UInt64) -> Result<Void, FilesystemError> {
        guard let open = handles.withLock({ $0.remove(handle) }) else { return .failure(FilesystemError(.unknownHandle)) }
        // The kernel may have been kept at a discarded version's size for this handle's sake.
        if open.file.file.isInvalidated { forgetAttributes(of: open.inode) }
        open.file.close()
        readPaths.handleClosed(inode: open.inode, mode: open.mode, kernel: attachedKernel)
        return .success(())
    }

    /// The discarded version every handle open on `inode` reads, if they all read one. The
    /// kernel keeps one size per inode and ends a read at it without asking here: told the new,
    /// shorter version's size, it would answer those handles' reads past it with a silent end of
    /// file. Kept at their version's size, their reads come here and get its bytes or EIO. Once
    /// a handle reads the new version, or they are closed (`closeHandle`), the new size is told.
    private func versionHeldOpen(on inode: InodeNumber) -> CachedFile? {
        let open = handles.withLock { $0.filter { $0.inode == inode } }.map(\.file.file)
        guard let held = open.first, open.allSatisfy({ $0 === held }), held.isInvalidated else { return nil }
        return held
    }

    /// How many handles are open now.
    public var openHandleCount: Int {
        handles.withLock { $0.count }
    }

    // MARK: Extended attributes

    public func attribute(named name: String, of inode: InodeNumber, bufferSize: Int) -> Result<AttributeAnswer, FilesystemError> {
        if current.namespace.node(inode) != nil, let refusal = ExtendedAttributes.refusal(of: name) { return .failure(refusal) }
        return extendedAttributes(of: inode)
            .flatMap { ExtendedAttributes.value(named: name, in: $0) }
            .flatMap { AttributeAnswer.fitting($0, into: bufferSize) }
    }

    public func attributeNames(of inode: InodeNumber, bufferSize: Int) -> Result<AttributeAnswer, FilesystemError> {
        extendedAttributes(of: inode).flatMap { AttributeAnswer.fitting(ExtendedAttributes.nameList($0), into: bufferSize) }
    }

    private func extendedAttributes(of inode: InodeNumber) -> Result<[String: String], FilesystemError> {
        let tree = current
        guard let node = tree.namespace.node(inode) else { return .failure(FilesystemError(.noSuchEntry)) }
        if let index = tree.catalogIndex(of: node) { return .success(ExtendedAttributes.ofFile(fileStatus(index))) }
        guard node.inode == Namespace.rootInode else { return .success([:]) }
        return .success(ExtendedAttributes.ofRoot(pid: getpid(), controlSocketPath: controlSocketPath))
    }

    // MARK: The filesystem

    /// Full and read-only: the size is what the known files add up to, none of it free.
    public var totals: FilesystemTotals {
        let namespace = current.namespace
        return FilesystemTotals(blockSize: 4096, blocks: catalog.knownBytes.unitsRoundedUp(of: 4096),
                                files: namespace.fileCount + namespace.directoryCount, maximumNameLength: 255)
    }
}
