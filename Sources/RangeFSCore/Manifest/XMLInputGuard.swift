/// Prepares feed text for FoundationXML's `XMLParser`, which crashes the whole process on
/// some XML: on Linux it reads a processing instruction without data (`<?a?>`), and a DTD
/// attribute declaration without a default, through a null pointer. Such instructions are
/// rejected before parsing, and so are DTD declarations, whose entities could also build
/// an instruction from character references (`&#60;?a?&#62;`) where no scan can see it.
/// Feeds use neither.
///
/// libxml2 keeps going after an error (an invalid character in a comment, say) and may
/// then read what looked like the inside of a comment or CDATA section as markup, so the
/// whole text is checked, not only what a well-formed reading would treat as markup.
enum XMLInputGuard {
    static func check(_ text: String) throws(DocumentSyntaxError) {
        var scanner = Scanner(bytes: Array(text.utf8))
        try scanner.run()
    }

    /// The text with its XML declaration saying UTF-8: the parser is handed UTF-8 bytes
    /// (the manifest reader already decoded them), so a declared `ISO-8859-1` would turn
    /// every accented title into mojibake and a declared `UTF-16` would fail.
    static func declaringUTF8(_ text: String) -> String {
        let body = text.unicodeScalars.first == "\u{FEFF}" ? text.dropFirst() : Substring(text)
        guard body.hasPrefix("<?xml"), let end = body.range(of: "?>"),
              let name = body[..<end.lowerBound].range(of: "encoding") else { return text }
        let rest = body[name.upperBound..<end.lowerBound]
        guard let open = rest.firstIndex(where: { $0 == "\"" || $0 == "'" }),
              rest[..<open].allSatisfy({ $0 == "=" || $0 == " " || $0 == "\t" }),
              let close = rest[rest.index(after: open)...].firstIndex(of: rest[open])
        else { return text }
        return String(body[...open]) + "UTF-8" + String(body[close...])
    }

    private struct Scanner {
        static let declarations = ["<!DOCTYPE", "<!ENTITY", "<!ATTLIST", "<!ELEMENT", "<!NOTATION"]

        let bytes: [UInt8]
        var index = 0
        var line = 1
        /// Where the latest DOCTYPE's search for its `>` or `[` stopped.
        var doctypeSearchEnd = 0

        mutating func run() throws(DocumentSyntaxError) {
            while index < bytes.count {
                switch bytes[index] {
                case ASCII.newline:
                    line += 1
                case UInt8(ascii: "<"):
                    if starts("<?", at: index) { try checkInstruction() }
                    if bytes.count - index > 1, bytes[index + 1] == UInt8(ascii: "!") { try checkDeclaration() }
                default:
                    break
                }
                index += 1
            }
        }

        /// `<?target data?>`: the target must be followed by white space, not by `?>`.
        private func checkInstruction() throws(DocumentSyntaxError) {
            var cursor = index + 2
            while cursor < bytes.count, Self.isNameByte(bytes[cursor]) { cursor += 1 }
            if starts("?>", at: cursor) {
                throw DocumentSyntaxError(line: line, reason: "unsupported XML: a processing instruction without data (<?…?>)")
            }
        }

        /// A DOCTYPE naming only an external DTD (`<!DOCTYPE rss PUBLIC "…" "…">`, which is
        /// never loaded) is fine; one with declarations inside `[…]`, or a declaration
        /// anywhere, is not.
        private mutating func checkDeclaration() throws(DocumentSyntaxError) {
            guard let declaration = Self.declarations.first(where: { starts($0, at: index) }) else { return }
            if declaration == "<!DOCTYPE" {
                // The `>` or `[` the last DOCTYPE's search found is the next one's too when this
                // DOCTYPE starts before it: DOCTYPEs never closed are not each searched to the end.
                var cursor = max(index, doctypeSearchEnd)
                while cursor < bytes.count, bytes[cursor] != UInt8(ascii: ">") {
                    if bytes[cursor] == UInt8(ascii: "[") { break }
                    cursor += 1
                }
                doctypeSearchEnd = cursor
                guard cursor < bytes.count, bytes[cursor] == UInt8(ascii: "[") else { return }
            }
            throw DocumentSyntaxError(line: line, reason: "unsupported XML: DTD declarations (<!DOCTYPE … [ … ]>, <!ENTITY …>)")
        }

        /// Bytes of an XML name: ASCII letters, digits, "-", ".", "_", ":", and anything
        /// beyond ASCII (erring towards a longer name only makes the check stricter).
        private static func isNameByte(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                 UInt8(ascii: "_"), UInt8(ascii: ":"), 0x80...:
                true
            default:
                false
            }
        }

        private func starts(_ literal: String, at position: Int) -> Bool {
            let utf8 = literal.utf8
            guard position >= 0, bytes.count - position >= utf8.count else { return false }
            return bytes[position..<position + utf8.count].elementsEqual(utf8)
        }
    }
}
