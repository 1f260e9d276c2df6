import Foundation

/// Reads the HTML listings: every `<a href>` of the page is a candidate, and the href, not
/// the text shown, names the entry (servers cut long names short in the text). What follows
/// a link on its line is its row, where nginx and Apache state the date and size.
enum HTMLListing {
    /// Tells the servers' pages apart by the marks each leaves on every listing.
    static func format(of page: String) -> WebListingFormat {
        if page.contains("<div class=\"foot\">lighttpd") || page.contains("summary=\"Directory Listing\"") {
            return .lighttpd
        }
        if page.contains("<title>Directory listing for ") { return .pythonHTTPServer }
        guard page.contains("<title>Index of ") else { return .genericHTML }
        if page.contains("</h1><hr><pre>") { return .nginxHTML }
        if page.contains("<table>") { return .apacheTable }
        if page.contains("<pre>") { return .apacheFancy }
        if page.contains("<ul>") { return .apachePlain }
        return .genericHTML
    }

    static func read(_ page: String, format: WebListingFormat, into collector: inout ListingCollector) {
        HTMLAnchorScanner(page).scan { anchor in
            guard let child = collector.base.child(ofHref: anchor.href) else { return true }
            guard let name = child.name else {
                collector.skip(href: anchor.href, reason: "its name is not UTF-8 once its escapes are decoded")
                return true
            }
            let row = ListingRow(format: format, text: anchor.rowText)
            collector.add(name: name, isDirectory: child.isDirectory, size: row.size, modified: row.modified,
                          href: anchor.href)
            // A page with more entries than a listing may hold is refused whole: no need to read on.
            return !collector.isOverLimit
        }
    }
}

/// The date and size a listing row states after its link, read only where the format's
/// meaning of them is known.
struct ListingRow {
    var size: UInt64?
    var modified: Date?

    /// `text`: the row after the link, tags removed, such as `24-Nov-2026 09:27   1500000`
    /// (nginx) or `2026-11-24 09:27  1.4M` (Apache).
    init(format: WebListingFormat, text: String) {
        let tokens = text.split(whereSeparator: \.isWhitespace)
        guard tokens.count >= 3 else { return }
        switch format {
        case .nginxHTML:
            // `dd-Mon-yyyy HH:MM`, in GMT unless `autoindex_localtime on` (which the page does not show).
            let day = tokens[0].split(separator: "-")
            guard day.count == 3, day[0].count == 2, day[2].count == 4 else { return }
            modified = RFC822Date.parse("\(day[0]) \(day[1]) \(day[2]) \(tokens[1]) GMT")?.date
            guard modified != nil else { return }
        case .apacheFancy, .apacheTable:
            // `yyyy-mm-dd HH:MM` in the server's local time, whose zone the page does not give.
            guard ISO8601Timestamp.parse("\(tokens[0])T\(tokens[1]):00Z") != nil else { return }
        default:
            return
        }
        size = Self.exactSize(tokens[2])
    }

    /// A bare number of bytes; nil for `-` (a directory) and for rounded sizes (`20K`, `1.4M`).
    static func exactSize(_ token: Substring) -> UInt64? {
        guard token.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        return UInt64(token)
    }
}

/// Finds the `<a href>` links of an HTML page, skipping comments, scripts and styles, with the
/// text that follows each on its line. Not a full HTML parser: listings are generated pages.
/// Reads the page once, whatever its shape: each search after a link stops where the next link
/// starts (a page on one line, or of links never closed, would otherwise be searched to its end
/// once per link).
struct HTMLAnchorScanner {
    struct Anchor {
        /// The attribute's value, character references decoded.
        var href: String
        /// What follows the link up to the end of its line (or the next link), as text.
        var rowText: String
    }

    private let bytes: [UInt8]

    init(_ page: String) {
        bytes = Array(page.utf8)
    }

    /// The most of a row read after its link: listings state the date and size within a few
    /// dozen bytes of it.
    static let maxRowBytes = 1024

    /// Calls `visit` with each link in page order until it returns false.
    func scan(_ visit: (Anchor) -> Bool) {
        var index = 0
        while let open = next(UInt8(ascii: "<"), from: index) {
            index = open + 1
            if starts(with: "!--", at: index) {
                index = end(of: "-->", from: index + 3)
            } else if let skipped = ["script", "style"].first(where: { startsTag($0, at: index) }) {
                index = end(of: "</" + skipped, from: index)
            } else if startsTag("a", at: index) {
                let (attributes, close) = readAttributes(from: index + 1)
                index = close
                guard let href = attributes["href"] else { continue }
                guard visit(Anchor(href: href, rowText: rowText(afterTagEndingAt: close))) else { return }
            }
        }
    }

    /// The row of the link whose start tag ends at `tagEnd`: from after its `</a>` to the end
    /// of the line or the next link, as text, at most `maxRowBytes`. Empty for a link with no
    /// `</a>` before the next link starts.
    private func rowText(afterTagEndingAt tagEnd: Int) -> String {
        guard let closing = closingTag(from: tagEnd) else { return "" }
        let windowEnd = min(bytes.count, closing + 3 + Self.maxRowBytes)
        guard let closed = bytes[(closing + 3)..<windowEnd].firstIndex(of: UInt8(ascii: ">")) else { return "" }
        let rowStart = closed + 1
        let rowLimit = min(bytes.count, rowStart + Self.maxRowBytes)
        var rowEnd = rowStart
        while rowEnd < rowLimit, bytes[rowEnd] != UInt8(ascii: "\n"),
              !(bytes[rowEnd] == UInt8(ascii: "<") && starts(with: "<a", at: rowEnd, caseInsensitive: true)) {
            rowEnd += 1
        }
        return HTMLText.plainText(string(rowStart..<rowEnd))
    }

    /// Where the link's `</a` is, looking from `start` no further than where the next link starts.
    private func closingTag(from start: Int) -> Int? {
        var index = start
        while let candidate = next(UInt8(ascii: "<"), from: index) {
            if starts(with: "</a", at: candidate, caseInsensitive: true) { return candidate }
            if startsTag("a", at: candidate + 1) { return nil }
            index = candidate + 1
        }
        return nil
    }

    /// The attributes of the tag whose name ends before `start`, and the index after its `>`.
    private func readAttributes(from start: Int) -> ([String: String], Int) {
        var attributes: [String: String] = [:]
        var index = start
        func skipSpace() { while index < bytes.count, HTMLText.isSpace(bytes[index]) { index += 1 } }
        while true {
            skipSpace()
            guard index < bytes.count else { return (attributes, index) }
            if bytes[index] == UInt8(ascii: ">") { return (attributes, index + 1) }
            if bytes[index] == UInt8(ascii: "/") { index += 1; continue }
            let nameStart = index
            while index < bytes.count, !HTMLText.isSpace(bytes[index]), bytes[index] != UInt8(ascii: "="),
                  bytes[index] != UInt8(ascii: ">") { index += 1 }
            let name = string(nameStart..<index).lowercased()
            skipSpace()
            var value = ""
            if index < bytes.count, bytes[index] == UInt8(ascii: "=") {
                index += 1
                skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "'") {
                    let quote = bytes[index]
                    let valueEnd = next(quote, from: index + 1) ?? bytes.count
                    value = string(index + 1..<valueEnd)
                    index = min(valueEnd + 1, bytes.count)
                } else {
                    let valueStart = index
                    while index < bytes.count, !HTMLText.isSpace(bytes[index]), bytes[index] != UInt8(ascii: ">") { index += 1 }
                    value = string(valueStart..<index)
                }
            }
            if !name.isEmpty, attributes[name] == nil { attributes[name] = HTMLText.decodingReferences(value) }
        }
    }

    private func string(_ range: Range<Int>) -> String {
        String(decoding: bytes[range], as: UTF8.self)
    }

    private func next(_ byte: UInt8, from start: Int) -> Int? {
        guard start < bytes.count else { return nil }
        return bytes[start...].firstIndex(of: byte)
    }

    private func starts(with text: String, at index: Int, caseInsensitive: Bool = false) -> Bool {
        let wanted = Array(text.utf8)
        guard index + wanted.count <= bytes.count else { return false }
        for (offset, byte) in wanted.enumerated() {
            let actual = bytes[index + offset]
            if actual != byte, !(caseInsensitive && HTMLText.lowercased(actual) == byte) { return false }
        }
        return true
    }

    /// A tag of this name (lowercase) starts at `index`: the name, then a space, `>` or `/`.
    private func startsTag(_ name: String, at index: Int) -> Bool {
        guard starts(with: name, at: index, caseInsensitive: true) else { return false }
        let after = index + name.utf8.count
        return after < bytes.count && (HTMLText.isSpace(bytes[after]) || bytes[after] == UInt8(ascii: ">")
                                       || bytes[after] == UInt8(ascii: "/"))
    }

    /// Where `text` next starts; its first byte is matched exactly (the markers start with `<` or `-`).
    private func find(_ text: String, from start: Int, caseInsensitive: Bool = false) -> Int? {
        var index = start
        while let candidate = next(text.utf8.first!, from: index) {
            if starts(with: text, at: candidate, caseInsensitive: caseInsensitive) { return candidate }
            index = candidate + 1
        }
        return nil
    }

    /// The index after the next `marker` (case-insensitive), or the end of the page.
    private func end(of marker: String, from start: Int) -> Int {
        find(marker, from: start, caseInsensitive: true).map { $0 + marker.utf8.count } ?? bytes.count
    }
}
