import Foundation

/// What a URL says about the file it points at: its name and its type.
enum URLFileName {
    /// The last path segment, percent-decoded and made safe as a file name; nil when the
    /// URL ends with "/" or its last segment does not decode.
    static func sanitizedLastSegment(of url: URL) -> String? {
        let encodedPath = url.path(percentEncoded: true)
        guard let segment = encodedPath.split(separator: "/", omittingEmptySubsequences: false).last,
              !segment.isEmpty,
              let decoded = PercentDecoding.decode(segment)
        else { return nil }
        return FileNameText.sanitized(decoded)
    }

    /// `mp3` for `https://h/show/episode-01.mp3?token=1`; the query is not part of the name.
    static func fileExtension(of url: URL) -> String? {
        sanitizedLastSegment(of: url).flatMap(FileNameParts.plausibleExtension(of:))
    }
}
