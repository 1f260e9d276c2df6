import Foundation

/// Turns the URL text of a manifest entry into a URL the remote side can fetch,
/// or says precisely why it cannot.
enum RemoteURLParser {
    static let supportedSchemes: Set<String> = ["http", "https"]

    static func parse(_ text: String) throws(ManifestProblem) -> URL {
        if let control = text.utf8.first(where: ASCII.isControl) {
            throw malformed(text, "contains a control character (\(DisplayText.hex(Unicode.Scalar(control))))")
        }
        // Parsers differ on whether they quietly encode spaces; a space here is usually a
        // path and URL separated by a space instead of a TAB, so say so.
        if text.utf8.contains(ASCII.space) || text.unicodeScalars.contains(where: { $0.value >= 0x80 && $0.properties.isWhitespace }) {
            throw malformed(text, "contains a space (write it as %20; a path and its URL are separated by a TAB)")
        }
        guard let url = URL(string: text) else {
            throw malformed(text, nil)
        }
        guard let scheme = url.scheme, !scheme.isEmpty else {
            throw malformed(text, "no scheme (expected http:// or https://)")
        }
        guard supportedSchemes.contains(scheme.lowercased()) else {
            throw ManifestProblem(reason: "scheme \(DisplayText.quoted(scheme)) is not supported (only http and https)")
        }
        guard let host = url.host, !host.isEmpty else {
            throw ManifestProblem(reason: "malformed URL \(DisplayText.quoted(url.redactedForDisplay)): no host")
        }
        return url
    }

    private static func malformed(_ text: String, _ detail: String?) -> ManifestProblem {
        let shown = DisplayText.quoted(CredentialRedactor.redactingLoosely(text))
        return ManifestProblem(reason: "malformed URL \(shown)" + (detail.map { ": " + $0 } ?? ""))
    }
}
