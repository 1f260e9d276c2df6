/// The manifest formats RangeFS reads. Each produces the same `ManifestEntry`s and is
/// validated by the same rules; they differ only in how entries are written down.
public enum ManifestFormat: String, Sendable, CaseIterable {
    /// One URL a line, or `path<TAB>url`, with `#` comments.
    case text
    /// A list of entries, or `{"entries": [...], "headers": {...}}`.
    case json
    /// The same shapes as JSON, written as YAML.
    case yaml
    /// An M3U/M3U8 playlist: `#EXTINF` titles name the files.
    case m3u
    /// A podcast RSS feed: one file per `<item>` with an `<enclosure>`.
    case rss
    /// A Metalink 4 or 3.0 document: one file per `<file>`, with its mirrors and hashes.
    case metalink

    /// File name extensions that select this format, lowercase and without the dot.
    public var fileExtensions: [String] {
        switch self {
        case .text: ["txt", "list"]
        case .json: ["json"]
        case .yaml: ["yaml", "yml"]
        case .m3u: ["m3u", "m3u8"]
        case .rss: ["rss", "xml"]
        case .metalink: ["meta4", "metalink"]
        }
    }

    /// The format named by the extension of `path`, or nil when the extension says nothing
    /// (none at all, or one RangeFS does not know, such as a pipe's `/dev/fd/63`).
    public init?(fileExtensionOf path: String) {
        let name = path.split(separator: "/", omittingEmptySubsequences: false).last ?? ""
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return nil }
        let fileExtension = name[name.index(after: dot)...].lowercased()
        guard let format = Self.allCases.first(where: { $0.fileExtensions.contains(fileExtension) }) else { return nil }
        self = format
    }

    /// The format the content looks like. Plain text is the fallback, so anything
    /// unrecognised gets the plain-text parser's precise line-by-line errors.
    public init(sniffing text: String) {
        self = ManifestFormatSniffer.format(of: text)
    }

    /// The extension decides when it is known (a `.txt` file full of `#EXTINF` lines is
    /// read as plain text, as asked); otherwise the content does.
    public static func detect(path: String?, text: String) -> ManifestFormat {
        path.flatMap(ManifestFormat.init(fileExtensionOf:)) ?? ManifestFormat(sniffing: text)
    }
}

/// Guesses a manifest's format from its first significant characters.
enum ManifestFormatSniffer {
    static func format(of text: String) -> ManifestFormat {
        let lines = PlainTextManifestParser.lines(of: text)
        // M3U is recognised only by its header, which must come first.
        if let first = lines.first, trimmedLeading(first).hasPrefix("#EXTM3U") { return .m3u }
        // Skip blank lines and comments, which plain text and YAML both allow.
        guard let line = lines.lazy.map(trimmedLeading).first(where: { !$0.isEmpty && !$0.hasPrefix("#") }) else {
            return .text
        }
        if line.hasPrefix("{") || line.hasPrefix("[") { return .json }
        if line.hasPrefix("<"), XMLRootElement.localName(in: text) == "metalink" { return .metalink }
        if line.hasPrefix("<?xml") || line.hasPrefix("<rss") { return .rss }
        if looksLikeYAML(line) { return .yaml }
        return .text
    }

    /// A block list item, a document start, or a top-level key this format defines.
    /// None of these can begin a valid plain-text line except a path starting with "- ",
    /// which is rare enough to need an explicit `--format text` or a `.txt` name.
    private static func looksLikeYAML(_ line: Substring) -> Bool {
        line == "-" || line.hasPrefix("- ") || line.hasPrefix("-\t") || line.hasPrefix("---")
            || line.hasPrefix("entries:") || line.hasPrefix("headers:")
    }

    private static func trimmedLeading(_ line: Substring) -> Substring {
        line.drop(while: { $0 == " " || $0 == "\t" })
    }
}
