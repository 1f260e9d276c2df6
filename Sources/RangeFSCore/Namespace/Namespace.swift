/// The read-only directory tree of a mount, built once from a manifest.
///
/// Names are compared as exact UTF-8 bytes, as the kernel passes them.
public final class Namespace: Sendable {
    public static let rootInode: InodeNumber = 1

    /// Index 0 is the root.
    private let nodes: [NamespaceNode]
    private let indexByInode: [InodeNumber: Int]
    private let childIndex: [ChildName: Int]
    /// Per node, its children in byte order of their names (empty for files).
    private let sortedChildren: [[NamespaceNode]]
    public let fileCount: Int
    /// Includes the root.
    public let directoryCount: Int

    /// Expects a validated manifest. Should entries still clash, the tree stays
    /// consistent: a directory wins over a file of the same path, and the first of
    /// two files with the same path wins.
    public init(manifest: Manifest) {
        let tree = NamespaceTreeBuilder(entries: manifest.entries)
        let numbering = NamespaceNumbering(tree: tree)
        let nodes = tree.nodes.indices.map { index in
            let node = tree.nodes[index]
            return NamespaceNode(
                inode: numbering.inodes[index], parent: numbering.inodes[node.parent],
                name: node.name, kind: node.kind, path: numbering.paths[index])
        }
        var indexByInode: [InodeNumber: Int] = [:]
        indexByInode.reserveCapacity(nodes.count)
        for (index, inode) in numbering.inodes.enumerated() { indexByInode[inode] = index }

        self.nodes = nodes
        self.indexByInode = indexByInode
        self.childIndex = tree.childIndex
        self.sortedChildren = numbering.sortedChildren.map { $0.map { nodes[$0] } }
        self.directoryCount = nodes.reduce(0) { $0 + ($1.kind == .directory ? 1 : 0) }
        self.fileCount = nodes.count - directoryCount
    }

    public func node(_ inode: InodeNumber) -> NamespaceNode? {
        indexByInode[inode].map { nodes[$0] }
    }

    public func lookup(parent: InodeNumber, name: String) -> NamespaceNode? {
        guard let parentIndex = indexByInode[parent],
              let index = childIndex[ChildName(parent: parentIndex, name: name)]
        else { return nil }
        return nodes[index]
    }

    /// Sorted by the bytes of their names; empty for a file or an unknown inode.
    public func children(of directory: InodeNumber) -> [NamespaceNode] {
        indexByInode[directory].map { sortedChildren[$0] } ?? []
    }

    /// Up to `count` siblings that follow `node` in its directory's order (the order `readdir`
    /// lists them in), found by binary search.
    public func siblings(after node: NamespaceNode, count: Int) -> ArraySlice<NamespaceNode> {
        guard let parentIndex = indexByInode[node.parent], node.inode != Self.rootInode else { return [] }
        let siblings = sortedChildren[parentIndex]
        var low = 0
        var high = siblings.count
        while low < high {
            let middle = (low + high) / 2
            if siblings[middle].name.utf8.lexicographicallyPrecedes(node.name.utf8) {
                low = middle + 1
            } else {
                high = middle
            }
        }
        let start = min(siblings.count, low + 1)
        return siblings[start..<min(siblings.count, start + count)]
    }
}
