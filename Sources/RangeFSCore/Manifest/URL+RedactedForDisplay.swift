import Foundation

public extension URL {
    /// The URL as text with any `user:password@` replaced by `***@`, for logs, status and error messages.
    var redactedForDisplay: String {
        let text = absoluteString
        guard user != nil || password != nil else { return text }
        return CredentialRedactor.redactingAuthority(of: text)
    }
}

/// Hides credentials in URL text so they never reach a terminal or a log.
enum CredentialRedactor {
    /// For text that parsed as a URL: the userinfo is everything in the authority before its last "@".
    static func redactingAuthority(of text: String) -> String {
        guard let authorityStart = text.range(of: "://")?.upperBound else { return redactingLoosely(text) }
        let rest = text[authorityStart...]
        let authorityEnd = rest.firstIndex(where: { "/?#".contains($0) }) ?? rest.endIndex
        guard let at = rest[..<authorityEnd].lastIndex(of: "@") else { return text }
        return String(text[..<authorityStart]) + "***" + String(text[at...])
    }

    /// For text that did not parse: without a parser to say where the authority ends,
    /// hide everything up to the last "@", erring toward hiding too much.
    static func redactingLoosely(_ text: String) -> String {
        let start = text.range(of: "://")?.upperBound ?? text.startIndex
        guard let at = text[start...].lastIndex(of: "@") else { return text }
        return String(text[..<start]) + "***" + String(text[at...])
    }
}
