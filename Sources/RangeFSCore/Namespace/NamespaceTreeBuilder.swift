/// Grows the directory tree from manifest paths before inode numbers exist: a draft node for
/// every directory and every file, children not yet ordered. Only directories need finding
/// again by name (a later path goes through them); a file's name may clash with a sibling's,
/// which `NamespaceNumbering` settles when it orders each directory.
struct NamespaceTreeBuilder {
    struct DraftNode {
        let parent: Int32
        let name: NodeNames.Span
        /// The manifest entry of a file; nil for a directory.
        let entryIndex: Int32?

        var isDirectory: Bool { entryIndex == nil }
    }

    static let rootIndex: Int32 = 0

    private(set) var nodes: ContiguousArray<DraftNode> = [DraftNode(parent: rootIndex, name: .empty, entryIndex: nil)]
    private(set) var names: NodeNames
    /// (parent, exact name bytes) → draft index, for directories only.
    private var directories: [DirectoryName: Int32] = [:]

    /// `directories` are shown even when no entry lies below them (a listed tree's directories
    /// that are not listed yet, or empty).
    init(entries: [ManifestEntry], directories: [EntryPath] = []) {
        precondition(entries.count < Int(Int32.max) / 2, "too many entries for one namespace")
        // Room for every file, and directories to spare: growing would double the array.
        nodes.reserveCapacity(entries.count + entries.count / 8 + 1)
        let fileNameBytes = entries.reduce(0) { $0 + $1.path.lastComponent.utf8.count }
        names = NodeNames(expectedBytes: fileNameBytes + fileNameBytes / 8)
        for (entryIndex, entry) in entries.enumerated() {
            var parent = Self.rootIndex
            let components = entry.path.components
            for directory in components.dropLast() {
                parent = directoryIndex(parent: parent, name: directory)
            }
            // Validated paths are never empty; a file without a name is no file.
            guard let name = components.last else { continue }
            nodes.append(DraftNode(parent: parent, name: names.append(name), entryIndex: Int32(entryIndex)))
        }
        for directory in directories {
            _ = directory.components.reduce(Self.rootIndex) { parent, name in directoryIndex(parent: parent, name: name) }
        }
    }

    private mutating func directoryIndex(parent: Int32, name: String) -> Int32 {
        let key = DirectoryName(parent: parent, name: name)
        if let existing = directories[key] { return existing }
        let index = Int32(nodes.count)
        nodes.append(DraftNode(parent: parent, name: names.append(name), entryIndex: nil))
        directories[key] = index
        return index
    }
}

/// A directory's key: its parent and the exact bytes of its name, since the kernel compares
/// names byte for byte (String equality would merge "é" and "e\u{301}").
struct DirectoryName: Hashable {
    let parent: Int32
    let name: String

    static func == (lhs: DirectoryName, rhs: DirectoryName) -> Bool {
        lhs.parent == rhs.parent && lhs.name.hasSameUTF8(as: rhs.name)
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(parent)
        var name = name
        name.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        hasher.combine(0xFF as UInt8)  // never occurs in UTF-8: ends the name
    }
}
