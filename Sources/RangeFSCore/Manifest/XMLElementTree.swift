import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// An XML reply read into a small tree of elements: S3's replies (a listing page, an error) and
/// WebDAV's multistatus are shallow records of named text fields, so a tree is the simplest
/// thing to walk. Read through `GuardedXMLParser`, so no DTD or entity declaration ever reaches
/// libxml2.
struct XMLElementTree: Sendable {
    /// The name without a namespace prefix (`ListBucketResult` for `s3:ListBucketResult`,
    /// `multistatus` for `D:multistatus`).
    var name: String
    /// The element's own text, CDATA included; text inside child elements is theirs. Never
    /// trimmed: a key may begin or end with spaces.
    var text = ""
    var children: [XMLElementTree] = []
    var line: Int

    /// The first child called `name`.
    func child(_ name: String) -> XMLElementTree? {
        children.first { $0.name == name }
    }

    func children(named name: String) -> [XMLElementTree] {
        children.filter { $0.name == name }
    }

    /// The reply's root element. Throws for bytes that are not UTF-8 or not well-formed XML.
    static func parseDocument(_ body: Data) throws(DocumentSyntaxError) -> XMLElementTree {
        // Decoding with replacement would silently change a name; S3 and WebDAV servers send UTF-8.
        guard let text = String(validating: body, as: UTF8.self) else {
            throw DocumentSyntaxError(line: 1, reason: "the reply is not UTF-8 text")
        }
        let builder = XMLElementTreeBuilder()
        try GuardedXMLParser.parse(text, delegate: builder)
        guard let root = builder.root else {
            throw DocumentSyntaxError(line: 1, reason: "the reply holds no XML element")
        }
        return root
    }
}

/// Builds the tree as XMLParser walks the document; the open elements are kept on a stack
/// (no recursion, so a deeply nested reply cannot exhaust the call stack).
private final class XMLElementTreeBuilder: NSObject, ErrorRecordingXMLParserDelegate {
    private(set) var root: XMLElementTree?
    var firstError: (code: Int, line: Int)?
    private var open: [XMLElementTree] = []

    func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
                qualifiedName qName: String?, attributes: [String: String] = [:]) {
        let local = elementName.lastIndex(of: ":").map { String(elementName[elementName.index(after: $0)...]) } ?? elementName
        open.append(XMLElementTree(name: local, line: parser.lineNumber))
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?) {
        guard let element = open.popLast() else { return }
        if open.isEmpty {
            if root == nil { root = element }
        } else {
            open[open.count - 1].children.append(element)
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        if !open.isEmpty { open[open.count - 1].text += string }
    }

    func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
        if !open.isEmpty { open[open.count - 1].text += String(decoding: CDATABlock, as: UTF8.self) }
    }

    func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) {
        record(parseError, at: parser.lineNumber)
    }
}
