import Foundation

// A WebDAV server (Nextcloud, ownCloud, a NAS, Apache mod_dav, WsgiDAV, rclone serve webdav)
// mounted from its collections, as a web directory is mounted from its pages:
//
// - `WebDAVAddress` turns `dav://` and `davs://` into the http(s) URL of the collection.
// - `WebDAVLister` lists one collection with one `PROPFIND` (`Depth: 1`, asking for the three
//   properties the tree shows), off the thread that runs every transfer.
// - `WebDAVListing` (pure) reads the `207 Multi-Status` reply into the entries the listed
//   tree takes: a name from each member's `href`, a directory where `resourcetype` says
//   `collection`, the exact size (`getcontentlength`) and date (`getlastmodified`).
//
// Files are then read with ranged GETs like any web server's: the listed size makes the file
// at once, and its first range reply names the version. Nothing else of the mount knows the
// tree came from WebDAV.

/// One collection's members as a `PROPFIND` with `Depth: 1` reported them. Pure: no I/O.
public struct WebDAVListing: Sendable, Equatable {
    /// The members, in the order of the reply, each name once.
    public var entries: [WebListingEntry]
    /// Members left out (a name that cannot be a file name, a member the server would not
    /// describe), each with its reason.
    public var skipped: [SkippedListingLink]

    /// The `PROPFIND` body: only what the tree shows, so a server does not compute the rest
    /// (quotas, locks, content types, ETags) for every member. A file's version comes from its
    /// first range reply, as for a web directory's stated sizes.
    public static let propfindBody = """
        <?xml version="1.0" encoding="utf-8"?>
        <D:propfind xmlns:D="DAV:"><D:prop><D:resourcetype/><D:getcontentlength/>\
        <D:getlastmodified/></D:prop></D:propfind>
        """

    /// Reads a multistatus reply.
    /// - Parameters:
    ///   - body: the reply's body.
    ///   - url: the collection's URL after redirects: `href`s resolve against it, and only its
    ///     direct members count (a server that answers with deeper members, as for
    ///     `Depth: infinity`, has those left out).
    ///   - maxEntries: a collection of more members is refused (`--max-listed-entries`).
    public static func parse(_ body: Data, url: URL, maxEntries: Int = .max) throws(WebListingError) -> WebDAVListing {
        let shown = url.redactedForDisplay
        guard let base = ListingBase(url) else {
            throw WebListingError(url: shown, reason: "not an http(s) URL of a collection")
        }
        let root: XMLElementTree
        do throws(DocumentSyntaxError) {
            root = try XMLElementTree.parseDocument(body)
        } catch {
            throw WebListingError(url: shown, reason: "the PROPFIND reply is not XML (line \(error.line): \(error.reason))")
        }
        guard root.name == "multistatus" else {
            throw WebListingError(url: shown, reason: "the PROPFIND reply is not a WebDAV multistatus: its root element is <\(root.name)>")
        }
        var collector = ListingCollector(base: base, maxEntries: maxEntries)
        var describedItself = false
        for response in root.children(named: "response") {
            let member = Member(response)
            guard let href = member.href else {
                collector.skip(href: "", reason: "a response without an href")
                continue
            }
            guard let child = base.child(ofHref: href) else {
                // The collection itself, or a resource deeper down or elsewhere.
                if base.isItself(href: href) {
                    describedItself = true
                    if let refusal = member.refusal {
                        throw WebListingError(url: shown, reason: "the server would not describe the collection: \(refusal)")
                    }
                }
                continue
            }
            if let refusal = member.refusal {
                collector.skip(href: href, reason: "the server would not describe it: \(refusal)")
                continue
            }
            guard let name = child.name else {
                collector.skip(href: href, reason: "its name is not UTF-8 once decoded")
                continue
            }
            let isDirectory = member.isCollection || child.isDirectory
            collector.add(name: name, isDirectory: isDirectory, size: isDirectory ? nil : member.size,
                          modified: member.modified, href: href)
            if collector.isOverLimit {
                throw WebListingError(url: shown, reason: "more than \(maxEntries) entries in one directory, more than the mount holds (--max-listed-entries)")
            }
        }
        guard describedItself || !collector.entries.isEmpty else {
            throw WebListingError(url: shown, reason: "the multistatus describes neither the collection nor any member")
        }
        return WebDAVListing(entries: collector.entries, skipped: collector.skipped)
    }
}

/// One `<response>` of a multistatus: its `href` and what its successful `propstat`s say.
private struct Member {
    var href: String?
    var isCollection = false
    var size: UInt64?
    var modified: Date?
    /// Why the server gave no properties: a `<status>` of the response, or of every
    /// `propstat`, that is not 2xx.
    var refusal: String?

    init(_ response: XMLElementTree) {
        href = response.child("href").map { $0.text.trimmingCharacters(in: .whitespacesAndNewlines) }
        // RFC 4918 §14.24: a response holds either a status of its own or its propstats.
        if let status = response.child("status"), let code = Self.code(of: status.text), !(200..<300).contains(code) {
            refusal = Self.reason(status.text)
            return
        }
        let propstats = response.children(named: "propstat")
        let granted = propstats.filter { propstat in
            propstat.child("status").flatMap { Self.code(of: $0.text) }.map { (200..<300).contains($0) } ?? true
        }
        if granted.isEmpty, let status = propstats.first?.child("status") {
            refusal = Self.reason(status.text)
            return
        }
        for prop in granted.compactMap({ $0.child("prop") }) {
            for property in prop.children {
                let text = property.text.trimmingCharacters(in: .whitespacesAndNewlines)
                switch property.name {
                case "resourcetype": if property.child("collection") != nil { isCollection = true }
                case "getcontentlength": size = Self.byteCount(text)
                case "getlastmodified": modified = RFC822Date.parse(text)?.date
                default: break
                }
            }
        }
    }

    /// The code of a status line (`HTTP/1.1 404 Not Found`).
    private static func code(of statusLine: String) -> Int? {
        let fields = statusLine.split(whereSeparator: \.isWhitespace)
        guard fields.count >= 2 else { return nil }
        return Int(fields[1])
    }

    /// The status line without its protocol, for a message: `404 Not Found`.
    private static func reason(_ statusLine: String) -> String {
        statusLine.split(whereSeparator: \.isWhitespace).dropFirst().joined(separator: " ")
    }

    /// Digits only: a size is never signed, spaced or fractional.
    private static func byteCount(_ text: String) -> UInt64? {
        guard !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        return UInt64(text)
    }
}
