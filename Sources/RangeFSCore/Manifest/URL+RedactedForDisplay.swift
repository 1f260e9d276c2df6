import Foundation

public extension URL {
    /// The URL as text with whatever may be a credential hidden, for logs, status, attributes,
    /// error messages and the cache database: any `user:password@` becomes `***@`, every query
    /// value `***` and a fragment `#***` (`CredentialRedactor`).
    var redactedForDisplay: String {
        CredentialRedactor.redactingAuthority(of: absoluteString)
    }

    /// Whether the URL carries anything `redactedForDisplay` hides.
    var carriesSecret: Bool {
        redactedForDisplay != absoluteString
    }
}

/// Hides credentials in URL text so they never reach a terminal, a log or the cache database.
/// Every query value is hidden, not only those whose names look secret: signatures, tokens and
/// keys go by too many names (`X-Amz-Signature`, `X-Amz-Credential`, `sig`, `token`, `key`,
/// `auth`, `Policy` …) for a list of names to be safe. The names stay, so a reader still sees
/// which parameters a URL had.
enum CredentialRedactor {
    /// For text that parsed as a URL: the userinfo is everything in the authority before its last "@".
    static func redactingAuthority(of text: String) -> String {
        guard let authorityStart = endOfSchemeSeparator(in: text) else { return redactingLoosely(text) }
        let rest = text.utf8[authorityStart...]
        let authorityEnd = rest.firstIndex(where: { $0 == slash || $0 == questionMark || $0 == hash }) ?? rest.endIndex
        guard let at = rest[..<authorityEnd].lastIndex(of: UInt8(ascii: "@")) else { return redactingQuery(of: text) }
        return String(text[..<authorityStart]) + "***" + redactingQuery(of: String(text[at...]))
    }

    // Every search here is of the text's bytes, not its characters: a file's cache key is made
    // this way at every look-up and open, and for each new entry of a listing. The marks are
    // ASCII, so where one is found is where a character starts.
    private static let slash = UInt8(ascii: "/"), questionMark = UInt8(ascii: "?"), hash = UInt8(ascii: "#")

    /// Where the first "://" of `text` ends (Foundation's `range(of:)` goes through `NSString`).
    static func endOfSchemeSeparator(in text: String) -> String.Index? {
        let bytes = text.utf8
        var next = bytes.startIndex
        while let colon = bytes[next...].firstIndex(of: UInt8(ascii: ":")) {
            if bytes[colon...].starts(with: "://".utf8) { return bytes.index(colon, offsetBy: 3) }
            next = bytes.index(after: colon)
        }
        return nil
    }

    /// For text that did not parse: without a parser to say where the authority ends,
    /// hide everything up to the last "@", erring toward hiding too much.
    static func redactingLoosely(_ text: String) -> String {
        let start = endOfSchemeSeparator(in: text) ?? text.startIndex
        guard let at = text.utf8[start...].lastIndex(of: UInt8(ascii: "@")) else { return redactingQuery(of: text) }
        return String(text[..<start]) + "***" + redactingQuery(of: String(text[at...]))
    }

    /// `text` with each query value (or a query part without a name) as `***` and any fragment
    /// as `#***`; text without a query or fragment comes back as it is.
    static func redactingQuery(of text: String) -> String {
        guard let mark = text.utf8.firstIndex(where: { $0 == questionMark || $0 == hash }) else { return text }
        var shown = String(text[..<mark])
        var rest = text[mark...]
        if rest.first == "?" {
            let queryEnd = rest.firstIndex(of: "#") ?? rest.endIndex
            let parts = rest[rest.index(after: rest.startIndex)..<queryEnd].split(separator: "&", omittingEmptySubsequences: false)
            shown += "?" + parts.map { part -> String in
                guard let equals = part.firstIndex(of: "=") else { return part.isEmpty ? "" : "***" }
                return part[part.index(after: equals)...].isEmpty ? String(part) : String(part[...equals]) + "***"
            }.joined(separator: "&")
            rest = rest[queryEnd...]
        }
        if rest.count > 1 { shown += "#***" } else { shown += rest }
        return shown
    }
}
