import Foundation

/// Decodes a feed whose XML declaration names a legacy single-byte encoding, such as
/// `<?xml version="1.0" encoding="ISO-8859-1"?>`: older podcast feeds still use them.
/// Only a declared encoding is honoured; nothing is guessed.
enum DeclaredXMLEncoding {
    private static let encodings: [String: String.Encoding] = [
        "iso-8859-1": .isoLatin1, "iso_8859-1": .isoLatin1, "latin1": .isoLatin1, "l1": .isoLatin1,
        "windows-1252": .windowsCP1252, "cp1252": .windowsCP1252,
    ]

    static func decode(_ data: Data) -> String? {
        guard let encoding = declaredEncoding(data) else { return nil }
        return String(data: data, encoding: encoding)
    }

    private static func declaredEncoding(_ data: Data) -> String.Encoding? {
        // The declaration is ASCII and comes first; no need to look further.
        let head = String(decoding: data.prefix(200).prefix(while: { $0 < 0x80 }), as: UTF8.self)
        guard head.hasPrefix("<?xml"), let end = head.range(of: "?>"),
              let name = head[..<end.lowerBound].range(of: "encoding") else { return nil }
        let rest = head[name.upperBound..<end.lowerBound].drop(while: { $0 == " " || $0 == "=" })
        guard let quote = rest.first, quote == "\"" || quote == "'",
              let close = rest.dropFirst().firstIndex(of: quote) else { return nil }
        return encodings[rest[rest.index(after: rest.startIndex)..<close].lowercased()]
    }
}
