import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// Runs XMLParser (libxml2) over manifest text with the same rules for every XML format: the
/// text passes `XMLInputGuard` and `NestingDepthGuard` first, external entities are never
/// resolved, and the first fatal error is reported with its line.
enum GuardedXMLParser {
    static func parse(_ text: String, delegate: some ErrorRecordingXMLParserDelegate) throws(DocumentSyntaxError) {
        try XMLInputGuard.check(text)
        try NestingDepthGuard.checkXML(Array(text.utf8))
        let text = XMLInputGuard.declaringUTF8(text)
        // A stream, not one Data: libxml2 refuses a single chunk over 10 MB ("huge input
        // lookup"), and feeds with thousands of episodes get that large.
        let parser = XMLParser(stream: InputStream(data: Data(text.utf8)))
        // External entities could read local files or reach the network.
        parser.shouldResolveExternalEntities = false
        // Element names are matched as written, prefix included: namespace processing in
        // FoundationXML is not needed by any format read here.
        parser.shouldProcessNamespaces = false
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
    }
}

/// A delegate that keeps the first fatal error libxml2 reports, from its
/// `parser(_:parseErrorOccurred:)` through `record(_:at:)`.
protocol ErrorRecordingXMLParserDelegate: XMLParserDelegate, AnyObject {
    /// libxml2's error number and the line it was found on.
    var firstError: (code: Int, line: Int)? { get set }
}

extension ErrorRecordingXMLParserDelegate {
    func record(_ error: any Error, at line: Int) {
        let code = (error as NSError).code
        if firstError == nil, XMLErrorText.isFatal(code) { firstError = (code, line) }
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
