import Foundation

extension Manifest {
    /// Parses manifest text in any format. Without `format`, the extension of `source`
    /// decides, then the content (see `ManifestFormat.detect`). Every format applies the
    /// same rules: valid relative paths, no duplicates, http and https only, and no
    /// credential ever shown in a message.
    ///
    /// `baseURL` resolves relative URLs in playlists; without it they are rejected.
    public static func parse(_ text: String, source: String, format: ManifestFormat? = nil,
                             baseURL: URL? = nil) throws(ManifestError) -> Manifest {
        switch format ?? ManifestFormat.detect(path: source, text: text) {
        case .text:
            return try PlainTextManifestParser(source: source).parse(text)
        case .json:
            let reader = StructuredManifestReader.json(source: source)
            return try reader.read(try document(source: source) { () throws(DocumentSyntaxError) in try JSONDocumentParser.parse(text) })
        case .yaml:
            let reader = StructuredManifestReader.yaml(source: source)
            return try reader.read(try document(source: source) { () throws(DocumentSyntaxError) in try YAMLDocumentParser.parse(text) })
        case .m3u:
            return try M3UManifestParser(source: source, baseURL: baseURL).parse(text)
        case .rss:
            return try RSSManifestParser(source: source).parse(text)
        case .metalink:
            return try MetalinkManifestParser(source: source).parse(text)
        }
    }

    /// What `parse` reads from a document, or its syntax error located in `source`.
    static func document<Document>(source: String, _ parse: () throws(DocumentSyntaxError) -> Document) throws(ManifestError) -> Document {
        do throws(DocumentSyntaxError) {
            return try parse()
        } catch {
            throw ManifestError(source: source, line: error.line, reason: error.reason)
        }
    }
}
