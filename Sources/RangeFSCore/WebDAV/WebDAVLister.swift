import Foundation
import Logging

/// Lists one collection of a WebDAV server for a mount grown from listings
/// (`ListedDirectories`): one `PROPFIND` with `Depth: 1` (up to a cap, with the mount's
/// `--header`s on the root's origin alone, as `WebDirectoryLister` sends them), the multistatus
/// read by `WebDAVListing.parse` off the thread that runs every transfer. A listing is always
/// asked in full: a multistatus carries no validator.
public struct WebDAVLister: DirectoryLister {
    private let client: any RemoteClient
    private let headers: [String: String]
    /// The mount's root: `headers` go to its origin only.
    private let headersOrigin: URL?
    private let policy: FetchPolicy
    /// A bigger reply is not a collection anyone means to mount.
    private let maxBytes: UInt64
    /// A collection of more members is refused (`ListedDirectories.Settings.maxEntries`).
    private let maxEntries: Int
    private let timeout: Duration
    private let logger: Logger
    /// Replies are read one at a time, for the reason `WebDirectoryLister` reads its pages so.
    private let reading = DispatchQueue(label: "rangefs.webdav-listings")

    public init(client: any RemoteClient, headers: [String: String] = [:], headersOrigin: URL? = nil,
                policy: FetchPolicy = FetchPolicy(), maxBytes: UInt64 = 32 << 20,
                maxEntries: Int = ListedDirectories.Settings.defaultMaxEntries, timeout: Duration = .seconds(60),
                logger: Logger) {
        precondition(headers.isEmpty || headersOrigin != nil, "headers are given for an origin")
        self.client = client
        self.headers = headers
        self.headersOrigin = headersOrigin
        self.policy = policy
        self.maxBytes = maxBytes
        self.maxEntries = maxEntries
        self.timeout = timeout
        self.logger = logger
    }

    public func list(_ url: URL, heldVersion: RemoteValidator?,
                     completion: @escaping @Sendable (Result<ListingAnswer, FetchError>) -> Void) {
        let sent = headersOrigin.map { FetchSource.headers(headers, sentTo: url, origin: $0) } ?? [:]
        let request = DocumentRequest(url: url, method: .propfind(body: WebDAVListing.propfindBody), headers: sent,
                                      maxBytes: maxBytes, timeout: timeout)
        var download = DocumentDownload(request: request, client: client)
        download.policy = policy
        download.start { [logger, reading, maxEntries] result in
            let document: FetchedDocument
            switch result {
            case .success(let fetched): document = fetched
            case .failure(let error):
                if let notWebDAV = Self.notACollection(error) {
                    return completion(.failure(FetchError(url, .unreadableListing(notWebDAV))))
                }
                return completion(.failure(FetchError(url, .remote(error))))
            }
            let reply = document.reply
            reading.async {
                do throws(WebListingError) {
                    let listing = try WebDAVListing.parse(document.bytes, url: reply.finalURL, maxEntries: maxEntries)
                    for link in listing.skipped {
                        logger.notice("\(url.redactedForDisplay): member left out: \(link)")
                    }
                    completion(.success(.listed(listing.entries, nil, from: reply.finalURL, serverTime: reply.serverTime)))
                } catch {
                    // Asking again brings the same reply: not a transient failure.
                    completion(.failure(FetchError(url, .unreadableListing(error.reason))))
                }
            }
        }
    }

    /// What a status that no WebDAV collection answers `PROPFIND` with means, or nil for the
    /// others (a 401, a 404, a 5xx say enough as they are).
    static func notACollection(_ error: RemoteError) -> String? {
        guard case .status(let code, _, _) = error else { return nil }
        switch code {
        case 200..<300:
            return "not a WebDAV collection: PROPFIND was answered \(code), not 207 Multi-Status"
        case 405, 501:
            return "not a WebDAV server: it does not take PROPFIND (\(code))"
        default:
            return nil
        }
    }
}
