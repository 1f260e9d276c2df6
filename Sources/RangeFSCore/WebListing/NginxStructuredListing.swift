import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// nginx's `autoindex_format json` and `xml`: names as they are on disk (not links), with
/// exact sizes and dates to the second. A directory's URL is its encoded name and a `/`.
enum NginxStructuredListing {
    /// `[{ "name":"a b", "type":"file", "mtime":"Tue, 24 Nov 2026 09:27:24 GMT", "size":4 }, …]`
    static func readJSON(_ page: Data, into collector: inout ListingCollector, source: String) throws(WebListingError) {
        struct Item: Decodable {
            var name: String
            var type: String
            var mtime: String?
            var size: UInt64?
        }
        let items: [Item]
        do {
            items = try JSONDecoder().decode([Item].self, from: page)
        } catch {
            throw WebListingError(url: source, reason: "not an nginx JSON listing: \(error.localizedDescription)")
        }
        for item in items {
            add(name: item.name, type: item.type, size: item.size,
                modified: item.mtime.flatMap { RFC822Date.parse($0)?.date }, into: &collector)
        }
    }

    /// `<list><directory mtime="2026-11-24T09:27:24Z">a b</directory><file mtime="…" size="4">c</file></list>`
    static func readXML(_ page: String, into collector: inout ListingCollector, source: String) throws(WebListingError) {
        do throws(DocumentSyntaxError) {
            try XMLInputGuard.check(page)
        } catch {
            throw WebListingError(url: source, reason: "not an nginx XML listing: \(error.reason)")
        }
        let parser = XMLParser(data: Data(XMLInputGuard.declaringUTF8(page).utf8))
        parser.shouldResolveExternalEntities = false
        let delegate = XMLListingDelegate()
        parser.delegate = delegate
        // XMLParser may return true after an error, so the errors it reported are checked too.
        let wellFormed = parser.parse() && !delegate.sawError && parser.parserError == nil
        guard wellFormed, delegate.rootElement == "list" else {
            let why = wellFormed ? "its root is <\(delegate.rootElement ?? "")>, not <list>" : "malformed XML at line \(parser.lineNumber)"
            throw WebListingError(url: source, reason: "not an nginx XML listing: \(why)")
        }
        for item in delegate.items {
            add(name: item.name, type: item.type, size: item.size.flatMap { UInt64($0) },
                modified: item.mtime.flatMap { ISO8601Timestamp.parse($0)?.date }, into: &collector)
        }
    }

    private static func add(name: String, type: String, size: UInt64?, modified: Date?, into collector: inout ListingCollector) {
        // The URL as a link would give it, so the same rules hold as for a page of links.
        let href = ListingBase.encodeSegment(name) + (type == "directory" ? "/" : "")
        switch type {
        case "directory", "file":
            collector.add(name: name, isDirectory: type == "directory", size: size, modified: modified, href: href)
        default:
            // Sockets, pipes and devices ("other") cannot be read over HTTP.
            collector.skip(href: href, reason: "it is neither a file nor a directory (type \(DisplayText.quoted(type)))")
        }
    }
}

/// Collects `<file>` and `<directory>` children of `<list>`.
private final class XMLListingDelegate: NSObject, XMLParserDelegate {
    struct Item {
        var type: String
        var name = ""
        var mtime: String?
        var size: String?
    }

    private(set) var rootElement: String?
    private(set) var items: [Item] = []
    private(set) var sawError = false
    private var current: Item?

    func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) {
        sawError = true
    }

    func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
                qualifiedName qName: String?, attributes: [String: String] = [:]) {
        if rootElement == nil {
            rootElement = elementName
        } else if current == nil {
            current = Item(type: elementName, mtime: attributes["mtime"], size: attributes["size"])
        }
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?) {
        if let item = current, elementName == item.type {
            items.append(item)
            current = nil
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        current?.name += string
    }
}
