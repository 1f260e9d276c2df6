import Foundation

/// A Subsonic-API server as the mount names it: `subsonic+https://USER@HOST[:PORT]/PATH/` (or
/// `subsonic+http://`), the server's base URL with the user who signs in. The directories of the
/// mount have URLs of their own below the base (`directoryURL`), one per layout, artist, album or
/// folder, which `apiURL` turns into the API call that lists it; a track's URL is the API's
/// `download` of it. None holds a credential: `SubsonicDialect` adds them as a request goes out.
public struct SubsonicAddress: Sendable, Equatable {
    /// How the library is laid out in the mount.
    public enum Layout: String, Sendable, Equatable, CaseIterable {
        /// `Artist/Album (Year)/NN Title.ext` from the ID3 tags (`getArtists`, `getArtist`, `getAlbum`).
        case id3
        /// The server's own folders (`getIndexes`, `getMusicDirectory`).
        case folders
    }

    /// What a directory of the mount is on the server.
    public enum Directory: Sendable, Equatable {
        /// The top of the mount: every artist (ID3) or the indexes of the folders.
        case root(Layout)
        case artist(id: String)
        case album(id: String)
        case folder(id: String)
    }

    /// The server's base URL (`https://host:port/path/`), always ending in `/`, without the user.
    public let base: URL
    /// The user named in the address (`USER@`), if any.
    public let user: String?

    /// The address `argument` names, or nil when it is no `subsonic+http(s)://` address. Throws
    /// for one whose rest is no URL with a host, or that holds a password or a query.
    public static func parse(_ argument: String) throws(SubsonicAddressError) -> SubsonicAddress? {
        let lowered = argument.lowercased()
        guard lowered.hasPrefix("subsonic+http://") || lowered.hasPrefix("subsonic+https://") else { return nil }
        let shown = CredentialRedactor.redactingLoosely(argument)
        guard var parts = URLComponents(string: String(argument.dropFirst("subsonic+".count))),
              let host = parts.host, !host.isEmpty else {
            throw SubsonicAddressError(address: shown, reason: "not a URL with a host")
        }
        if parts.password != nil {
            throw SubsonicAddressError(address: shown, reason: "the password does not go in the address: give it with --password-file FILE, $\(SubsonicAddress.passwordVariable) or at the prompt")
        }
        if parts.query != nil || parts.fragment != nil {
            throw SubsonicAddressError(address: shown, reason: "the server's address takes no query or fragment")
        }
        let user = parts.user.flatMap { $0.isEmpty ? nil : $0 }
        parts.user = nil
        parts.scheme = parts.scheme?.lowercased()
        if !parts.percentEncodedPath.hasSuffix("/") { parts.percentEncodedPath += "/" }
        guard let base = parts.url else {
            throw SubsonicAddressError(address: shown, reason: "not a URL with a host")
        }
        return SubsonicAddress(base: base, user: user)
    }

    public init(base: URL, user: String?) {
        self.base = base
        self.user = user
    }

    /// The environment variable a password may be given in.
    public static let passwordVariable = "RANGEFS_PASSWORD"

    /// The mount's root for `layout`: each layout has its own tree of directory URLs, so the
    /// listings kept for one are never shown as the other's.
    public func rootURL(_ layout: Layout) -> URL {
        directoryURL(.root(layout))
    }

    /// The URL a directory of the mount is known by (kept listings, the tree), below the root of
    /// its layout: `id3/`, `id3/artist/ID/`, `id3/album/ID/`, `folders/`, `folders/ID/`.
    public func directoryURL(_ directory: Directory) -> URL {
        let path = switch directory {
        case .root(let layout): layout.rawValue + "/"
        case .artist(let id): "id3/artist/\(Self.encoded(id))/"
        case .album(let id): "id3/album/\(Self.encoded(id))/"
        case .folder(let id): "folders/\(Self.encoded(id))/"
        }
        return URL(string: path, relativeTo: base)!.absoluteURL
    }

    /// The directory `url` is (a `directoryURL`), or nil for another URL.
    public func directory(of url: URL) -> Directory? {
        let basePath = base.path(percentEncoded: true)
        let path = url.path(percentEncoded: true)
        guard url.scheme == base.scheme, url.host == base.host, url.port == base.port,
              path.hasPrefix(basePath) else { return nil }
        let parts = path.dropFirst(basePath.count).split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        func id(_ segment: String) -> String? { segment.removingPercentEncoding.flatMap { $0.isEmpty ? nil : $0 } }
        switch parts.count {
        case 2 where parts[1].isEmpty: return Layout(rawValue: parts[0]).map { .root($0) }
        case 3 where parts[0] == "folders" && parts[2].isEmpty: return id(parts[1]).map { .folder(id: $0) }
        case 4 where parts[0] == "id3" && parts[3].isEmpty:
            guard let id = id(parts[2]) else { return nil }
            switch parts[1] {
            case "artist": return .artist(id: id)
            case "album": return .album(id: id)
            default: return nil
            }
        default: return nil
        }
    }

    /// The API call that lists `directory`, without credentials (`SubsonicDialect` adds them).
    public func apiURL(listing directory: Directory) -> URL {
        switch directory {
        case .root(.id3): apiURL("getArtists", [:])
        case .root(.folders): apiURL("getIndexes", [:])
        case .artist(let id): apiURL("getArtist", ["id": id])
        case .album(let id): apiURL("getAlbum", ["id": id])
        case .folder(let id): apiURL("getMusicDirectory", ["id": id])
        }
    }

    /// A track's original file (`download`, never a transcode), read with ranged GETs.
    public func downloadURL(id: String) -> URL {
        apiURL("download", ["id": id])
    }

    /// `rest/METHOD.view?…` below the base; JSON replies for the calls that answer with a document.
    public func apiURL(_ method: String, _ parameters: [String: String]) -> URL {
        var items = parameters.sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value) }
        if method != "download" { items.append(("f", "json")) }
        return URL(string: "rest/\(method).view?" + Self.query(items), relativeTo: base)!.absoluteURL
    }

    /// `name=value&…`, every character but the unreserved ones percent-encoded (`&`, `=`, `+`
    /// in an id or a user name included).
    static func query(_ items: [(name: String, value: String)]) -> String {
        items.map { encoded($0.name) + "=" + encoded($0.value) }.joined(separator: "&")
    }

    /// Whether `url` is one of this server's API calls: only those are signed in.
    public func isAPICall(_ url: URL) -> Bool {
        url.scheme == base.scheme && url.host == base.host && url.port == base.port
            && url.path(percentEncoded: true).hasPrefix(base.path(percentEncoded: true) + "rest/")
    }

    /// The server as the log and errors show it.
    public var displayName: String {
        "subsonic+" + base.absoluteString
    }

    /// Text as a path segment or a query value: everything but the unreserved characters percent-encoded.
    private static func encoded(_ id: String) -> String {
        id.addingPercentEncoding(withAllowedCharacters: unreserved) ?? id
    }

    private static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
}

/// A `subsonic+http(s)://` address that cannot be mounted.
public struct SubsonicAddressError: Error, Sendable, Equatable, CustomStringConvertible {
    public var address: String
    public var reason: String

    public var description: String {
        "\(address): \(reason) (subsonic+https://USER@HOST[:PORT]/PATH/)"
    }
}
