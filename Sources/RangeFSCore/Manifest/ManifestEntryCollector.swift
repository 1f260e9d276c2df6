/// Accepts entries one at a time and rejects any whose path clashes with an
/// earlier one, so every manifest format enforces the same rules.
struct ManifestEntryCollector {
    private(set) var entries: [ManifestEntry] = []
    /// Finds the entry of a file path taken so far (its line and path are there). A table of
    /// entry indices rather than a dictionary holding every path again: a manifest may have
    /// 100,000 entries.
    private var files: PositionTable
    /// Each directory implied so far → the index of the first entry placed inside it, to name in messages.
    private var directories: [EntryPath: Int] = [:]
    private var prefixes = SharedPrefixes()

    init(expectedCount: Int = 0) {
        entries.reserveCapacity(expectedCount)
        files = PositionTable(capacity: expectedCount)
    }

    mutating func add(_ entry: ManifestEntry) throws(ManifestProblem) {
        var entry = entry
        let path = entry.path
        if let first = fileEntryIndex(at: path) {
            throw ManifestProblem(reason: "duplicate path \(Self.quoted(path)) (first defined on line \(entries[first].line))")
        }
        if let inside = directories[path] {
            let user = entries[inside]
            throw ManifestProblem(reason: "path \(Self.quoted(path)) is a file here, but line \(user.line) uses it as a directory (\(Self.quoted(user.path)))")
        }
        // Deepest first: once an ancestor is a known directory, so are all of its own ancestors.
        var newDirectories: [EntryPath] = []
        for ancestor in path.enclosingDirectories {
            if let file = fileEntryIndex(at: ancestor) {
                throw ManifestProblem(reason: "path \(Self.quoted(path)) needs \(Self.quoted(ancestor)) to be a directory, but line \(entries[file].line) defines it as a file")
            }
            if directories[ancestor] != nil { break }
            newDirectories.append(ancestor)
        }
        files.insert(entries.count, hash: path.hashValue) { [entries] in entries[$0].path.hashValue }
        for directory in newDirectories {
            directories[directory] = entries.count
        }
        entry.sharePrefixes(in: &prefixes)
        entries.append(entry)
    }

    /// The index of the entry whose file has this path.
    private func fileEntryIndex(at path: EntryPath) -> Int? {
        files.first(hash: path.hashValue) { entries[$0].path == path }
    }

    private static func quoted(_ path: EntryPath) -> String {
        DisplayText.quoted(path.description)
    }
}
