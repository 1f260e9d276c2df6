// Design note: the tree a mount shows.
//
// `Namespace` is the tree of one manifest: inode numbers (a hash of the path, so a tree rebuilt
// after a refresh or a listing keeps them, `StableInodeAllocator`), names, children, and
// directories with nothing known below them yet. It is immutable: a refresh or a listing builds
// a new one (`NamespaceTreeBuilder`) and `MountedTree` pairs it with the catalog's entry numbers.

/// The read-only directory tree of a mount, built once from a manifest.
///
/// Names are compared as exact UTF-8 bytes, as the kernel passes them. Built for 100,000
/// entries and more: nodes are small fixed-size records in one array, their names in one
/// byte buffer, and `NamespaceNode` values (with a `String` name) are made only when asked for.
public final class Namespace: Sendable {
    public static let rootInode: InodeNumber = 1

    /// Position 0 is the root; each directory's children are contiguous, in byte order of their names.
    private let nodes: ContiguousArray<NamespaceNumbering.StoredNode>
    private let names: NodeNames
    private let inodeIndex: PositionTable
    public let fileCount: Int
    /// Includes the root.
    public let directoryCount: Int

    /// Expects a validated manifest. Should entries still clash, the tree stays
    /// consistent: a directory wins over a file of the same path, and the first of
    /// two files with the same path wins.
    /// `directories` are shown even when no entry lies below them.
    public init(manifest: Manifest, directories: [EntryPath] = []) {
        let tree = NamespaceTreeBuilder(entries: manifest.entries, directories: directories)
        let numbering = NamespaceNumbering(tree: tree)
        nodes = numbering.nodes
        names = tree.names
        inodeIndex = numbering.inodeIndex
        fileCount = numbering.nodes.reduce(0) { count, node in
            if case .file = node.kind { return count + 1 }
            return count
        }
        directoryCount = nodes.count - fileCount
    }

    public func node(_ inode: InodeNumber) -> NamespaceNode? {
        position(of: inode).map(node(at:))
    }

    /// The child of `parent` named exactly `name` (byte for byte), found by binary search.
    public func lookup(parent: InodeNumber, name: String) -> NamespaceNode? {
        let siblings = children(of: parent)
        var name = name
        let (found, position) = name.withUTF8 { bytes in
            var low = siblings.startIndex
            var high = siblings.endIndex
            while low < high {
                let middle = (low + high) / 2
                let order = names.compare(bytes, with: nodes[middle].name)
                if order == 0 { return (true, middle) }
                if order > 0 { low = middle + 1 } else { high = middle }
            }
            return (false, low)
        }
        return found ? node(at: position) : nil
    }

    /// Sorted by the bytes of their names; empty for a file or an unknown inode.
    public func children(of directory: InodeNumber) -> NamespaceNodes {
        guard let position = position(of: directory),
              case .directory(let children) = nodes[position].kind
        else { return NamespaceNodes(namespace: self, positions: 0..<0) }
        return NamespaceNodes(namespace: self, positions: Int(children.lowerBound)..<Int(children.upperBound))
    }

    /// Up to `count` siblings that follow `node` in its directory's order (the order `readdir`
    /// lists them in).
    public func siblings(after node: NamespaceNode, count: Int) -> NamespaceNodes {
        guard node.inode != Self.rootInode else { return NamespaceNodes(namespace: self, positions: 0..<0) }
        let siblings = children(of: node.parent)
        let start = min(siblings.endIndex, node.position + 1)
        return siblings[start..<min(siblings.endIndex, start + count)]
    }

    /// Full path inside the mount: "" for the root, "a/b.mp3" below it.
    public func path(of node: NamespaceNode) -> String {
        var components: [String] = []
        var position = node.position
        while position != NamespaceNumbering.rootPosition {
            components.append(names.string(nodes[position].name))
            position = Int(nodes[position].parent)
        }
        return components.reversed().joined(separator: "/")
    }

    func node(at position: Int) -> NamespaceNode {
        let stored = nodes[position]
        let kind: NodeKind = switch stored.kind {
        case .directory: .directory
        case .file(let entryIndex): .file(entryIndex: Int(entryIndex))
        }
        return NamespaceNode(inode: stored.inode, parent: nodes[Int(stored.parent)].inode,
                             name: names.string(stored.name), kind: kind, position: position)
    }

    private func position(of inode: InodeNumber) -> Int? {
        NamespaceNumbering.position(of: inode, in: inodeIndex, nodes)
    }
}

/// Nodes side by side in a namespace (a directory's children, in byte order of their names),
/// made into `NamespaceNode`s only as they are read.
public struct NamespaceNodes: RandomAccessCollection, Sendable {
    private let namespace: Namespace
    private let positions: Range<Int>

    init(namespace: Namespace, positions: Range<Int>) {
        self.namespace = namespace
        self.positions = positions
    }

    public var startIndex: Int { positions.lowerBound }
    public var endIndex: Int { positions.upperBound }

    public subscript(position: Int) -> NamespaceNode {
        precondition(positions.contains(position), "index out of range")
        return namespace.node(at: position)
    }

    public subscript(bounds: Range<Int>) -> NamespaceNodes {
        precondition(bounds.clamped(to: positions) == bounds, "range out of bounds")
        return NamespaceNodes(namespace: namespace, positions: bounds)
    }
}
