import Foundation

/// Writes entries as a manifest that `rangefs mount` reads back unchanged: the plain-text
/// format (`path<TAB>url`, no sizes or dates) or JSON (with them). Headers are never written:
/// they may hold secrets, and a mount adds its own `--header` to every request.
public enum ManifestWriter {
    public static func text(_ entries: [ManifestEntry]) throws(ManifestError) -> String {
        var out = ""
        for entry in entries {
            let path = entry.path.description
            // The reader trims each field and takes a line starting with '#' for a comment.
            if path.hasPrefix("#") || path.first?.isWhitespace == true || path.last?.isWhitespace == true {
                throw ManifestError(source: path, line: 0, reason: """
                    the plain-text format cannot hold this path (it starts with '#' or begins or ends with \
                    white space); use --format json
                    """)
            }
            out += "\(path)\t\(entry.urlString)\n"
        }
        return out
    }

    public static func json(_ entries: [ManifestEntry]) -> String {
        struct Line: Encodable {
            var path: String
            var url: String
            var size: UInt64?
            var mtime: String?
        }
        struct Document: Encodable {
            var entries: [Line]
        }
        let lines = entries.map { entry in
            Line(path: entry.path.description, url: entry.urlString, size: entry.size,
                 mtime: entry.modified.map { $0.formatted(.iso8601) })
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        // Encoding strings and numbers cannot fail.
        let data = (try? encoder.encode(Document(entries: lines))) ?? Data()
        return String(decoding: data, as: UTF8.self) + "\n"
    }
}
