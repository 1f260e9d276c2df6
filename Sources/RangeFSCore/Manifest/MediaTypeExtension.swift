/// A file extension for an enclosure's media type, for URLs that do not end in one
/// (`https://cdn.example/stream?id=42`); players decide what to do by the extension.
enum MediaTypeExtension {
    private static let extensions: [String: String] = [
        "audio/mpeg": "mp3", "audio/mp3": "mp3",
        "audio/mp4": "m4a", "audio/x-m4a": "m4a", "audio/m4a": "m4a", "audio/aac": "aac",
        "audio/ogg": "ogg", "audio/opus": "opus", "audio/flac": "flac", "audio/x-flac": "flac",
        "audio/wav": "wav", "audio/x-wav": "wav", "audio/webm": "weba",
        "video/mp4": "mp4", "video/x-m4v": "m4v", "video/quicktime": "mov", "video/webm": "webm",
        "application/pdf": "pdf", "application/epub+zip": "epub",
    ]

    /// `audio/mpeg; charset=…` → `mp3`; nil for types not listed.
    static func fileExtension(forMediaType type: String) -> String? {
        let essence = type.split(separator: ";", maxSplits: 1).first ?? ""
        return extensions[TextTrimming.trimmed(essence).lowercased()]
    }
}
