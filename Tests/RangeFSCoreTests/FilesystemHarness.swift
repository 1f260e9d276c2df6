import FaultServer
import Foundation
import Logging
import Synchronization
@testable import RangeFSCore

/// A mounted filesystem without a mount: the façade over the catalog of a `FetchEngineHarness`
/// (a `FaultServer` on loopback, a cache directory of its own). `close()` (or letting go of it)
/// stops the transfers and removes the directory.
final class FilesystemHarness {
    let engine: FetchEngineHarness
    let filesystem: MountedFilesystem
    let tree: MountedTree
    var server: FaultServer { engine.server }
    var catalog: FileCatalog { engine.catalog }
    var mount: RunningMount { engine.mount }

    /// Publishes `files` (name → bytes) and mounts a manifest with one entry per `paths`
    /// element (path in the mount → published name).
    convenience init(files: [String: [UInt8]], paths: [(path: String, name: String)], ownership: FileOwnership = FileOwnership()) throws {
        try self.init(engine: try FetchEngineHarness(files: files, paths: paths), ownership: ownership)
    }

    /// The façade over `engine`'s catalog, which it then owns.
    init(engine: FetchEngineHarness, ownership: FileOwnership = FileOwnership()) throws {
        self.engine = engine
        let manifest = engine.catalog.manifest
        tree = MountedTree(manifest: manifest, catalogIndices: Array(manifest.entries.indices))
        var logger = Logger(label: "rangefs-test")
        logger.logLevel = .critical
        let mount = engine.mount
        filesystem = MountedFilesystem(tree: tree, catalog: engine.catalog, fileStatus: { mount.fileStatus(ofEntry: $0) },
                                       controlSocketPath: engine.directory.controlSocketPath, ownership: ownership, logger: logger)
    }

    func close() {
        engine.close()
    }

    func inode(_ path: String) -> InodeNumber {
        tree.inode(of: try! EntryPath(validating: path))!
    }

    // MARK: The operations, waited for (at most 30 s)

    func lookup(_ name: String, in parent: InodeNumber = Namespace.rootInode) throws -> Result<NodeAttributes, FilesystemError> {
        try Self.wait { filesystem.lookup(parent: parent, name: name, completion: $0) }
    }

    func attributes(_ inode: InodeNumber) throws -> Result<NodeAttributes, FilesystemError> {
        try Self.wait { filesystem.attributes(of: inode, completion: $0) }
    }

    func openDirectory(_ inode: InodeNumber) throws -> Result<Void, FilesystemError> {
        try Self.wait { filesystem.openDirectory(inode, completion: $0) }
    }

    func open(_ inode: InodeNumber, flags: Int32 = O_RDONLY) throws -> Result<MountedFilesystem.OpenedFile, FilesystemError> {
        try Self.wait { filesystem.open(inode, flags: flags, completion: $0) }
    }

    /// The bytes a read answers with, copied out of the cache file.
    func read(_ handle: UInt64, offset: Int64, size: Int) throws -> Result<[UInt8], FilesystemError> {
        let ready = try Self.wait { filesystem.read(handle: handle, offset: offset, size: size, completion: $0) }
        return ready.map { ready in
            (try? ready.file.read(count: ready.range.count, at: ready.range.lowerBound)) ?? []
        }
    }

    /// Calls `start` and waits for the value it hands its completion.
    static func wait<Value: Sendable>(timeout: Double = 30, _ start: (@escaping @Sendable (Value) -> Void) -> Void) throws -> Value {
        let box = Mutex<Value?>(nil)
        let done = DispatchSemaphore(value: 0)
        start { value in
            box.withLock { $0 = value }
            done.signal()
        }
        guard done.wait(timeout: .now() + timeout) == .success, let value = box.withLock({ $0 }) else {
            throw HarnessTimeout()
        }
        return value
    }

    /// Polls `condition` every 10 ms until it holds or `timeout` seconds pass.
    static func eventually(timeout: Double = 30, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            if Date() >= deadline { return false }
            usleep(10_000)
        }
        return true
    }
}

struct HarnessTimeout: Error, CustomStringConvertible {
    var description: String { "no answer within the time limit" }
}

/// The kernel as the filesystem reaches it, recorded: what it was told to forget, which backing
/// files were registered and released. `refusal` makes registration fail with that errno.
final class RecordingKernel: KernelLink {
    struct Record {
        var inodes: [InodeNumber] = []
        var names: [String] = []
        var registered: [Int32] = []
        var unregistered: [Int32] = []
    }

    let passesThrough: Bool
    private let refusal: Int32?
    private let record = Mutex(Record())
    private let nextID = Atomic<Int32>(40)

    init(passesThrough: Bool = true, refusal: Int32? = nil) {
        self.passesThrough = passesThrough
        self.refusal = refusal
    }

    var recorded: Record { record.withLock { $0 } }

    func invalidate(inode: InodeNumber) {
        record.withLock { $0.inodes.append(inode) }
    }

    func invalidate(parent: InodeNumber, name: String) {
        record.withLock { $0.names.append("\(parent)/\(name)") }
    }

    func registerBackingFile(descriptor: Int32) -> Result<Int32, KernelRefusal> {
        if let refusal { return .failure(KernelRefusal(errno: refusal)) }
        let id = nextID.add(1, ordering: .relaxed).newValue
        record.withLock { $0.registered.append(id) }
        return .success(id)
    }

    func unregisterBackingFile(_ backingID: Int32) {
        record.withLock { $0.unregistered.append(backingID) }
    }
}

extension Result {
    var error: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }

    var value: Success? {
        if case .success(let value) = self { return value }
        return nil
    }
}
