import Foundation

/// An SFTP directory named as curl and file managers name one: `sftp://USER@HOST[:PORT]/PATH/`.
/// The path is absolute on the server, as curl reads it; `/~/PATH/` is below the user's home.
/// Pure: the URLs of the directory's children and the way back from such a URL to the path the
/// server knows.
public struct SFTPAddress: Sendable, Equatable {
    public var user: String
    public var host: String
    public var port: Int
    /// The mounted directory's URL, ending in `/`: the root of the listed tree.
    public var rootURL: URL

    public static let defaultPort = 22

    /// The address `argument` names, or nil when it is no `sftp://` URL at all. Throws for one
    /// that is, but cannot be mounted: no host, a password in it, a port out of range.
    /// `localUser`: the user when the URL names none, as ssh takes the local login name.
    public static func parse(_ argument: String, localUser: String) throws(SFTPAddressError) -> SFTPAddress? {
        guard argument.lowercased().hasPrefix("sftp://") else { return nil }
        let shown = CredentialRedactor.redactingLoosely(argument)
        guard var parts = URLComponents(string: argument), let host = parts.host, !host.isEmpty else {
            throw SFTPAddressError(address: shown, reason: "not a URL with a host")
        }
        guard parts.password == nil else {
            throw SFTPAddressError(address: shown, reason: "a password does not go in the URL: give it with --password-file, or sign in with a key")
        }
        guard parts.query == nil, parts.fragment == nil else {
            throw SFTPAddressError(address: shown, reason: "a '?' or '#' in a path is written %3F or %23")
        }
        let port = parts.port ?? defaultPort
        guard (1...65535).contains(port) else { throw SFTPAddressError(address: shown, reason: "port \(port) is out of range") }
        let user = parts.user ?? localUser
        guard !user.isEmpty else { throw SFTPAddressError(address: shown, reason: "no user: write sftp://USER@HOST/PATH/") }
        parts.scheme = "sftp"
        parts.user = user
        if parts.percentEncodedPath.isEmpty { parts.percentEncodedPath = "/" }
        if !parts.percentEncodedPath.hasSuffix("/") { parts.percentEncodedPath += "/" }
        guard let root = parts.url else { throw SFTPAddressError(address: shown, reason: "not a URL with a host") }
        return SFTPAddress(user: user, host: host, port: port, rootURL: root)
    }

    /// The path the server knows `url` by: its percent-decoded path, or for `/~/…` the part
    /// after it, which the server resolves against the user's home (`.` for the home itself).
    /// Nil for a URL whose path does not decode to UTF-8 or holds a NUL.
    public static func remotePath(of url: URL) -> String? {
        guard let encoded = URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedPath,
              let path = encoded.removingPercentEncoding, !path.contains("\0") else { return nil }
        if path == "/~" || path == "/~/" { return "." }
        if path.hasPrefix("/~/") { return String(path.dropFirst(3)) }
        return path.isEmpty ? "/" : path
    }

    /// The URL of `relativePath` (names, none empty) below the directory `root` (a URL ending in
    /// `/`), each name percent-encoded (only unreserved characters stay as they are, so `#`, `?`,
    /// `%` and spaces survive the trip); a directory's ends in `/`.
    public static func url(root: URL, below relativePath: [String], isDirectory: Bool) -> URL {
        var text = root.absoluteString
        text += relativePath.map(Self.encoded).joined(separator: "/")
        if isDirectory, !relativePath.isEmpty { text += "/" }
        // Every character of `text` is one a URL may hold: the root's and the encoded names.
        return URL(string: text)!
    }

    /// `name` with every byte outside RFC 3986's unreserved set percent-encoded.
    static func encoded(_ name: String) -> String {
        var text = ""
        for byte in name.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                 UInt8(ascii: "_"), UInt8(ascii: "~"):
                text.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                text += String(format: "%%%02X", byte)
            }
        }
        return text
    }

    /// How the server is named in messages and in `known_hosts`: `HOST`, or `[HOST]:PORT` off port 22.
    public var knownHostsName: String {
        port == Self.defaultPort ? host : "[\(host)]:\(port)"
    }
}

/// An `sftp://` address that cannot be mounted, and why.
public struct SFTPAddressError: Error, Sendable, Equatable, CustomStringConvertible {
    public var address: String
    public var reason: String

    public var description: String {
        "\(address): \(reason) (sftp://USER@HOST[:PORT]/PATH/)"
    }
}
