/// Accepts entries one at a time and rejects any whose path clashes with an
/// earlier one, so every manifest format enforces the same rules.
struct ManifestEntryCollector {
    private(set) var entries: [ManifestEntry] = []
    /// Each file path taken so far → the index of its entry (its line and path are there).
    /// One small value per entry: a manifest may hold 100,000 of them.
    private var files: [EntryPath: Int] = [:]
    /// Each directory implied so far → the index of the first entry placed inside it, to name in messages.
    private var directories: [EntryPath: Int] = [:]

    init(expectedCount: Int = 0) {
        entries.reserveCapacity(expectedCount)
        files.reserveCapacity(expectedCount)
    }

    mutating func add(_ entry: ManifestEntry) throws(ManifestProblem) {
        let path = entry.path
        if let first = files[path] {
            throw ManifestProblem(reason: "duplicate path \(Self.quoted(path)) (first defined on line \(entries[first].line))")
        }
        if let inside = directories[path] {
            let user = entries[inside]
            throw ManifestProblem(reason: "path \(Self.quoted(path)) is a file here, but line \(user.line) uses it as a directory (\(Self.quoted(user.path)))")
        }
        // Deepest first: once an ancestor is a known directory, so are all of its own ancestors.
        var newDirectories: [EntryPath] = []
        for ancestor in path.enclosingDirectories {
            if let file = files[ancestor] {
                throw ManifestProblem(reason: "path \(Self.quoted(path)) needs \(Self.quoted(ancestor)) to be a directory, but line \(entries[file].line) defines it as a file")
            }
            if directories[ancestor] != nil { break }
            newDirectories.append(ancestor)
        }
        files[path] = entries.count
        for directory in newDirectories {
            directories[directory] = entries.count
        }
        entries.append(entry)
    }

    private static func quoted(_ path: EntryPath) -> String {
        DisplayText.quoted(path.description)
    }
}
