import Crypto
import Foundation

public extension URL {
    /// What the cache knows this URL's file by, in memory and in the database (`CacheKey`).
    var cacheKey: String { CacheKey.of(absoluteString) }
}

/// The identity of a remote file in the cache. A URL without a secret is its own key (so a
/// database written before keys were made this way finds its files); a URL carrying a password
/// or a query value is known by its redacted text and the SHA-256 of the whole URL, which tells
/// it apart from URLs redacted alike without keeping the secret on disk. The same URL always
/// gives the same key, so a remount finds what it cached.
public enum CacheKey {
    private static let digestMark = " sha256:"

    /// The key of the URL written `urlText`.
    public static func of(_ urlText: String) -> String {
        let shown = CredentialRedactor.redactingAuthority(of: urlText)
        guard shown != urlText else { return urlText }
        return shown + digestMark + SHA256.hash(data: Data(urlText.utf8)).lowercaseHex
    }

    /// A key as a log line may show it: the redacted URL, without its digest.
    public static func shown(_ key: String) -> String {
        key.range(of: digestMark).map { String(key[..<$0.lowerBound]) } ?? key
    }

    /// A URL as the database may keep it to send requests to later (where a redirect led):
    /// the URL itself, or nil when it carries a secret; such a place is found again by
    /// following the redirect.
    public static func storableLocation(_ url: URL?) -> String? {
        guard let url, !url.carriesSecret else { return nil }
        return url.absoluteString
    }
}
