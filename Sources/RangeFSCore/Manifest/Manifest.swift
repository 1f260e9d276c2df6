import Foundation

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
