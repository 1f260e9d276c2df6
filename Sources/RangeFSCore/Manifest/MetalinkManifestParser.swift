import Foundation

/// Reads a Metalink document (RFC 5854's Metalink 4, `.meta4`, or the older Metalink 3.0,
/// `.metalink`): one file per `<file name>`, with its http(s) URLs best first, `<size>`,
/// SHA-256 and SHA-256 piece hashes. Other hash types, `<metaurl>` (torrents) and URLs of
/// other schemes (ftp, rsync…) are ignored: they describe sources RangeFS cannot use.
struct MetalinkManifestParser {
    enum Version {
        /// Metalink 4: `<url priority>`, lower is better.
        case v4
        /// Metalink 3.0: `<url preference>`, higher is better.
        case v3
    }

    static let namespaceV4 = "urn:ietf:params:xml:ns:metalink"
    static let namespaceV3 = "http://www.metalinker.org/"

    let source: String

    func parse(_ text: String) throws(ManifestError) -> Manifest {
        let scan = try Manifest.document(source: source) { () throws(DocumentSyntaxError) in try MetalinkScan.scan(text) }
        let version = try version(of: scan)
        guard !scan.files.isEmpty else {
            throw ManifestError(source: source, line: 0, reason: "the Metalink has no <file> (nothing to mount)")
        }
        let reader = MetalinkFileReader(version: version)
        var collector = ManifestEntryCollector(expectedCount: scan.files.count)
        for file in scan.files {
            do throws(LocatedProblem) {
                let entry = try reader.entry(for: file)
                try LocatedProblem.at(file.line) { () throws(ManifestProblem) in try collector.add(entry) }
            } catch {
                throw ManifestError(source: source, line: error.line, reason: "\(Self.label(file)): \(error.reason)")
            }
        }
        return Manifest(source: source, entries: collector.entries)
    }

    /// `file 'a.iso'`, or `file 2` when it has no name.
    private static func label(_ file: MetalinkFileScan) -> String {
        file.name.map { "file \(DisplayText.quoted($0))" } ?? "file \(file.number)"
    }

    /// The namespace says which version a document is; a 3.0 document without one is
    /// still recognised by its `version="3.0"`.
    private func version(of scan: MetalinkScan) throws(ManifestError) -> Version {
        let expected = "expected <metalink xmlns=\"\(Self.namespaceV4)\"> (Metalink 4) or <metalink xmlns=\"\(Self.namespaceV3)\" version=\"3.0\">"
        guard let root = scan.root, root.name == "metalink" else {
            let found = scan.root.map { "the root element is <\($0.name)>" } ?? "there is no root element"
            throw ManifestError(source: source, line: 0, reason: "not a Metalink document: \(found) (\(expected))")
        }
        let namespaces = root.attributes.filter { $0.key == "xmlns" || $0.key.hasPrefix("xmlns:") }.map(\.value)
        if namespaces.contains(Self.namespaceV4) { return .v4 }
        if namespaces.contains(Self.namespaceV3) || namespaces.isEmpty && root.attributes["version"] == "3.0" { return .v3 }
        let found = root.attributes["xmlns"].map { "namespace \(DisplayText.quoted($0))" } ?? "no namespace"
        throw ManifestError(source: source, line: 0, reason: "not a Metalink document: <metalink> has \(found) (\(expected))")
    }
}
