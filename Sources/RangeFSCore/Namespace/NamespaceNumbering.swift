/// Assigns every node of a built tree its inode number and full path, and orders
/// each directory's children by the bytes of their names.
struct NamespaceNumbering {
    /// Indexed like the tree's nodes.
    let inodes: [InodeNumber]
    let paths: [String]
    let sortedChildren: [[Int]]

    init(tree: NamespaceTreeBuilder) {
        let count = tree.nodes.count
        var inodes = [InodeNumber](repeating: 0, count: count)
        var paths = [String](repeating: "", count: count)
        var sortedChildren = [[Int]](repeating: [], count: count)
        var allocator = StableInodeAllocator(expectedCount: count)
        inodes[NamespaceTreeBuilder.rootIndex] = Namespace.rootInode

        // Directory by directory, depth first, children in byte order: the order depends
        // only on the set of paths, so collisions resolve identically on every mount.
        var pending: [(index: Int, hash: PathHash)] = [(NamespaceTreeBuilder.rootIndex, .root)]
        while let (index, hash) = pending.popLast() {
            let children = tree.nodes[index].children.sorted {
                tree.nodes[$0].name.utf8.lexicographicallyPrecedes(tree.nodes[$1].name.utf8)
            }
            sortedChildren[index] = children
            var directories: [(index: Int, hash: PathHash)] = []
            for child in children {
                let name = tree.nodes[child].name
                let childHash = hash.appending(name)
                inodes[child] = allocator.allocate(for: childHash)
                paths[child] = index == NamespaceTreeBuilder.rootIndex ? name : paths[index] + "/" + name
                if tree.nodes[child].kind == .directory { directories.append((child, childHash)) }
            }
            // Reversed so the stack pops them in ascending order.
            pending.append(contentsOf: directories.reversed())
        }

        self.inodes = inodes
        self.paths = paths
        self.sortedChildren = sortedChildren
    }
}
