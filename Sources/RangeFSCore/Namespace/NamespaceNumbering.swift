/// Lays out a drafted tree for good: every node in the order its inode number is allocated,
/// so that each directory's children sit side by side in byte order of their names, and
/// gives each node its inode number.
struct NamespaceNumbering {
    /// One node of the final layout.
    struct StoredNode: Sendable {
        enum Kind: Sendable {
            /// Its children are the nodes at these positions.
            case directory(children: Range<Int32>)
            case file(entryIndex: Int32)
        }

        let inode: InodeNumber
        /// Position of the parent; the root is its own parent.
        let parent: Int32
        let name: NodeNames.Span
        var kind: Kind
    }

    static let rootPosition = 0

    private(set) var nodes: ContiguousArray<StoredNode> = []
    /// Finds a node's position from its inode number.
    private(set) var inodeIndex: PositionTable

    init(tree: NamespaceTreeBuilder) {
        let draft = tree.nodes
        let names = tree.names
        let children = Self.childrenByDirectory(draft)
        var childOrder = children.order
        inodeIndex = PositionTable(capacity: draft.count)
        nodes.reserveCapacity(draft.count)
        append(StoredNode(inode: Namespace.rootInode, parent: 0, name: .empty, kind: .directory(children: 0..<0)))

        // Directory by directory, depth first, children in byte order: the order depends
        // only on the set of paths, so collisions resolve identically on every mount.
        var pending: [(draft: Int32, position: Int32, hash: PathHash)] = [(NamespaceTreeBuilder.rootIndex, 0, .root)]
        while let (directory, position, hash) = pending.popLast() {
            let range = children.range(of: directory)
            // Equal names next to each other: a directory first (it must exist for the paths
            // below it), then files in manifest order.
            childOrder[range].sort { lhs, rhs in
                let left = draft[Int(lhs)]
                let right = draft[Int(rhs)]
                if !names.equal(left.name, right.name) { return names.precedes(left.name, right.name) }
                if left.isDirectory != right.isDirectory { return left.isDirectory }
                return (left.entryIndex ?? -1) < (right.entryIndex ?? -1)
            }
            let first = Int32(nodes.count)
            var directories: [(draft: Int32, position: Int32, hash: PathHash)] = []
            var previous: NodeNames.Span?
            for child in childOrder[range] {
                let node = draft[Int(child)]
                // A clash: the first of the equal names wins.
                if let previous, names.equal(previous, node.name) { continue }
                previous = node.name
                let childHash = names.pathHash(hash, appending: node.name)
                let kind: StoredNode.Kind = node.entryIndex.map { .file(entryIndex: $0) } ?? .directory(children: 0..<0)
                let inode = StableInodeAllocator.inode(for: childHash) { inode in
                    Self.position(of: inode, in: inodeIndex, nodes) != nil
                }
                append(StoredNode(inode: inode, parent: position, name: node.name, kind: kind))
                if node.isDirectory { directories.append((child, Int32(nodes.count - 1), childHash)) }
            }
            nodes[Int(position)].kind = .directory(children: first..<Int32(nodes.count))
            // Reversed so the stack pops them in ascending order.
            pending.append(contentsOf: directories.reversed())
        }
    }

    private mutating func append(_ node: StoredNode) {
        nodes.append(node)
        inodeIndex.insert(nodes.count - 1, hash: Self.hash(node.inode)) { [nodes] in Self.hash(nodes[$0].inode) }
    }

    /// Inode numbers are hashes of paths already: their low bits spread evenly over the slots.
    static func hash(_ inode: InodeNumber) -> Int {
        Int(truncatingIfNeeded: inode)
    }

    static func position(of inode: InodeNumber, in index: PositionTable,
                         _ nodes: ContiguousArray<StoredNode>) -> Int? {
        index.first(hash: hash(inode)) { nodes[$0].inode == inode }
    }

    /// Each directory's draft children, grouped (not yet ordered) by a counting sort: one array
    /// of draft indices for the whole tree instead of one per directory.
    private static func childrenByDirectory(_ draft: ContiguousArray<NamespaceTreeBuilder.DraftNode>) -> DraftChildren {
        var starts = ContiguousArray<Int32>(repeating: 0, count: draft.count + 1)
        for node in draft.dropFirst() { starts[Int(node.parent) + 1] += 1 }
        for index in starts.indices.dropFirst() { starts[index] += starts[index - 1] }
        var next = starts
        var order = ContiguousArray<Int32>(repeating: 0, count: max(0, draft.count - 1))
        for (index, node) in draft.enumerated().dropFirst() {
            order[Int(next[Int(node.parent)])] = Int32(index)
            next[Int(node.parent)] += 1
        }
        return DraftChildren(starts: starts, order: order)
    }

    private struct DraftChildren {
        /// Directory `d`'s children are `order[starts[d]..<starts[d + 1]]`.
        let starts: ContiguousArray<Int32>
        let order: ContiguousArray<Int32>

        func range(of directory: Int32) -> Range<Int> {
            Int(starts[Int(directory)])..<Int(starts[Int(directory) + 1])
        }
    }
}
