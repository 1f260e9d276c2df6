/// The names of one directory as `readdir` lists them: "." and ".." first, then the children.
/// Position n is the n-th name, and the kernel's offset for the name after it is n + 1. A
/// listing makes only the nodes it is asked for, since a directory may hold tens of thousands.
public struct DirectoryListing: RandomAccessCollection, Sendable {
    public struct Name: Sendable, Equatable {
        public var name: String
        public var inode: InodeNumber
        public var isDirectory: Bool
        /// Where listing continues after this name.
        public var nextOffset: Int
    }

    private let directory: NamespaceNode
    private let children: NamespaceNodes

    init(directory: NamespaceNode, children: NamespaceNodes) {
        self.directory = directory
        self.children = children
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { 2 + children.count }

    public subscript(position: Int) -> Name {
        switch position {
        case 0: return Name(name: ".", inode: directory.inode, isDirectory: true, nextOffset: 1)
        case 1: return Name(name: "..", inode: directory.parent, isDirectory: true, nextOffset: 2)
        default:
            let child = children[children.startIndex + position - 2]
            return Name(name: child.name, inode: child.inode, isDirectory: child.isDirectory, nextOffset: position + 1)
        }
    }

    /// The names from the kernel's `offset` on (a negative offset starts at the beginning).
    public func names(from offset: Int) -> Slice<DirectoryListing> {
        self[Swift.min(Swift.max(0, offset), endIndex)...]
    }
}
