import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// What a Metalink document says, as written, before any of it is checked.
struct MetalinkScan: Sendable {
    /// The root element's name and attributes (`xmlns`, `version`), which tell the version.
    var root: (name: String, attributes: [String: String])?
    var files: [MetalinkFileScan]

    /// Reads `text` with XMLParser (libxml2), under the same rules as RSS feeds.
    static func scan(_ text: String) throws(DocumentSyntaxError) -> MetalinkScan {
        let delegate = MetalinkScannerDelegate()
        try GuardedXMLParser.parse(text, delegate: delegate)
        return MetalinkScan(root: delegate.root, files: delegate.files)
    }
}

/// One `<file>`: everything RangeFS reads from it, each value with its line.
struct MetalinkFileScan: Sendable {
    var name: String?
    /// 1-based position among the document's files, for messages.
    var number: Int
    var line: Int
    var sizes: [MetalinkText] = []
    var hashes: [MetalinkText] = []
    var pieces: [MetalinkPiecesScan] = []
    var urls: [MetalinkText] = []
}

/// `<pieces length=… type=…>` and its `<hash>` elements.
struct MetalinkPiecesScan: Sendable {
    var attributes: [String: String]
    var line: Int
    var hashes: [MetalinkText] = []
}

/// An element's text and attributes.
struct MetalinkText: Sendable {
    var text = ""
    var attributes: [String: String]
    var line: Int
}

/// Collects files as XMLParser walks the document. Both versions are read by one walk:
/// Metalink 4 puts `<hash>`, `<pieces>` and `<url>` in `<file>`; 3.0 puts `<file>` in
/// `<files>`, hashes in `<verification>` and URLs in `<resources>`. Elements are matched by
/// their local name (`ml:file` is `file`), since namespace processing is off; anything else
/// (`<metaurl>`, `<signature>`, `<description>`, extensions) is skipped.
private final class MetalinkScannerDelegate: NSObject, ErrorRecordingXMLParserDelegate {
    private(set) var root: (name: String, attributes: [String: String])?
    private(set) var files: [MetalinkFileScan] = []
    var firstError: (code: Int, line: Int)?
    /// Local names of the open elements, outermost first.
    private var open: [String] = []
    private var current: MetalinkFileScan?
    /// How many elements are open while `current`'s `<file>` is the innermost one.
    private var fileDepth = 0
    /// The element inside `current` whose text is being collected, and where it goes when it
    /// ends (nil: a `<hash>` of the `<pieces>` it is in, the last one so far).
    private var capturing: (value: MetalinkText, field: WritableKeyPath<MetalinkFileScan, [MetalinkText]>?, depth: Int)?

    func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
                qualifiedName qName: String?, attributes: [String: String] = [:]) {
        let name = Self.localName(elementName)
        let parent = open.last
        open.append(name)
        if root == nil { root = (name, attributes) }
        let line = parser.lineNumber
        guard current != nil else {
            if name == "file", open.count == 2 && parent == "metalink" || open.count == 3 && parent == "files" {
                current = MetalinkFileScan(name: attributes["name"], number: files.count + 1, line: line)
                fileDepth = open.count
            }
            return
        }
        guard capturing == nil else { return }
        // Where the element is inside its <file>: only these exact places count, so a <hash>
        // inside some extension element is never taken for the file's.
        switch Array(open[fileDepth...]) {
        case ["size"]: startCapturing(\.sizes, attributes, line)
        case ["hash"], ["verification", "hash"]: startCapturing(\.hashes, attributes, line)
        case ["url"], ["resources", "url"]: startCapturing(\.urls, attributes, line)
        case ["pieces"], ["verification", "pieces"]:
            current?.pieces.append(MetalinkPiecesScan(attributes: attributes, line: line))
        case ["pieces", "hash"], ["verification", "pieces", "hash"]: startCapturing(nil, attributes, line)
        default: break
        }
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?) {
        if let (value, field, depth) = capturing, depth == open.count {
            if let field {
                current?[keyPath: field].append(value)
            } else if let last = current?.pieces.indices.last {
                current?.pieces[last].hashes.append(value)
            }
            capturing = nil
        }
        if let file = current, open.count == fileDepth {
            files.append(file)
            current = nil
        }
        _ = open.popLast()
    }

    func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) {
        record(parseError, at: parser.lineNumber)
    }

    /// Only the element's own text: text inside a child element is not part of a URL or a hash.
    func parser(_ parser: XMLParser, foundCharacters string: String) {
        if capturing?.depth == open.count { capturing?.value.text += string }
    }

    func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
        if capturing?.depth == open.count { capturing?.value.text += String(decoding: CDATABlock, as: UTF8.self) }
    }

    private func startCapturing(_ field: WritableKeyPath<MetalinkFileScan, [MetalinkText]>?, _ attributes: [String: String], _ line: Int) {
        capturing = (MetalinkText(attributes: attributes, line: line), field, open.count)
    }

    private static func localName(_ name: String) -> String {
        name.lastIndex(of: ":").map { String(name[name.index(after: $0)...]) } ?? name
    }
}
