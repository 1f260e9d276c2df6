/// The lines of a manifest's text without their terminators, read one at a time rather than
/// split into an array (a 100,000-line manifest would hold 100,000 substrings at once).
/// Accepts LF or CRLF, drops a leading byte-order mark, and a final newline ends the last
/// line rather than starting another.
struct TextLines: Sequence {
    private let body: Substring

    init(_ text: String) {
        var body = Substring(text)
        if body.unicodeScalars.first == "\u{FEFF}" {
            body = body[body.unicodeScalars.index(after: body.startIndex)...]
        }
        self.body = body
    }

    /// At least the number of lines (the newlines, plus one), counted without making them.
    var countUpperBound: Int {
        var newlines = 0
        for byte in body.utf8 where byte == ASCII.newline { newlines += 1 }
        return newlines + 1
    }

    var first: Substring? {
        var lines = makeIterator()
        return lines.next()
    }

    func makeIterator() -> Iterator {
        Iterator(body: body)
    }

    struct Iterator: IteratorProtocol {
        private let body: Substring
        private var position: Substring.Index

        fileprivate init(body: Substring) {
            self.body = body
            position = body.startIndex
        }

        mutating func next() -> Substring? {
            // Split the bytes: as Characters, "\r\n" is one unit that never equals "\n".
            let bytes = body.utf8
            guard position < bytes.endIndex else { return nil }
            let end = bytes[position...].firstIndex(of: ASCII.newline) ?? bytes.endIndex
            var line = bytes[position..<end]
            if line.last == ASCII.carriageReturn { line = line.dropLast() }
            if end == bytes.endIndex {
                position = end
                // Text after the last newline is a line only when there is any.
                return line.isEmpty ? nil : Substring(line)
            }
            position = bytes.index(after: end)
            return Substring(line)
        }
    }
}
