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
        try XMLInputGuard.check(text)
        let text = XMLInputGuard.declaringUTF8(text)
        // A stream, not one Data: libxml2 refuses a single chunk over 10 MB ("huge input
        // lookup"), and feeds with thousands of episodes get that large.
        let parser = XMLParser(stream: InputStream(data: Data(text.utf8)))
        // External entities could read local files or reach the network.
        parser.shouldResolveExternalEntities = false
        parser.shouldProcessNamespaces = false
        let delegate = RSSFeedScannerDelegate()
        parser.delegate = delegate
        let succeeded = parser.parse()
        // The first error is the one to report: libxml2 recovers from some and reports more
        // later. XMLParser can also return true after an error, so both are checked.
        var failure = delegate.firstError
        if failure == nil, let code = parser.parserError.map({ ($0 as NSError).code }), XMLErrorText.isFatal(code) {
            failure = (code, parser.lineNumber)
        }
        if failure == nil, !succeeded {
            failure = (1, parser.lineNumber)
        }
        if let (code, line) = failure {
            throw DocumentSyntaxError(line: line, reason: "malformed XML: \(XMLErrorText.describe(code: code))")
        }
        return RSSFeedScan(rootElement: delegate.rootElement, items: delegate.items)
    }
}

/// Collects items as XMLParser walks the feed. Element names are matched with their
/// prefixes (`itunes:title`), since namespace processing is off.
private final class RSSFeedScannerDelegate: NSObject, XMLParserDelegate {
    private(set) var rootElement: String?
    private(set) var items: [RSSItem] = []
    /// libxml2's error number and the line it was found on.
    private(set) var firstError: (code: Int, line: Int)?
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
        let code = (parseError as NSError).code
        if firstError == nil, XMLErrorText.isFatal(code) { firstError = (code, parser.lineNumber) }
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

/// Short texts for libxml2's error numbers, which XMLParser passes on as its error codes
/// (FoundationXML's own `ErrorCode` names are off by one on Linux, so numbers are used).
enum XMLErrorText {
    /// Namespace errors (libxml2's 200–299, such as an undeclared `itunes:` prefix) are
    /// common in real feeds and harmless here: element names are matched with their prefixes.
    static func isFatal(_ code: Int) -> Bool {
        !(200..<300).contains(code)
    }

    static func describe(code: Int) -> String {
        switch code {
        case 4: "the document is empty"
        case 5: "the document ends early, or has content after its root element"
        case 9: "invalid character"
        case 23: "missing ';' after an entity reference"
        case 26: "undeclared entity (XML defines only &amp; &lt; &gt; &quot; &apos; and numeric references)"
        case 38: "'<' in an attribute value"
        case 39, 40: "attribute value not in quotes"
        case 41: "attribute without a value"
        case 42: "attribute given twice"
        case 45: "unterminated comment"
        case 63: "unterminated CDATA section"
        case 68: "expected a name"
        case 73: "expected '>'"
        case 74: "expected '</'"
        case 76: "closing tag does not match the open element"
        case 77: "element not closed"
        case 85: "not well-formed"
        case 86: "extra content after the root element"
        case 89: "entity reference loop"
        default: "XML error \(code)"
        }
    }
}
