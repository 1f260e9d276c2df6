import Foundation

/// Finds the name of an XML document's root element without parsing the document, to tell
/// the XML formats apart when nothing else says which one a text is.
enum XMLRootElement {
    /// The root element's name without its prefix (`metalink` for `<ml:metalink …>`), after
    /// the XML declaration, comments, processing instructions and a DOCTYPE; nil when the
    /// text does not start like XML.
    static func localName(in text: String) -> Substring? {
        var rest = Substring(text)
        if rest.unicodeScalars.first == "\u{FEFF}" { rest = rest.dropFirst() }
        while true {
            rest = rest.drop(while: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" || $0 == "\r\n" })
            guard rest.hasPrefix("<") else { return nil }
            let skipped: String? = rest.hasPrefix("<?") ? "?>" : rest.hasPrefix("<!--") ? "-->" : rest.hasPrefix("<!") ? ">" : nil
            guard let end = skipped else { break }
            guard let found = rest.range(of: end) else { return nil }
            rest = rest[found.upperBound...]
        }
        let name = rest.dropFirst().prefix(while: { !($0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" || $0 == "\r\n" || $0 == ">" || $0 == "/") })
        guard !name.isEmpty else { return nil }
        return name.lastIndex(of: ":").map { name[name.index(after: $0)...] } ?? name
    }
}
