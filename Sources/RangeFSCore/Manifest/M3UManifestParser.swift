import Foundation

/// Reads an M3U/M3U8 playlist:
///
///     #EXTM3U
///     #EXTINF:215,Artist - Title
///     https://example.com/music/track01.mp3
///
/// Each URL line is one file, named from the `#EXTINF` title before it plus the URL's
/// extension (`Artist - Title.mp3`), or after the URL when there is no title. Other `#`
/// lines are ignored. Titles that repeat get ` (2)`, ` (3)` in playlist order.
struct M3UManifestParser {
    let source: String
    /// Where relative URLs are resolved; nil until manifests can be loaded from a URL,
    /// so a relative URL is an error instead of a guess.
    let baseURL: URL?

    func parse(_ text: String) throws(ManifestError) -> Manifest {
        let lines = PlainTextManifestParser.lines(of: text)
        var collector = ManifestEntryCollector(expectedCount: lines.countUpperBound / 2)
        var namer = UniqueFileNamer()
        var title: String?
        for (index, rawLine) in lines.enumerated() {
            let lineNumber = index + 1
            let line = String(TextTrimming.trimmed(rawLine))
            if line.isEmpty { continue }
            if line.hasPrefix("#") {
                if line.hasPrefix("#EXTINF:") { title = EXTINFLine.title(of: line) }
                continue
            }
            do throws(ManifestProblem) {
                let url = try PlaylistURL.parse(line, baseURL: baseURL)
                let path = try namer.name(for: try Self.nameParts(title: title, url: url))
                try collector.add(ManifestEntry(path: path, url: url, line: lineNumber))
            } catch {
                throw ManifestError(source: source, line: lineNumber, reason: error.reason)
            }
            title = nil
        }
        return Manifest(source: source, entries: collector.entries)
    }

    private static func nameParts(title: String?, url: URL) throws(ManifestProblem) -> FileNameParts {
        if let title = title.flatMap(FileNameText.sanitized) {
            return FileNameParts(title: title, fileExtension: URLFileName.fileExtension(of: url))
        }
        if let fileName = URLFileName.sanitizedLastSegment(of: url) {
            return FileNameParts(fileName: fileName)
        }
        throw ManifestProblem(reason: "cannot name the file for \(DisplayText.quoted(url.redactedForDisplay)): it has no #EXTINF title and the URL has no file name")
    }
}

/// The title of `#EXTINF:duration [attributes],title`.
enum EXTINFLine {
    /// Text after the first comma outside quotes (IPTV lists put commas in
    /// `tvg-name="…"` attributes), or nil when there is none.
    static func title(of line: String) -> String? {
        var inQuotes = false
        for index in line.indices {
            switch line[index] {
            case "\"": inQuotes.toggle()
            case "," where !inQuotes:
                let title = TextTrimming.trimmed(line[line.index(after: index)...])
                return title.isEmpty ? nil : String(title)
            default: break
            }
        }
        return nil
    }
}

/// Reads the URL of a playlist line, which players write more loosely than plain-text manifests.
enum PlaylistURL {
    static func parse(_ line: String, baseURL: URL?) throws(ManifestProblem) -> URL {
        // A playlist line holds nothing but its URL, so a space in it is part of the URL.
        let text = line.contains(" ") ? line.replacingOccurrences(of: " ", with: "%20") : line
        if looksLikeLocalPath(line, rootRelativeIsURL: baseURL != nil) {
            throw ManifestProblem(reason: "\(shown(line)) is a local file path, not a URL (only http and https URLs can be mounted)")
        }
        if hasScheme(text) { return try RemoteURLParser.parse(text) }
        guard let baseURL else {
            throw ManifestProblem(reason: "relative URL \(shown(line)) is not supported yet (write absolute http:// or https:// URLs)")
        }
        guard let resolved = URL(string: text, relativeTo: baseURL)?.absoluteURL else {
            throw ManifestProblem(reason: "malformed URL \(shown(line))")
        }
        return try RemoteURLParser.parse(resolved.absoluteString)
    }

    /// RFC 3986: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":".
    static func hasScheme(_ text: String) -> Bool {
        guard let colon = text.firstIndex(of: ":"), let first = text.unicodeScalars.first,
              first.isASCII, first.properties.isAlphabetic else { return false }
        return text[..<colon].unicodeScalars.allSatisfy {
            $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "+-.".unicodeScalars.contains($0))
        }
    }

    /// `/home/me/a.mp3`, `~/a.mp3`, `C:\Music\a.mp3`: what desktop players write for local files.
    /// In a playlist fetched by URL, `/media/a.mp3` is a path on the playlist's server instead.
    private static func looksLikeLocalPath(_ line: String, rootRelativeIsURL: Bool) -> Bool {
        // "//host/a.mp3" is a scheme-relative URL, not a path.
        if line.hasPrefix("/"), !line.hasPrefix("//"), !rootRelativeIsURL { return true }
        if line.hasPrefix("~/") { return true }
        let scalars = Array(line.unicodeScalars.prefix(3))
        return scalars.count == 3 && scalars[0].isASCII && scalars[0].properties.isAlphabetic
            && scalars[1] == ":" && (scalars[2] == "\\" || scalars[2] == "/")
    }

    private static func shown(_ line: String) -> String {
        // A scheme-relative "//user:pw@host/…" has its credentials right after the "//".
        if line.hasPrefix("//") {
            return DisplayText.quoted("//" + CredentialRedactor.redactingLoosely(String(line.dropFirst(2))))
        }
        return DisplayText.quoted(CredentialRedactor.redactingLoosely(line))
    }
}
