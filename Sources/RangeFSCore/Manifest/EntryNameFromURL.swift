import Foundation

/// Names a path-less entry after the last segment of its URL, as a browser names a download.
enum EntryNameFromURL {
    static func path(for url: URL) throws(ManifestProblem) -> EntryPath {
        // The encoded path keeps an encoded "/" (%2F) inside its segment instead of splitting there.
        let encodedPath = url.path(percentEncoded: true)
        let lastSegment = encodedPath.split(separator: "/", omittingEmptySubsequences: false).last ?? ""
        guard !lastSegment.isEmpty else {
            throw problem(url, nil)
        }
        let name: String
        if lastSegment.utf8.contains(ASCII.percent) {
            guard let decoded = PercentDecoding.decode(lastSegment) else {
                throw problem(url, "its last segment is not valid UTF-8 once decoded")
            }
            name = decoded
        } else {
            name = String(lastSegment)
        }
        do throws(EntryPathError) {
            return try EntryPath(validatingComponent: name)
        } catch {
            throw problem(url, error.reason)
        }
    }

    private static func problem(_ url: URL, _ detail: String?) -> ManifestProblem {
        let shown = DisplayText.quoted(url.redactedForDisplay)
        return ManifestProblem(reason: "cannot name an entry from URL \(shown)" + (detail.map { ": " + $0 } ?? "") + " (give a path: path<TAB>url)")
    }
}
