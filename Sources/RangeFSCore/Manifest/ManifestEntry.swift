import Foundation

/// One remote file listed in a manifest.
public struct ManifestEntry: Sendable, Hashable {
    /// Where the file appears in the mount.
    public var path: EntryPath
    /// The URL as text: a manifest may hold 100,000 entries, and a `URL` costs several times
    /// the bytes of its text. `url` rebuilds one when it is needed.
    public private(set) var urlText: SharedPrefixText
    public var urlString: String { urlText.description }
    public var url: URL {
        get { URL(string: urlString)! }
        set { urlText = SharedPrefixText(newValue.absoluteString) }
    }
    /// 1-based line in the manifest, for messages.
    public var line: Int
    /// What only some manifests state; nil when none of it is.
    private var details: OutOfLine<EntryDetails>?

    /// Expected size in bytes, when the manifest format can state it.
    public var size: UInt64? {
        get { details?.value.size }
        set { updateDetails { $0.size = newValue } }
    }
    /// Expected SHA-256 as lowercase hex, when the manifest format can state it.
    public var sha256: String? {
        get { details?.value.sha256 }
        set { updateDetails { $0.sha256 = newValue } }
    }
    /// The file's other sources after `url`, best first: mirrors that serve the same bytes
    /// (Metalink `<url>`s, a JSON/YAML `urls` list). Kept as text for the same reason as `url`.
    var mirrorTexts: [SharedPrefixText] {
        get { details?.value.mirrors ?? [] }
        set { updateDetails { $0.mirrors = newValue } }
    }
    public var mirrors: [URL] {
        get { mirrorTexts.map { URL(string: $0.description)! } }
        set { mirrorTexts = newValue.map { SharedPrefixText($0.absoluteString) } }
    }
    /// Every source of the file, best first: `url`, then the mirrors.
    public var urls: [URL] { [url] + mirrors }
    /// SHA-256 of each piece of the file, when the manifest states them (Metalink `<pieces>`).
    public var pieces: PieceHashes? {
        get { details?.value.pieces }
        set { updateDetails { $0.pieces = newValue } }
    }
    /// Extra request headers for this file.
    public var headers: [String: String] {
        get { details?.value.headers ?? [:] }
        set { updateDetails { $0.headers = newValue } }
    }
    /// Modification time the manifest states (JSON/YAML `mtime`, RSS `pubDate`), if any.
    public var modified: Date? {
        get { details?.value.modified }
        set { updateDetails { $0.modified = newValue } }
    }

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
        self.urlText = SharedPrefixText(url.absoluteString)
        self.line = line
        updateDetails { details in
            details = EntryDetails(size: size, sha256: sha256, headers: headers, modified: modified)
        }
    }

    /// Makes the URL and the path hold the copies of their prefixes that `prefixes` keeps:
    /// entries of one manifest then share their common prefixes instead of each holding its own.
    mutating func sharePrefixes(in prefixes: inout SharedPrefixes) {
        urlText.sharePrefix(in: &prefixes)
        path.sharePrefix(in: &prefixes)
        guard details?.value.mirrors.isEmpty == false else { return }
        updateDetails { details in
            for index in details.mirrors.indices { details.mirrors[index].sharePrefix(in: &prefixes) }
        }
    }

    /// Keeps `details` nil whenever nothing is stated, so equal entries compare equal.
    private mutating func updateDetails(_ change: (inout EntryDetails) -> Void) {
        var value = details?.value ?? EntryDetails()
        change(&value)
        details = value == EntryDetails() ? nil : OutOfLine(value)
    }
}

/// The fields of an entry that plain-text manifests never state. Kept behind one pointer, they
/// cost a plain-text entry 8 bytes instead of 56.
private struct EntryDetails: Sendable, Hashable {
    var size: UInt64?
    var sha256: String?
    var mirrors: [SharedPrefixText] = []
    var pieces: PieceHashes?
    var headers: [String: String] = [:]
    var modified: Date?
}

/// A value stored on the heap behind one pointer, with value semantics (an indirect case is an
/// immutable box: changing the value stores a new one).
private indirect enum OutOfLine<Value: Sendable & Hashable>: Sendable, Hashable {
    case boxed(Value)

    init(_ value: Value) {
        self = .boxed(value)
    }

    var value: Value {
        switch self {
        case .boxed(let value): value
        }
    }
}
