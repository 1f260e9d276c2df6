public typealias InodeNumber = UInt64

public enum NodeKind: Sendable, Equatable {
    case directory
    /// A remote file; the index points into `Manifest.entries`.
    case file(entryIndex: Int)
}

/// One file or directory in the mounted tree.
public struct NamespaceNode: Sendable, Equatable {
    public let inode: InodeNumber
    /// The root is its own parent.
    public let parent: InodeNumber
    /// The last path component; empty for the root.
    public let name: String
    public let kind: NodeKind
    /// Full path inside the mount: "" for the root, "a/b.mp3" below it.
    public let path: String

    public init(inode: InodeNumber, parent: InodeNumber, name: String, kind: NodeKind, path: String) {
        self.inode = inode
        self.parent = parent
        self.name = name
        self.kind = kind
        self.path = path
    }

    public var isDirectory: Bool { kind == .directory }
}
