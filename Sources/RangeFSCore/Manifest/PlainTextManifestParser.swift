/// Reads the plain-text manifest format:
///
///     # comment
///     https://example.com/podcast/episode-1.mp3
///     music/My Song.mp3<TAB>https://example.com/files/song.mp3
///
/// One entry a line: a URL (named after its last path segment) or a path, one TAB,
/// and a URL. Spaces and tabs around a line and around each field are ignored.
struct PlainTextManifestParser {
    let source: String

    func parse(_ text: String) throws(ManifestError) -> Manifest {
        let lines = Self.lines(of: text)
        var collector = ManifestEntryCollector(expectedCount: lines.countUpperBound)
        for (index, rawLine) in lines.enumerated() {
            let lineNumber = index + 1
            do throws(ManifestProblem) {
                if let entry = try Self.entry(fromLine: rawLine, lineNumber: lineNumber) {
                    try collector.add(entry)
                }
            } catch {
                throw ManifestError(source: source, line: lineNumber, reason: error.reason)
            }
        }
        return Manifest(source: source, entries: collector.entries)
    }

    /// Lines without their terminators, accepting LF or CRLF and dropping a leading byte-order mark.
    static func lines(of text: String) -> TextLines {
        TextLines(text)
    }

    /// The entry on one line, or nil for a blank line or a comment.
    static func entry(fromLine rawLine: Substring, lineNumber: Int) throws(ManifestProblem) -> ManifestEntry? {
        let line = trimmed(rawLine)
        if line.isEmpty || line.utf8.first == UInt8(ascii: "#") { return nil }
        let fields = line.utf8.split(separator: ASCII.tab, omittingEmptySubsequences: false)
            .map { trimmed(Substring($0)) }
        switch fields.count {
        case 1:
            let url = try RemoteURLParser.parse(String(fields[0]))
            return ManifestEntry(path: try EntryNameFromURL.path(for: url), url: url, line: lineNumber)
        case 2:
            let path: EntryPath
            do throws(EntryPathError) {
                path = try EntryPath(validating: String(fields[0]))
            } catch {
                throw ManifestProblem(reason: error.reason)
            }
            let url = try RemoteURLParser.parse(String(fields[1]))
            return ManifestEntry(path: path, url: url, line: lineNumber)
        default:
            throw ManifestProblem(reason: "expected 'path<TAB>url' but the line has \(fields.count - 1) TABs")
        }
    }

    private static func trimmed(_ text: Substring) -> Substring {
        let bytes = text.utf8
        guard let first = bytes.firstIndex(where: { !ASCII.isWhitespace($0) }),
              let last = bytes.lastIndex(where: { !ASCII.isWhitespace($0) })
        else { return text[text.endIndex...] }
        return Substring(bytes[first...last])
    }
}
