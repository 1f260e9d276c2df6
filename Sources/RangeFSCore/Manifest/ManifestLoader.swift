import Foundation

/// Where a manifest is read from.
public enum ManifestLocation: Sendable, Equatable {
    case file(path: String)
    /// An http(s) URL, fetched with the mount's client; relative entries resolve against it.
    case remote(URL)

    /// An http(s) URL when the argument is one, else a file path as given.
    public init(argument: String) throws(ManifestError) {
        let lowered = argument.lowercased()
        guard lowered.hasPrefix("http://") || lowered.hasPrefix("https://") else {
            self = .file(path: argument)
            return
        }
        guard let url = URL(string: argument), let host = url.host, !host.isEmpty else {
            throw ManifestError(source: CredentialRedactor.redactingLoosely(argument), line: 0,
                                reason: "not a valid http(s) URL for a manifest")
        }
        self = .remote(url)
    }
}

/// Reads a manifest the way a mount needs it, the same way at mount time and on
/// `rangefs refresh`: from its location, in the given or detected format, with the
/// headers meant for every request added to each entry.
public struct ManifestLoader: Sendable {
    public var location: ManifestLocation
    /// Nil: detected from the file name or URL path, then from the content.
    public var format: ManifestFormat?
    /// Sent with every request, the manifest's own download included; an entry's own
    /// header of the same name wins. Check them with `Manifest.headerProblem` first.
    public var headers: [String: String]

    public init(location: ManifestLocation, format: ManifestFormat? = nil, headers: [String: String] = [:]) {
        self.location = location
        self.format = format
        self.headers = headers
    }

    public var isRemote: Bool {
        if case .remote = location { return true }
        return false
    }

    /// Reads and parses the manifest. `client` fetches a remote one and is not used for a file.
    public func load(client: (any RemoteClient)?) throws(ManifestError) -> Manifest {
        switch location {
        case .file(let path):
            return try Manifest.load(path: path, format: format).addingHeaders(headers)
        case .remote(let url):
            guard let client else { preconditionFailure("a remote manifest needs a client to fetch it") }
            let source = url.redactedForDisplay
            let data = try RemoteManifestDownload(url: url, headers: headers, client: client).data()
            // A NUL never occurs in a manifest of any format; an audio file or an image does have them.
            if data.contains(0) {
                throw ManifestError(source: source, line: 0, reason: "the reply is not text, so not a manifest")
            }
            let text = try ManifestFileReader.decodeText(data, source: source)
            // The path alone: a query string must not hide the extension.
            let format = format ?? ManifestFormat.detect(path: url.path, text: text)
            // The headers were given for the manifest's origin: entries a server lists elsewhere get none.
            return try Manifest.parse(text, source: source, format: format, baseURL: url).addingHeaders(headers, onlyOn: url)
        }
    }
}
