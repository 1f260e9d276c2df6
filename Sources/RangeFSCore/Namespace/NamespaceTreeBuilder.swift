/// Grows the directory tree from manifest paths, one component at a time, before
/// inode numbers exist. Nodes live in an array and refer to each other by index.
struct NamespaceTreeBuilder {
    struct Node {
        let name: String
        let parent: Int
        var kind: NodeKind
        var children: [Int] = []
    }

    static let rootIndex = 0

    private(set) var nodes: [Node] = [Node(name: "", parent: rootIndex, kind: .directory)]
    /// (parent index, exact name bytes) → node index.
    private(set) var childIndex: [ChildName: Int] = [:]

    /// Should entries clash, a directory wins over a file of the same path (it must
    /// exist for the paths below it), and the first of two equal file paths wins.
    init(entries: [ManifestEntry]) {
        childIndex.reserveCapacity(entries.count + entries.count / 8)
        nodes.reserveCapacity(entries.count + entries.count / 8 + 1)
        for (entryIndex, entry) in entries.enumerated() {
            var parent = Self.rootIndex
            let components = entry.path.components
            for (depth, component) in components.enumerated() {
                let isFile = depth == components.count - 1
                let key = ChildName(parent: parent, name: component)
                if let existing = childIndex[key] {
                    if !isFile { nodes[existing].kind = .directory }
                    parent = existing
                    continue
                }
                let index = nodes.count
                nodes.append(Node(name: component, parent: parent, kind: isFile ? .file(entryIndex: entryIndex) : .directory))
                nodes[parent].children.append(index)
                childIndex[key] = index
                parent = index
            }
        }
    }
}

/// A directory entry's key: its parent and the exact bytes of its name, since the
/// kernel compares names byte for byte (String equality would merge "é" and "e\u{301}").
struct ChildName: Hashable {
    let parent: Int
    let name: [UInt8]

    init(parent: Int, name: String) {
        self.parent = parent
        self.name = Array(name.utf8)
    }
}
