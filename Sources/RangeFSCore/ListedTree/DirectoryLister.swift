import Foundation

// The one shape every listed source takes (a web server's pages, a WebDAV server's PROPFIND, a
// bucket's ListObjectsV2): one directory's children, each with its name, URL and what the
// listing states. `ListedDirectories` and everything past it use a lister without knowing
// which source it is.

/// What the server said of a directory's listing.
public enum ListingAnswer: Sendable {
    /// The held listing is current (`304`); the validator to keep.
    case unchanged(RemoteValidator?, serverTime: Duration)
    /// The children, the listing's validator, and the URL the page came from after redirects.
    case listed([WebListingEntry], RemoteValidator?, from: URL, serverTime: Duration)

    /// How long the server took to answer, from the request sent to the first byte of its reply
    /// (`DocumentReply.serverTime`; for a listing of several pages, the last page's).
    public var serverTime: Duration {
        switch self {
        case .unchanged(_, let time), .listed(_, _, _, let time): time
        }
    }
}

/// Fetches the listing of one directory URL: its children, or why they could not be had.
/// `heldVersion` is the validator of the listing held, for a conditional request.
public protocol DirectoryLister: Sendable {
    func list(_ url: URL, heldVersion: RemoteValidator?,
              completion: @escaping @Sendable (Result<ListingAnswer, FetchError>) -> Void)
}
