import Foundation

// Design note: web servers' directory pages read as entries, with no I/O.
//
// - Formats: nginx `autoindex` (HTML, JSON, XML), Apache `mod_autoindex` (plain, FancyIndexing,
//   HTMLTable), lighttpd, Python's `http.server`, and any other page's links.
// - The href names an entry, not the text shown; only links one segment below the page count
//   (`ListingBase`); sizes and dates are taken only where the format states them exactly.
// - Every page is read in time linear in its size whatever its shape (one line, links never
//   closed: the scanner's searches after a link stop where the next one starts, a row is at most
//   1 KiB), and a page of more entries than the mount may hold is refused as it is read.
// - The I/O around it is the listed tree's (`WebDirectoryLister`).

/// One entry of a web server's directory listing.
public struct WebListingEntry: Sendable, Equatable, Codable {
    /// The name in the mount: the last segment of the link, percent-decoded (or the name a
    /// JSON/XML listing states), checked like a manifest path component.
    public var name: String
    /// Where the entry is, absolute; a directory's ends in `/`.
    public var url: URL
    public var isDirectory: Bool
    /// Only when the listing states the exact byte count; nil for a rounded size ("1.2M"),
    /// which is left to a HEAD.
    public var size: UInt64?
    /// Only when the listing states it with its zone (nginx's pages are in GMT); Apache and
    /// lighttpd write the server's local time without saying which, so a HEAD decides there.
    public var modified: Date?

    public init(name: String, url: URL, isDirectory: Bool, size: UInt64? = nil, modified: Date? = nil) {
        self.name = name
        self.url = url
        self.isDirectory = isDirectory
        self.size = size
        self.modified = modified
    }
}

/// The page layouts told apart; each decides what besides names can be trusted.
public enum WebListingFormat: String, Sendable, Equatable, CaseIterable {
    /// nginx `autoindex` (HTML): exact sizes unless `autoindex_exact_size off`, GMT dates to the minute.
    case nginxHTML = "nginx-html"
    /// nginx `autoindex_format json`: exact sizes and dates.
    case nginxJSON = "nginx-json"
    /// nginx `autoindex_format xml`: exact sizes and dates.
    case nginxXML = "nginx-xml"
    /// Apache `mod_autoindex` without FancyIndexing: names only.
    case apachePlain = "apache-plain"
    /// Apache FancyIndexing (`<pre>`): sizes exact only below 1 KiB, dates in local time.
    case apacheFancy = "apache-fancy"
    /// Apache FancyIndexing with HTMLTable: as `apacheFancy`, in a table.
    case apacheTable = "apache-table"
    /// lighttpd `mod_dirlisting`: rounded sizes and local dates, so names only.
    case lighttpd
    /// Python's `http.server`: names only.
    case pythonHTTPServer = "python-http-server"
    /// Any other HTML page: the links to entries directly below it, names only.
    case genericHTML = "generic-html"
}

/// A link that looked like an entry but whose name cannot be one.
public struct SkippedListingLink: Sendable, Equatable, CustomStringConvertible {
    public var href: String
    public var reason: String

    public var description: String { "\(DisplayText.quoted(href)): \(reason)" }
}

/// Why a page is not a listing that can be read.
public struct WebListingError: Error, Sendable, Equatable, CustomStringConvertible {
    public var url: String
    public var reason: String

    public var description: String { "\(url): \(reason)" }
}

/// A directory listing as parsed from the page a web server sent. Pure: no I/O.
public struct WebListing: Sendable, Equatable {
    public var format: WebListingFormat
    /// In the order of the page, each name once.
    public var entries: [WebListingEntry]
    /// Links to entries whose names are not valid, each with its reason.
    public var skipped: [SkippedListingLink]

    /// Reads a listing page.
    /// - Parameters:
    ///   - page: the body as received.
    ///   - url: the URL the page came from, after redirects: links resolve against it.
    ///   - contentType: the reply's `Content-Type`, if any.
    ///   - maxEntries: a page with more entries is refused (`--max-listed-entries`): the
    ///     mount could not hold them.
    public static func parse(_ page: Data, url: URL, contentType: String?,
                             maxEntries: Int = .max) throws(WebListingError) -> WebListing {
        let shown = url.redactedForDisplay
        guard let base = ListingBase(url) else {
            throw WebListingError(url: shown, reason: "not an http(s) URL of a directory")
        }
        let mediaType = contentType.map { $0.split(separator: ";")[0].trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        let isJSON = mediaType == "application/json", isXML = mediaType.hasSuffix("/xml")
        let isHTML = mediaType == "text/html" || mediaType == "application/xhtml+xml"
        guard mediaType.isEmpty || isJSON || isXML || isHTML else {
            throw WebListingError(url: shown, reason: "not a directory listing (Content-Type: \(mediaType))")
        }
        if page.contains(0) {
            throw WebListingError(url: shown, reason: "the reply is not text, so not a directory listing")
        }
        let text = String(decoding: page, as: UTF8.self)
        let trimmed = text.drop { $0.isWhitespace || $0 == "\u{FEFF}" }
        var collector = ListingCollector(base: base, maxEntries: maxEntries)
        let format: WebListingFormat
        if isJSON || (mediaType.isEmpty && trimmed.hasPrefix("[")) {
            format = .nginxJSON
            try NginxStructuredListing.readJSON(page, into: &collector, source: shown)
        } else if isXML || (mediaType.isEmpty && trimmed.hasPrefix("<?xml")) {
            format = .nginxXML
            try NginxStructuredListing.readXML(text, into: &collector, source: shown)
        } else {
            format = HTMLListing.format(of: text)
            HTMLListing.read(text, format: format, into: &collector)
        }
        if collector.isOverLimit {
            throw WebListingError(url: shown, reason: "more than \(maxEntries) entries in one directory, more than the mount holds (--max-listed-entries)")
        }
        return WebListing(format: format, entries: collector.entries, skipped: collector.skipped)
    }
}

/// Gathers entries in page order, each name once, and the links skipped with their reasons.
struct ListingCollector {
    let base: ListingBase
    private(set) var entries: [WebListingEntry] = []
    private(set) var skipped: [SkippedListingLink] = []
    private var positions: [String: Int] = [:]
    /// Past this many entries the listing is refused; none is added after it.
    let maxEntries: Int

    init(base: ListingBase, maxEntries: Int = .max) {
        self.base = base
        self.maxEntries = maxEntries
    }

    /// More entries than `maxEntries` were found (one more than it is kept, to tell).
    var isOverLimit: Bool { entries.count > maxEntries }

    /// Adds the entry `name` (decoded) unless its name is invalid. A name seen before keeps its
    /// place; facts the later link states fill in what the earlier one lacked (an icon link
    /// before the name's own).
    mutating func add(name: String, isDirectory: Bool, size: UInt64?, modified: Date?, href: String) {
        do throws(EntryPathError) {
            _ = try EntryPath(validatingComponent: name)
        } catch {
            skipped.append(SkippedListingLink(href: href, reason: error.reason))
            return
        }
        guard !isOverLimit else { return }
        if let index = positions[name] {
            if entries[index].size == nil { entries[index].size = isDirectory ? nil : size }
            if entries[index].modified == nil { entries[index].modified = modified }
            return
        }
        positions[name] = entries.count
        entries.append(WebListingEntry(name: name, url: base.url(ofChild: name, isDirectory: isDirectory),
                                       isDirectory: isDirectory, size: isDirectory ? nil : size, modified: modified))
    }

    mutating func skip(href: String, reason: String) {
        skipped.append(SkippedListingLink(href: href, reason: reason))
    }
}
