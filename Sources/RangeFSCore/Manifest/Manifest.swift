import Foundation

// Design note: manifests of every format, read and checked before anything is mounted.
//
// - Formats: plain text, JSON, YAML, M3U, RSS and Metalink (`ManifestFormat`, detected from the
//   name, then the content). Each yields `ManifestEntry`s: a path, the URL and any mirrors after
//   it (best first), and what the manifest states (size, sha256, `PieceHashes`, headers, mtime),
//   the rarely stated fields kept out of line so 100,000 entries stay small.
// - A manifest with any bad entry is refused with the line that is wrong (`ManifestError`).
// - XML parses through `GuardedXMLParser` (`XMLInputGuard` first, no entities) into a small tree
//   of elements (`XMLElementTree`), which S3's and WebDAV's replies use too; XML and YAML nested
//   more than 128 levels deep are refused before libxml2 or Yams, which recurse, see them
//   (`NestingDepthGuard`).

/// The list of remote files to mount, parsed and validated as a whole:
/// a manifest with any bad entry is rejected, so nothing is ever half-mounted.
public struct Manifest: Sendable {
    /// The manifest's name as shown in messages.
    public var source: String
    public var entries: [ManifestEntry]

    public init(source: String, entries: [ManifestEntry]) {
        self.source = source
        self.entries = entries
    }

    /// Reads and parses the manifest at `path`; errors are `ManifestError`s naming `path` as given.
    /// Without `format`, the file's extension decides, then its content.
    public static func load(path: String, format: ManifestFormat? = nil) throws(ManifestError) -> Manifest {
        let text = try ManifestFileReader.readText(atPath: path)
        return try parse(text, source: path, format: format)
    }

    public static func parsePlainText(_ text: String, source: String) throws(ManifestError) -> Manifest {
        try PlainTextManifestParser(source: source).parse(text)
    }
}
