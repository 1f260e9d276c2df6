import Foundation

/// The directory a listing page describes, and the test of whether a link on it names an
/// entry of that directory: one path segment directly below it, on the same scheme, host and
/// port, without a query or fragment. Parent links, links to other hosts or to absolute paths
/// elsewhere, sort links (`?C=N;O=D`), `mailto:` and in-page anchors all fail it.
struct ListingBase: Sendable {
    private let scheme: String
    private let host: String
    private let port: Int
    /// The page's directory path as sent, percent-encoded, ending in "/".
    private let encodedPath: String
    /// Its segments, decoded, for comparing with a link's (which may encode differently).
    private let segments: [String]
    /// `scheme://authority/path/`: a child's URL is this and its encoded name.
    private let prefix: String

    /// A link that names an entry directly below the page.
    struct Child: Equatable {
        /// The last segment, percent-decoded; nil when it is not valid UTF-8 once decoded.
        var name: String?
        var isDirectory: Bool
    }

    init?(_ url: URL) {
        guard var parts = URLComponents(url: url, resolvingAgainstBaseURL: true),
              let scheme = parts.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = parts.host?.lowercased(), !host.isEmpty else { return nil }
        self.scheme = scheme
        self.host = host
        port = parts.port ?? (scheme == "https" ? 443 : 80)
        // Links resolve against the page URL's directory, as a browser resolves them: for
        // `/music` (no slash) that is `/`. Servers redirect a directory's URL to end in `/`.
        let path = parts.percentEncodedPath.isEmpty ? "/" : parts.percentEncodedPath
        encodedPath = String(path[...path.lastIndex(of: "/")!])
        segments = Array(Self.segments(of: encodedPath).dropLast())
        parts.percentEncodedPath = encodedPath
        parts.query = nil
        parts.fragment = nil
        guard let prefix = parts.string else { return nil }
        self.prefix = prefix
    }

    /// The absolute URL of the entry `name` (decoded) in this directory.
    func url(ofChild name: String, isDirectory: Bool) -> URL {
        URL(string: prefix + Self.encodeSegment(name) + (isDirectory ? "/" : ""))!
    }

    /// The entry `href` names, or nil when it leads anywhere else. `href` is the attribute's
    /// value with its character references already decoded.
    func child(ofHref href: String) -> Child? {
        guard var linked = linkedSegments(href) else { return nil }
        let isDirectory = linked.last == ""
        if isDirectory { linked.removeLast() }
        guard linked.count == segments.count + 1, Array(linked.prefix(segments.count)) == segments,
              let last = linked.last, !last.isEmpty else { return nil }
        return Child(name: last == Self.undecodable ? nil : last, isDirectory: isDirectory)
    }

    /// Whether `href` names this directory itself, with or without its final `/` (a WebDAV
    /// multistatus describes the collection asked for beside its members).
    func isItself(href: String) -> Bool {
        guard var linked = linkedSegments(href) else { return false }
        if linked.last == "" { linked.removeLast() }
        return linked == segments
    }

    /// The decoded segments of the absolute path `href` leads to ("" last for a directory's),
    /// or nil when it leads off this server or carries a query or fragment.
    private func linkedSegments(_ href: String) -> [String]? {
        let link = href.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !link.isEmpty, !link.contains("?"), !link.contains("#") else { return nil }
        let path: String
        if let colon = link.firstIndex(of: ":"), Self.isScheme(link[..<colon]) {
            guard link[..<colon].lowercased() == scheme, link[colon...].hasPrefix("://"),
                  let rest = sameAuthorityPath(link[link.index(colon, offsetBy: 3)...]) else { return nil }
            path = rest
        } else if link.hasPrefix("//") {
            guard let rest = sameAuthorityPath(link.dropFirst(2)) else { return nil }
            path = rest
        } else if link.hasPrefix("/") {
            path = link
        } else {
            path = encodedPath + link
        }
        return Self.segments(of: Self.removingDotSegments(path))
    }

    /// The path after `scheme://` when the authority is this page's, else nil.
    private func sameAuthorityPath(_ rest: Substring) -> String? {
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        var authority = rest[..<slash]
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        var linkHost = authority
        var linkPort = scheme == "https" ? 443 : 80
        if let colon = authority.lastIndex(of: ":"), !authority.hasSuffix("]") {
            guard let number = Int(authority[authority.index(after: colon)...]) else { return nil }
            linkHost = authority[..<colon]
            linkPort = number
        }
        guard linkHost.lowercased() == host, linkPort == port else { return nil }
        return slash == rest.endIndex ? "/" : String(rest[slash...])
    }

    /// Stands for a segment whose escapes do not decode to UTF-8.
    private static let undecodable = "\u{0}"

    /// The segments of an absolute path, decoded: "/a%20b/c/" is ["a b", "c", ""].
    private static func segments(of path: String) -> [String] {
        path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
            .map { PercentDecoding.decode($0) ?? undecodable }
    }

    /// RFC 3986 §5.2.4, on whole segments: "/a/./b/../c" is "/a/c".
    private static func removingDotSegments(_ path: String) -> String {
        var output: [Substring] = []
        let input = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        for (index, segment) in input.enumerated() {
            let isLast = index == input.count - 1
            switch segment {
            case ".": if isLast { output.append("") }
            case "..":
                if !output.isEmpty { output.removeLast() }
                if isLast { output.append("") }
            default: output.append(segment)
            }
        }
        return "/" + output.joined(separator: "/")
    }

    private static func isScheme(_ text: Substring) -> Bool {
        guard let first = text.unicodeScalars.first, ("a"..."z").contains(first) || ("A"..."Z").contains(first) else {
            return false
        }
        return text.unicodeScalars.allSatisfy { scalar in
            ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
                || scalar == "+" || scalar == "-" || scalar == "."
        }
    }

    /// Every byte but the unreserved ones (RFC 3986 §2.3) escaped: any server decodes that.
    static func encodeSegment(_ name: String) -> String {
        PercentEncoding.escapingAllButUnreserved(name.utf8)
    }
}
