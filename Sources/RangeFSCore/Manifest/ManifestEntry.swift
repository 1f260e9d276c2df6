import Foundation

/// One remote file listed in a manifest.
public struct ManifestEntry: Sendable, Hashable {
    /// Where the file appears in the mount.
    public var path: EntryPath
    /// The URL as text: a manifest may hold 100,000 entries, and a `URL` costs several times
    /// the bytes of its text. `url` rebuilds one when it is needed.
    public private(set) var urlString: String
    public var url: URL {
        get { URL(string: urlString)! }
        set { urlString = newValue.absoluteString }
    }
    /// Expected size in bytes, when the manifest format can state it.
    public var size: UInt64?
    /// Expected SHA-256 as lowercase hex, when the manifest format can state it.
    public var sha256: String?
    /// Extra request headers for this file.
    public var headers: [String: String]
    /// Modification time the manifest states (JSON/YAML `mtime`, RSS `pubDate`), if any.
    public var modified: Date?
    /// 1-based line in the manifest, for messages.
    public var line: Int

    public init(
        path: EntryPath,
        url: URL,
        size: UInt64? = nil,
        sha256: String? = nil,
        headers: [String: String] = [:],
        modified: Date? = nil,
        line: Int
    ) {
        self.path = path
        self.urlString = url.absoluteString
        self.size = size
        self.sha256 = sha256
        self.headers = headers
        self.modified = modified
        self.line = line
    }
}
