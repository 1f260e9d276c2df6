/// Hands out file names at the top of the mount, adding ` (2)`, ` (3)` before the
/// extension when a name is taken. Playlists and feeds cannot state paths, so two
/// episodes with the same title must both appear instead of failing the manifest.
/// Names are given in manifest order, so the same manifest always yields the same names.
struct UniqueFileNamer {
    private var taken: Set<EntryPath> = []
    /// For each wanted name, the suffix number to try next: a playlist repeating one
    /// title thousands of times must not retry every earlier suffix for each entry.
    private var nextAttempt: [EntryPath: Int] = [:]

    mutating func name(for parts: FileNameParts) throws(ManifestProblem) -> EntryPath {
        let wanted = try Self.path(parts, suffix: "")
        var attempt = nextAttempt[wanted] ?? 1
        while true {
            let candidate = attempt == 1 ? wanted : try Self.path(parts, suffix: " (\(attempt))")
            attempt += 1
            if taken.insert(candidate).inserted {
                nextAttempt[wanted] = attempt
                return candidate
            }
        }
    }

    /// `stem + suffix + "." + extension`, shortening the stem to stay within NAME_MAX.
    private static func path(_ parts: FileNameParts, suffix: String) throws(ManifestProblem) -> EntryPath {
        let tail = suffix + (parts.fileExtension.map { "." + $0 } ?? "")
        let stem = FileNameText.truncated(parts.stem, toUTF8Bytes: EntryPath.maxComponentBytes - tail.utf8.count)
        do throws(EntryPathError) {
            return try EntryPath(validatingComponent: stem + tail)
        } catch {
            // Not expected: sanitized text is always a valid name. Said plainly rather than trapped.
            throw ManifestProblem(reason: "cannot make a file name: \(error.reason)")
        }
    }
}
