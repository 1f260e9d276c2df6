/// A strict JSON (RFC 8259) parser that records the line of every value.
///
/// Written out rather than using JSONSerialization because manifest errors name a line,
/// and JSONSerialization says neither where an entry starts nor where a value went wrong;
/// it also turns large integers into Doubles, where a size must be read exactly.
struct JSONDocumentParser {
    /// Deep enough for any manifest (the deepest valid value is four levels down),
    /// shallow enough that recursion cannot exhaust a thread's stack.
    static let maxDepth = 64

    private let bytes: [UInt8]
    private var index = 0
    private var line = 1

    private init(_ text: String) {
        bytes = Array(text.utf8)
        // A byte-order mark is not JSON, but editors on some systems write one.
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
    }

    static func parse(_ text: String) throws(DocumentSyntaxError) -> DocumentValue {
        var parser = JSONDocumentParser(text)
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        if parser.index < parser.bytes.count {
            throw parser.error("unexpected \(parser.shownByte()) after the end of the document")
        }
        return value
    }

    // MARK: Values

    private mutating func parseValue(depth: Int) throws(DocumentSyntaxError) -> DocumentValue {
        guard depth < Self.maxDepth else { throw error("values are nested more than \(Self.maxDepth) levels deep") }
        guard let byte = peek() else { throw error("unexpected end of the document (expected a value)") }
        let startLine = line
        let kind: DocumentValue.Kind
        switch byte {
        case UInt8(ascii: "{"): kind = .map(try parseObject(depth: depth))
        case UInt8(ascii: "["): kind = .list(try parseArray(depth: depth))
        case UInt8(ascii: "\""): kind = .string(try parseString())
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): kind = .number(try parseNumber())
        case UInt8(ascii: "t"): try expectLiteral("true"); kind = .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); kind = .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); kind = .null
        default: throw error("unexpected \(shownByte()) (expected a value)")
        }
        return DocumentValue(kind: kind, line: startLine)
    }

    private mutating func parseObject(depth: Int) throws(DocumentSyntaxError) -> [DocumentMember] {
        index += 1  // "{"
        var members: [DocumentMember] = []
        skipWhitespace()
        if peek() == UInt8(ascii: "}") { index += 1; return members }
        while true {
            skipWhitespace()
            guard peek() == UInt8(ascii: "\"") else {
                if peek() == UInt8(ascii: "}") { throw error("trailing comma before '}'") }
                throw error(peek() == nil ? "unexpected end of the document (expected a key)" : "unexpected \(shownByte()) (expected a key in double quotes)")
            }
            let keyLine = line
            let key = try parseString()
            skipWhitespace()
            guard peek() == UInt8(ascii: ":") else { throw error("expected ':' after the key \(DisplayText.doubleQuoted(key))") }
            index += 1
            skipWhitespace()
            let value = try parseValue(depth: depth + 1)
            members.append(DocumentMember(key: key, value: value, line: keyLine))
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"): index += 1; return members
            case nil: throw error("unexpected end of the document (expected ',' or '}')")
            default: throw error("unexpected \(shownByte()) (expected ',' or '}')")
            }
        }
    }

    private mutating func parseArray(depth: Int) throws(DocumentSyntaxError) -> [DocumentValue] {
        index += 1  // "["
        var elements: [DocumentValue] = []
        skipWhitespace()
        if peek() == UInt8(ascii: "]") { index += 1; return elements }
        while true {
            skipWhitespace()
            if peek() == UInt8(ascii: "]") { throw error("trailing comma before ']'") }
            elements.append(try parseValue(depth: depth + 1))
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"): index += 1; return elements
            case nil: throw error("unexpected end of the document (expected ',' or ']')")
            default: throw error("unexpected \(shownByte()) (expected ',' or ']')")
            }
        }
    }

    // MARK: Scalars

    private mutating func parseString() throws(DocumentSyntaxError) -> String {
        index += 1  // opening quote
        var result: [UInt8] = []
        while true {
            guard let byte = peek() else { throw error("unterminated string") }
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                // The input was a Swift String, so its bytes (and thus these) are valid UTF-8.
                return String(decoding: result, as: UTF8.self)
            case UInt8(ascii: "\\"):
                index += 1
                try parseEscape(into: &result)
            case _ where byte < 0x20:
                throw error(byte == ASCII.newline ? "unterminated string (a line break must be written as \\n)"
                                                  : "control character (\(DisplayText.hex(Unicode.Scalar(byte)))) in a string")
            default:
                result.append(byte)
                index += 1
            }
        }
    }

    private mutating func parseEscape(into result: inout [UInt8]) throws(DocumentSyntaxError) {
        guard let byte = peek() else { throw error("unterminated string") }
        index += 1
        let simple: UInt8? = switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): byte
        case UInt8(ascii: "b"): 0x08
        case UInt8(ascii: "f"): 0x0C
        case UInt8(ascii: "n"): ASCII.newline
        case UInt8(ascii: "r"): ASCII.carriageReturn
        case UInt8(ascii: "t"): ASCII.tab
        default: nil
        }
        if let simple {
            result.append(simple)
            return
        }
        guard byte == UInt8(ascii: "u") else {
            throw error("invalid escape \(DisplayText.quoted("\\" + String(Unicode.Scalar(byte)))) in a string")
        }
        var value = try parseHex4()
        if (0xD800...0xDBFF).contains(value) {
            // A high surrogate must be followed by "\u" and a low surrogate.
            guard peek() == UInt8(ascii: "\\"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "u") else {
                throw error("invalid \\u escape in a string (unpaired surrogate)")
            }
            index += 2
            let low = try parseHex4()
            guard (0xDC00...0xDFFF).contains(low) else { throw error("invalid \\u escape in a string (unpaired surrogate)") }
            value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(value) {
            throw error("invalid \\u escape in a string (unpaired surrogate)")
        }
        guard let scalar = Unicode.Scalar(value) else { throw error("invalid \\u escape in a string") }
        result.append(contentsOf: Array(String(scalar).utf8))
    }

    private mutating func parseHex4() throws(DocumentSyntaxError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = peek(), let digit = Self.hexDigit(byte) else {
                throw error("invalid \\u escape in a string (expected four hexadecimal digits)")
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    private static func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, returned as written.
    private mutating func parseNumber() throws(DocumentSyntaxError) -> String {
        let start = index
        if peek() == UInt8(ascii: "-") { index += 1 }
        if peek() == UInt8(ascii: "0") {
            index += 1
            if let next = peek(), Self.isDigit(next) { throw error("invalid number (leading zero)") }
        } else if !skipDigits() {
            throw error("invalid number")
        }
        if peek() == UInt8(ascii: ".") {
            index += 1
            guard skipDigits() else { throw error("invalid number (expected digits after '.')") }
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            index += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { index += 1 }
            guard skipDigits() else { throw error("invalid number (expected digits in the exponent)") }
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    /// Whether at least one digit was skipped.
    private mutating func skipDigits() -> Bool {
        let start = index
        while let byte = peek(), Self.isDigit(byte) { index += 1 }
        return index > start
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(DocumentSyntaxError) {
        let expected = UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
        guard bytes.count - index >= expected.count, bytes[index..<index + expected.count].elementsEqual(expected) else {
            throw error("unexpected \(shownByte()) (expected a value)")
        }
        index += expected.count
    }

    // MARK: Position

    private func peek() -> UInt8? {
        index < bytes.count ? bytes[index] : nil
    }

    /// JSON whitespace is space, tab, CR and LF; only LF starts a line.
    private mutating func skipWhitespace() {
        while let byte = peek() {
            switch byte {
            case ASCII.newline: line += 1
            case ASCII.space, ASCII.tab, ASCII.carriageReturn: break
            default: return
            }
            index += 1
        }
    }

    /// The current character for a message: `'x'`, or `end of the document`.
    private func shownByte() -> String {
        guard index < bytes.count else { return "end of the document" }
        // Show the whole character, not one byte of it.
        var end = index + 1
        while end < bytes.count, bytes[end] & 0xC0 == 0x80 { end += 1 }
        return "character " + DisplayText.quoted(String(decoding: bytes[index..<end], as: UTF8.self))
    }

    private func error(_ reason: String) -> DocumentSyntaxError {
        DocumentSyntaxError(line: line, reason: "malformed JSON: " + reason)
    }
}
