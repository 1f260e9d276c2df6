import Foundation
import Logging

// Design note: a WebDAV collection mounted from its listings, as a web directory is.
//
// - `WebDAVAddress`: `dav://` and `davs://` as the http(s) URL of the collection.
// - `WebDAVLister` (this file): one collection's `PROPFIND` (`Depth: 1`, answered `207`), statuses
//   no collection answers with named for what they mean.
// - `WebDAVListing` (pure): the multistatus read into entries through the XML guards, only the
//   collection's direct members, a member the server would not describe left out with its status.
// - Files are read with ranged GETs as from any web server.

/// Lists one collection of a WebDAV server for a mount grown from listings
/// (`ListedDirectories`): one `PROPFIND` with `Depth: 1` (up to a cap, with the mount's
/// `--header`s on the root's origin alone, as `WebDirectoryLister` sends them), the multistatus
/// read by `WebDAVListing.parse` off the thread that runs every transfer. A listing is always
/// asked in full: a multistatus carries no validator.
public struct WebDAVLister: DirectoryLister {
    private let download: ListingDownload
    /// Replies are read one at a time, for the reason `WebDirectoryLister` reads its pages so.
    private let reading = DispatchQueue(label: "rangefs.webdav-listings")

    public init(_ download: ListingDownload) {
        self.download = download
    }

    public func list(_ url: URL, heldVersion: RemoteValidator?,
                     completion: @escaping @Sendable (Result<ListingAnswer, FetchError>) -> Void) {
        download.fetch(url, method: .propfind(body: WebDAVListing.propfindBody)) { [download, reading] result in
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
                    let listing = try WebDAVListing.parse(document.bytes, url: reply.finalURL, maxEntries: download.maxEntries)
                    for link in listing.skipped {
                        download.logger.notice("\(url.redactedForDisplay): member left out: \(link)")
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
