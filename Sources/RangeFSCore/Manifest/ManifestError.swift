/// A problem with a manifest, located by file and line like a compiler diagnostic.
public struct ManifestError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The manifest's name as shown in messages.
    public var source: String
    /// 1-based line, or 0 when the problem concerns the whole file (for example, it cannot be read).
    public var line: Int
    public var reason: String

    public init(source: String, line: Int, reason: String) {
        self.source = source
        self.line = line
        self.reason = reason
    }

    /// `media.txt:3: scheme 'ftp' is not supported (only http and https)`
    public var description: String {
        line > 0 ? "\(source):\(line): \(reason)" : "\(source): \(reason)"
    }
}

/// A problem found while reading one entry, before its location is attached.
struct ManifestProblem: Error {
    let reason: String
}
