/// The bits of HTML text handling listings need: character references and tag stripping.
enum HTMLText {
    /// The named references listing pages use; any other is kept as written.
    private static let named: [String: String] = [
        "amp": "&", "lt": "<", "gt": ">", "quot": "\"", "apos": "'", "nbsp": "\u{A0}",
    ]

    /// `&amp;`, `&#38;` and `&#x26;` as `&`; an unknown or malformed reference stays as it is.
    static func decodingReferences(_ text: some StringProtocol) -> String {
        guard text.contains("&") else { return String(text) }
        var out = ""
        var rest = Substring(text)
        while let amp = rest.firstIndex(of: "&") {
            out += rest[..<amp]
            let afterAmp = rest.index(after: amp)
            guard let semicolon = rest[afterAmp...].prefix(10).firstIndex(of: ";"),
                  let decoded = reference(rest[afterAmp..<semicolon]) else {
                out.append("&")
                rest = rest[afterAmp...]
                continue
            }
            out += decoded
            rest = rest[rest.index(after: semicolon)...]
        }
        return out + rest
    }

    private static func reference(_ body: Substring) -> String? {
        if body.hasPrefix("#x") || body.hasPrefix("#X") {
            return UInt32(body.dropFirst(2), radix: 16).flatMap(Unicode.Scalar.init).map { String($0) }
        }
        if body.hasPrefix("#") {
            return UInt32(body.dropFirst(), radix: 10).flatMap(Unicode.Scalar.init).map { String($0) }
        }
        return named[String(body)]
    }

    /// A fragment of HTML as plain text: tags removed, references decoded.
    static func plainText(_ html: String) -> String {
        var out = ""
        var inTag = false
        for character in html {
            if character == "<" { inTag = true; out.append(" ") }
            else if character == ">" { inTag = false }
            else if !inTag { out.append(character) }
        }
        return decodingReferences(out)
    }

    static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D || byte == 0x0C
    }

    static func lowercased(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
    }
}
