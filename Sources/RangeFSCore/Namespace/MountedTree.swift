/// The tree a mount shows right now: the namespace of the current manifest, and for each of its
/// entries the index of that entry in the catalog (which outlives manifest refreshes).
public struct MountedTree: Sendable {
    public let namespace: Namespace
    private let catalogIndices: [Int]

    /// `directories` are shown even when no entry lies below them (a listed tree's directories
    /// that are not listed yet, or empty ones).
    public init(manifest: Manifest, catalogIndices: [Int], directories: [EntryPath] = []) {
        precondition(manifest.entries.count == catalogIndices.count, "one catalog index per entry")
        namespace = Namespace(manifest: manifest, directories: directories)
        self.catalogIndices = catalogIndices
    }

    /// The catalog index of a file node; nil for a directory.
    public func catalogIndex(of node: NamespaceNode) -> Int? {
        if case .file(let index) = node.kind { return catalogIndices[index] }
        return nil
    }

    /// The inode of a path, if the tree has it.
    public func inode(of path: EntryPath) -> InodeNumber? {
        path.components.reduce(Optional(Namespace.rootInode)) { parent, name in
            parent.flatMap { namespace.lookup(parent: $0, name: name)?.inode }
        }
    }
}
