/// Accepts entries one at a time and rejects any whose path clashes with an
/// earlier one, so every manifest format enforces the same rules.
struct ManifestEntryCollector {
    /// What an earlier entry made of a path.
    private enum Claim {
        case file(line: Int)
        /// A directory, with the first entry placed inside it, to name it in messages.
        case directory(line: Int, inside: EntryPath)
    }

    private(set) var entries: [ManifestEntry] = []
    private var claims: [EntryPath: Claim] = [:]

    init(expectedCount: Int = 0) {
        entries.reserveCapacity(expectedCount)
        claims.reserveCapacity(expectedCount)
    }

    mutating func add(_ entry: ManifestEntry) throws(ManifestProblem) {
        let path = entry.path
        switch claims[path] {
        case .file(let line):
            throw ManifestProblem(reason: "duplicate path \(Self.quoted(path)) (first defined on line \(line))")
        case .directory(let line, let inside):
            throw ManifestProblem(reason: "path \(Self.quoted(path)) is a file here, but line \(line) uses it as a directory (\(Self.quoted(inside)))")
        case nil:
            break
        }
        // Deepest first: once an ancestor is a known directory, so are all of its own ancestors.
        var newDirectories: [EntryPath] = []
        for depth in stride(from: path.components.count - 1, to: 0, by: -1) {
            let ancestor = EntryPath(trustedComponents: path.components.prefix(depth))
            let claim = claims[ancestor]
            if case .file(let line) = claim {
                throw ManifestProblem(reason: "path \(Self.quoted(path)) needs \(Self.quoted(ancestor)) to be a directory, but line \(line) defines it as a file")
            }
            if claim != nil { break }
            newDirectories.append(ancestor)
        }
        claims[path] = .file(line: entry.line)
        for directory in newDirectories {
            claims[directory] = .directory(line: entry.line, inside: path)
        }
        entries.append(entry)
    }

    private static func quoted(_ path: EntryPath) -> String {
        DisplayText.quoted(path.description)
    }
}
