import CFuse
import Foundation
import Logging
import Synchronization
import RangeFSCore

/// Answers kernel requests from the namespace and the file catalog. It holds no logic of its
/// own beyond translating: attributes into `stat`, results into replies, errors into errnos.
public final class FuseFilesystem: Sendable {
    private let tree: Mutex<MountedTree>
    let catalog: FileCatalog
    let mount: RunningMount
    /// Where `rangefs status`, `pause` and `resume` reach this mount.
    let controlSocketPath: String?
    let logger: Logger
    /// Names and sizes do not change under a mount, so the kernel may keep them a while.
    let attributeTimeout: Double = 300
    private let mountTime = Date()
    private let ownership: Ownership

    /// Who the files appear to belong to (`-o uid=,gid=,umask=`; default: the mounting user).
    public struct Ownership: Sendable {
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
    private let notifier = Mutex<FuseNotifier?>(nil)
    let passthrough: KernelPassthrough

    public init(tree: MountedTree, catalog: FileCatalog, mount: RunningMount, controlSocketPath: String?,
                ownership: Ownership = Ownership(), logger: Logger) {
        self.tree = Mutex(tree)
        self.ownership = ownership
        self.catalog = catalog
        self.mount = mount
        self.controlSocketPath = controlSocketPath
        self.logger = logger
        passthrough = KernelPassthrough(logger: logger)
        catalog.onRemoteChange { [weak self] url in self?.forgetKernelCopy(of: url) }
    }

    /// What the kernel is shown right now; each request works on one snapshot of it.
    private var current: MountedTree {
        tree.withLock { $0 }
    }

    /// After `rangefs refresh`: shows the new tree, and tells the kernel to forget the names
    /// that are gone or now lead elsewhere.
    public func replaceTree(with newTree: MountedTree, manifest: Manifest) {
        let old = tree.withLock { tree in
            defer { tree = newTree }
            return tree
        }
        guard let notifier = notifier.withLock({ $0 }) else { return }
        var stale: [(parent: InodeNumber, name: String)] = []
        var pending = [Namespace.rootInode]
        while let directory = pending.popLast() {
            for child in old.namespace.children(of: directory) {
                let now = newTree.namespace.lookup(parent: directory, name: child.name)
                let same = now.map { $0.isDirectory == child.isDirectory && newTree.catalogIndex(of: $0) == old.catalogIndex(of: child) } ?? false
                if !same {
                    stale.append((directory, child.name))
                } else if child.isDirectory {
                    pending.append(child.inode)
                }
            }
        }
        DispatchQueue.global().async { [stale] in
            for (parent, name) in stale { notifier.invalidate(parent: parent, name: name) }
        }
    }

    /// While mounted: the session to tell the kernel about changed files.
    func attach(_ notifier: FuseNotifier?) {
        self.notifier.withLock { $0 = notifier }
    }

    /// A remote file changed: the kernel must drop its cached size and pages of every path
    /// that shows it. Done off the caller's thread: a notification must never be sent from
    /// inside a request handler.
    private func forgetKernelCopy(of url: URL) {
        guard let notifier = notifier.withLock({ $0 }) else { return }
        let tree = current
        let entries = catalog.manifest.entries
        // Compared as text: building a URL for each of 100,000 entries would cost far more.
        let changed = SharedPrefixText(url.absoluteString)
        let inodes = catalog.activeEntries.filter { entries[$0].urlText == changed }.compactMap { tree.inode(of: entries[$0].path) }
        DispatchQueue.global().async {
            for inode in inodes { notifier.invalidate(inode: inode) }
        }
    }

    // MARK: Names and attributes

    func lookup(_ request: FuseRequest, parent: InodeNumber, name: String) {
        let tree = current
        guard let node = tree.namespace.lookup(parent: parent, name: name) else {
            return request.reply(error: ENOENT)
        }
        catalog.nameLookedUp(node, in: tree)
        withAttributes(of: node, in: tree, request) { request.reply(entry: $0, timeout: self.attributeTimeout) }
    }

    func getattr(_ request: FuseRequest, inode: InodeNumber) {
        let tree = current
        guard let node = tree.namespace.node(inode) else { return request.reply(error: ENOENT) }
        withAttributes(of: node, in: tree, request) { request.reply(attributes: $0, timeout: self.attributeTimeout) }
    }

    /// Calls `body` with the node's attributes once its size is known, or replies with the error.
    private func withAttributes(of node: NamespaceNode, in tree: MountedTree, _ request: FuseRequest,
                                _ body: @escaping @Sendable (stat) -> Void) {
        switch tree.catalogIndex(of: node) {
        case nil:
            body(directoryAttributes(node))
        case let index?:
            catalog.file(forEntry: index) { result in
                switch result {
                case .success(let file):
                    body(self.fileAttributes(node, file, modified: self.catalog.modified(ofEntry: index, file: file)))
                case .failure(let error): request.reply(error: error.errno)
                }
            }
        }
    }

    private func directoryAttributes(_ node: NamespaceNode) -> stat {
        var attributes = baseAttributes(node)
        attributes.st_mode = S_IFDIR | (0o555 & ~ownership.umask)
        attributes.st_nlink = 2
        attributes.st_size = 4096
        attributes.st_blocks = 8
        return attributes
    }

    private func fileAttributes(_ node: NamespaceNode, _ file: CachedFile, modified: Date?) -> stat {
        var attributes = baseAttributes(node)
        attributes.st_mode = S_IFREG | (0o444 & ~ownership.umask)
        attributes.st_nlink = 1
        attributes.st_size = off_t(file.layout.fileSize)
        attributes.st_blocks = blkcnt_t((file.layout.fileSize + 511) / 512)
        if let modified {
            attributes.st_mtim = timespec(date: modified)
            attributes.st_ctim = attributes.st_mtim
        }
        return attributes
    }

    private func baseAttributes(_ node: NamespaceNode) -> stat {
        var attributes = stat()
        attributes.st_ino = ino_t(node.inode)
        attributes.st_uid = ownership.uid
        attributes.st_gid = ownership.gid
        attributes.st_blksize = 128 * 1024
        let time = timespec(date: mountTime)
        attributes.st_atim = time
        attributes.st_mtim = time
        attributes.st_ctim = time
        return attributes
    }

    // MARK: Directories

    func opendir(_ request: FuseRequest, inode: InodeNumber, info: fuse_file_info) {
        let tree = current
        guard let node = tree.namespace.node(inode) else { return request.reply(error: ENOENT) }
        guard node.isDirectory else { return request.reply(error: ENOTDIR) }
        catalog.directoryOpened(inode, in: tree)
        request.reply(open: info)
    }

    func readdir(_ request: FuseRequest, inode: InodeNumber, size: Int, offset: Int) {
        let namespace = current.namespace
        guard let node = namespace.node(inode), node.isDirectory else { return request.reply(error: ENOTDIR) }
        let children = namespace.children(of: inode)
        // Offset n lists the n-th name: "." and ".." first, then the children. Each call makes
        // only the nodes it lists, since a directory may hold tens of thousands.
        func listed(_ index: Int) -> (name: String, inode: InodeNumber, mode: mode_t) {
            switch index {
            case 0: return (".", inode, S_IFDIR)
            case 1: return ("..", node.parent, S_IFDIR)
            default:
                let child = children[children.startIndex + index - 2]
                return (child.name, child.inode, child.isDirectory ? S_IFDIR : S_IFREG)
            }
        }
        var buffer = [CChar](repeating: 0, count: size)
        var used = 0
        var index = max(0, offset)
        while index < 2 + children.count {
            let (name, childInode, mode) = listed(index)
            var attributes = stat()
            attributes.st_ino = ino_t(childInode)
            attributes.st_mode = mode
            let needed = buffer.withUnsafeMutableBufferPointer { pointer in
                fuse_add_direntry(request.raw, pointer.baseAddress! + used, size - used, name, &attributes, off_t(index + 1))
            }
            if used + needed > size { break }
            used += needed
            index += 1
        }
        request.reply(bytes: buffer.prefix(used).map { UInt8(bitPattern: $0) })
    }

    // MARK: Files

    func open(_ request: FuseRequest, inode: InodeNumber, info: fuse_file_info) {
        let tree = current
        guard let node = tree.namespace.node(inode) else { return request.reply(error: ENOENT) }
        guard let index = tree.catalogIndex(of: node) else { return request.reply(error: EISDIR) }
        guard info.flags & O_ACCMODE == O_RDONLY else { return request.reply(error: EROFS) }
        catalog.open(entry: index) { result in
            switch result {
            case .success(let file):
                let mode = self.passthrough.mode(forOpening: inode, of: file.file)
                let handle = FuseOpenHandle(file: file, inode: inode, mode: mode)
                var info = info
                info.fh = UInt64(UInt(bitPattern: Unmanaged.passRetained(handle).toOpaque()))
                switch mode {
                case .passthrough(let backingID):
                    request.reply(open: info, backingID: backingID)
                case .cached:
                    // A complete file never changes again: the kernel may keep its pages.
                    rangefs_file_info_set_keep_cache(&info, file.file.isComplete ? 1 : 0)
                    request.reply(open: info)
                }
            case .failure(let error):
                request.reply(error: error.errno)
            }
        }
    }

    func read(_ request: FuseRequest, size: Int, offset: Int64, info: fuse_file_info) {
        guard offset >= 0 else { return request.reply(error: EINVAL) }
        Self.openHandle(info).file.read(offset: UInt64(offset), length: UInt64(size)) { result in
            switch result {
            case .success(let ready): request.reply(descriptor: ready.file.descriptor, range: ready.range)
            case .failure(let error): request.reply(error: error.errno)
            }
        }
    }

    func release(_ request: FuseRequest, info: fuse_file_info) {
        let pointer = UnsafeRawPointer(bitPattern: UInt(info.fh))!
        let handle = Unmanaged<FuseOpenHandle>.fromOpaque(pointer).takeRetainedValue()
        handle.file.close()
        passthrough.released(inode: handle.inode, mode: handle.mode)
        request.reply(error: 0)
    }

    private static func openHandle(_ info: fuse_file_info) -> FuseOpenHandle {
        let pointer = UnsafeRawPointer(bitPattern: UInt(info.fh))!
        return Unmanaged<FuseOpenHandle>.fromOpaque(pointer).takeUnretainedValue()
    }

    // MARK: Extended attributes

    func getxattr(_ request: FuseRequest, inode: InodeNumber, name: String, size: Int) {
        let tree = current
        guard let node = tree.namespace.node(inode) else { return request.reply(error: ENOENT) }
        // `ls -l` asks every file for its ACL and security label. "Not supported" (rather than
        // "no such attribute") tells it this filesystem has neither, and it stops asking.
        guard name.hasPrefix("user.") else { return request.reply(error: EOPNOTSUPP) }
        guard name.hasPrefix("user.rangefs."),
              let value = extendedAttributes(of: node, in: tree)[name] else { return request.reply(error: ENODATA) }
        request.reply(xattr: Array(value.utf8), bufferSize: size)
    }

    func listxattr(_ request: FuseRequest, inode: InodeNumber, size: Int) {
        let tree = current
        guard let node = tree.namespace.node(inode) else { return request.reply(error: ENOENT) }
        let names: [UInt8] = extendedAttributes(of: node, in: tree).keys.sorted().flatMap { name -> [UInt8] in Array(name.utf8) + [0] }
        request.reply(xattr: names, bufferSize: size)
    }

    private func extendedAttributes(of node: NamespaceNode, in tree: MountedTree) -> [String: String] {
        switch tree.catalogIndex(of: node) {
        case nil:
            guard node.inode == Namespace.rootInode else { return [:] }
            // The root tells the CLI which process to wait for and where to send commands.
            var attributes = ["user.rangefs.pid": String(getpid())]
            attributes["user.rangefs.control"] = controlSocketPath
            return attributes
        case let index?:
            let status = mount.fileStatus(ofEntry: index)
            var attributes = [
                "user.rangefs.url": status.url,
                "user.rangefs.state": status.state.rawValue,
                "user.rangefs.cached": String(status.cachedBytes),
            ]
            if let size = status.size {
                let percent = size == 0 ? 100 : Double(status.cachedBytes) * 100 / Double(size)
                attributes["user.rangefs.progress"] = String(format: "%.1f", percent)
            }
            attributes["user.rangefs.error"] = status.failure
            return attributes
        }
    }

    // MARK: The filesystem

    func statfs(_ request: FuseRequest) {
        var info = statvfs()
        info.f_bsize = 4096
        info.f_frsize = 4096
        info.f_namemax = 255
        let namespace = current.namespace
        info.f_files = fsfilcnt_t(namespace.fileCount + namespace.directoryCount)
        info.f_ffree = 0
        info.f_favail = 0
        // Full, read-only: the size is what the known files add up to, none of it free.
        info.f_blocks = fsblkcnt_t((catalog.knownBytes + 4095) / 4096)
        info.f_bfree = 0
        info.f_bavail = 0
        request.reply(statfs: info)
    }
}

extension timespec {
    init(date: Date) {
        let seconds = date.timeIntervalSince1970
        self.init(tv_sec: Int(seconds.rounded(.down)), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1_000_000_000))
    }
}
