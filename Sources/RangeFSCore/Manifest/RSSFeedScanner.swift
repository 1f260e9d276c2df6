import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// What a feed says about one `<item>`, as written, before any of it is checked.
struct RSSItem: Sendable {
    var title: String?
    /// `<itunes:title>`, used when an item has no `<title>`.
    var itunesTitle: String?
    var pubDate: String?
    var enclosure: RSSEnclosure?
    /// 1-based position among all items of the feed, for messages.
    var number: Int
    var line: Int
}

struct RSSEnclosure: Sendable {
    var url: String?
    var length: String?
    var type: String?
    var line: Int
}

/// The items of an RSS feed, read with XMLParser (libxml2).
struct RSSFeedScan: Sendable {
    var rootElement: String?
    var items: [RSSItem]

    static func scan(_ text: String) throws(DocumentSyntaxError) -> RSSFeedScan {
        let delegate = RSSFeedScannerDelegate()
        try GuardedXMLParser.parse(text, delegate: delegate)
        return RSSFeedScan(rootElement: delegate.rootElement, items: delegate.items)
    }
}

/// Collects items as XMLParser walks the feed. Element names are matched with their
/// prefixes (`itunes:title`), since namespace processing is off.
private final class RSSFeedScannerDelegate: NSObject, ErrorRecordingXMLParserDelegate {
    private(set) var rootElement: String?
    private(set) var items: [RSSItem] = []
    var firstError: (code: Int, line: Int)?
    private var current: RSSItem?
    private var depth = 0
    private var itemDepth = 0
    /// The item field whose text is being collected, and the text so far.
    private var capturing: WritableKeyPath<RSSItem, String?>?
    private var captured = ""

    func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
                qualifiedName qName: String?, attributes: [String: String] = [:]) {
        depth += 1
        if rootElement == nil { rootElement = elementName }
        guard current != nil else {
            if elementName == "item" {
                current = RSSItem(number: items.count + 1, line: parser.lineNumber)
                itemDepth = depth
            }
            return
        }
        // Only the item's own children: a <title> inside <image> or <media:group> is not the episode's.
        guard depth == itemDepth + 1 else { return }
        switch elementName {
        case "title": startCapturing(\.title)
        case "itunes:title": startCapturing(\.itunesTitle)
        case "pubDate": startCapturing(\.pubDate)
        case "enclosure" where current?.enclosure == nil:
            // RSS allows one enclosure per item; players use the first when there are more.
            current?.enclosure = RSSEnclosure(url: attributes["url"], length: attributes["length"],
                                              type: attributes["type"], line: parser.lineNumber)
        default: break
        }
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?) {
        if let field = capturing, depth == itemDepth + 1 {
            current?[keyPath: field] = captured
            capturing = nil
        }
        if depth == itemDepth, let item = current {
            items.append(item)
            current = nil
        }
        depth -= 1
    }

    func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) {
        record(parseError, at: parser.lineNumber)
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        if capturing != nil { captured += string }
    }

    func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
        if capturing != nil { captured += String(decoding: CDATABlock, as: UTF8.self) }
    }

    private func startCapturing(_ field: WritableKeyPath<RSSItem, String?>) {
        capturing = field
        captured = ""
    }
}
