import Foundation

public extension URL {
    /// The origin (RFC 6454): scheme, host and port, the scheme's default port filled in.
    /// What is given for one origin (`--header`s, a manifest's headers, a signature) goes to
    /// that origin alone.
    var origin: String {
        let scheme = scheme?.lowercased() ?? ""
        return "\(scheme)://\(host?.lowercased() ?? ""):\(port ?? (scheme == "https" ? 443 : 80))"
    }

    func isSameOrigin(as other: URL) -> Bool {
        origin == other.origin
    }
}
