public typealias InodeNumber = UInt64

public enum NodeKind: Sendable, Equatable {
    case directory
    /// A remote file; the index points into `Manifest.entries`.
    case file(entryIndex: Int)
}

/// One file or directory in the mounted tree, as a namespace hands it out. Its full path is
/// not kept (a mount of 100,000 files would hold every path twice); ask the namespace.
public struct NamespaceNode: Sendable, Equatable {
    public let inode: InodeNumber
    /// The root is its own parent.
    public let parent: InodeNumber
    /// The last path component; empty for the root.
    public let name: String
    public let kind: NodeKind
    /// Where the namespace stores this node.
    let position: Int

    public var isDirectory: Bool { kind == .directory }
}
