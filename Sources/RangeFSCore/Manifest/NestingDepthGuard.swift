/// Refuses documents nested deeper than any manifest, listing or feed is, before a parser that
/// builds a tree sees them: libxml2, Yams and the trees built from them (an S3 reply's
/// elements) recurse, and a page of a few hundred kilobytes nested 100,000 deep would
/// overflow a thread's stack. One linear pass over the bytes; it errs towards counting deeper.
public enum NestingDepthGuard {
    /// Deeper than any real document (an S3 page is 3 levels, a feed under 10), and shallow
    /// enough that recursion over it fits a dispatch thread's 512 KiB stack.
    public static let maxDepth = 128

    /// XML: open elements, counted from start and end tags; comments, CDATA, processing
    /// instructions and declarations are skipped, quotes in tags honoured.
    static func checkXML(_ bytes: [UInt8]) throws(DocumentSyntaxError) {
        var depth = 0
        var line = 1
        var index = 0
        func skip(past terminator: String) {
            let end = Array(terminator.utf8)
            while index < bytes.count, !bytes[index...].starts(with: end) {
                if bytes[index] == ASCII.newline { line += 1 }
                index += 1
            }
            index += end.count
        }
        while index < bytes.count {
            let byte = bytes[index]
            if byte == ASCII.newline { line += 1 }
            guard byte == UInt8(ascii: "<") else { index += 1; continue }
            let rest = bytes[index...]
            if rest.starts(with: Array("<!--".utf8)) { skip(past: "-->"); continue }
            if rest.starts(with: Array("<![CDATA[".utf8)) { skip(past: "]]>"); continue }
            if rest.starts(with: Array("<?".utf8)) { skip(past: "?>"); continue }
            if rest.starts(with: Array("<!".utf8)) { skip(past: ">"); continue }
            let closing = rest.starts(with: Array("</".utf8))
            var quote: UInt8?
            index += 1
            while index < bytes.count {
                let current = bytes[index]
                if current == ASCII.newline { line += 1 }
                if let open = quote {
                    if current == open { quote = nil }
                } else if current == UInt8(ascii: "\"") || current == UInt8(ascii: "'") {
                    quote = current
                } else if current == UInt8(ascii: ">") {
                    break
                }
                index += 1
            }
            let selfClosing = index > 0 && index < bytes.count && bytes[index - 1] == UInt8(ascii: "/")
            if closing {
                depth = max(0, depth - 1)
            } else if !selfClosing {
                depth += 1
                if depth > maxDepth { throw tooDeep(line: line, what: "elements") }
            }
            index += 1
        }
    }

    /// YAML: on each line, its indentation plus the block entries that open on it (`- - x`)
    /// plus the flow collections (`[`, `{`) open at that point; quoted text and comments skipped.
    static func checkYAML(_ bytes: [UInt8]) throws(DocumentSyntaxError) {
        var flow = 0
        var line = 1
        var index = 0
        while index < bytes.count {
            var depth = flow
            while index < bytes.count, bytes[index] == UInt8(ascii: " ") { depth += 1; index += 1 }
            while index + 1 < bytes.count, bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "?"),
                  bytes[index + 1] == UInt8(ascii: " ") || bytes[index + 1] == ASCII.tab {
                depth += 1
                index += 2
            }
            var quote: UInt8?
            while index < bytes.count, bytes[index] != ASCII.newline {
                let current = bytes[index]
                if let open = quote {
                    if current == open { quote = nil }
                } else {
                    switch current {
                    case UInt8(ascii: "\""), UInt8(ascii: "'"): quote = current
                    case UInt8(ascii: "["), UInt8(ascii: "{"): flow += 1; depth += 1
                    case UInt8(ascii: "]"), UInt8(ascii: "}"): flow = max(0, flow - 1)
                    case UInt8(ascii: "#"): while index + 1 < bytes.count, bytes[index + 1] != ASCII.newline { index += 1 }
                    default: break
                    }
                }
                if depth > maxDepth { throw tooDeep(line: line, what: "collections") }
                index += 1
            }
            if depth > maxDepth { throw tooDeep(line: line, what: "collections") }
            line += 1
            index += 1
        }
    }

    private static func tooDeep(line: Int, what: String) -> DocumentSyntaxError {
        DocumentSyntaxError(line: line, reason: "\(what) nested more than \(maxDepth) levels deep")
    }
}
