import Foundation

/// A WebDAV collection named as file managers name one: `dav://HOST/PATH/` is reached over
/// http, `davs://HOST/PATH/` over https (GNOME's names; KDE's `webdav://` and `webdavs://` are
/// the same). Everything but the scheme is kept as written: user, port, path.
public enum WebDAVAddress {
    /// The http(s) URL of the collection `address` names, or nil when it is not such an address.
    /// Throws for one whose scheme says WebDAV but whose rest is no URL with a host.
    public static func httpURL(of address: String) throws(WebDAVAddressError) -> URL? {
        guard let colon = address.firstIndex(of: ":"), address[colon...].hasPrefix("://") else { return nil }
        let scheme: String
        switch address[..<colon].lowercased() {
        case "dav", "webdav": scheme = "http"
        case "davs", "webdavs": scheme = "https"
        default: return nil
        }
        let translated = scheme + address[colon...]
        guard let url = URL(string: translated), let host = url.host, !host.isEmpty else {
            throw WebDAVAddressError(address: CredentialRedactor.redactingLoosely(address))
        }
        return url
    }
}

/// A `dav://` or `davs://` address that is not a URL with a host.
public struct WebDAVAddressError: Error, Sendable, Equatable, CustomStringConvertible {
    public var address: String

    public var description: String {
        "\(address): not a WebDAV address (dav://HOST[:PORT]/PATH/ or davs://HOST[:PORT]/PATH/)"
    }
}
