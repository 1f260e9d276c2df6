import Foundation

/// Why a read or a look-up could not be answered. `cause` keeps what went wrong underneath (a
/// `RemoteError`, a `CacheError` …) as a value; the filesystem's errno comes from
/// `FilesystemError`'s table, not from here.
public struct FetchError: Error, Sendable, CustomStringConvertible {
    /// The error underneath, when there is one; nil for reasons of the fetcher's own
    /// (unmounting, a remote change noticed elsewhere, a timeout).
    public var cause: (any Error & Sendable)?
    public var description: String

    public init(_ description: String, cause: (any Error & Sendable)? = nil) {
        self.description = description
        self.cause = cause
    }

    /// "URL: cause", the URL without credentials.
    public init(_ url: URL, _ cause: any Error & Sendable) {
        self.init("\(url.redactedForDisplay): \(cause)", cause: cause)
    }
}

extension Result {
    var isSuccess: Bool {
        if case .success = self { return true }
        return false
    }
}
