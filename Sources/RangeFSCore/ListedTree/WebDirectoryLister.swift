import Foundation
import Logging

/// Lists a directory URL with the mount's client: one GET of its page (chunked or not, up to a
/// cap; conditional when a listing is held), read by `WebListing.parse` off the transfer thread.
public struct WebDirectoryLister: DirectoryLister {
    /// Sent with every listing request (an `Authorization` for a protected listing).
    public var headers: [String: String]
    public var client: any RemoteClient
    public var policy: FetchPolicy
    /// A bigger page is not a listing anyone means to mount.
    public var maxListingBytes: UInt64 = 32 << 20
    public var logger: Logger

    public init(headers: [String: String], client: any RemoteClient, policy: FetchPolicy, logger: Logger) {
        self.headers = headers
        self.client = client
        self.policy = policy
        self.logger = logger
    }

    public func list(_ url: URL, heldVersion: RemoteValidator?,
                     completion: @escaping @Sendable (Result<ListingAnswer, FetchError>) -> Void) {
        var download = DocumentDownload(request: DocumentRequest(url: url, headers: headers, maxBytes: maxListingBytes,
                                                                 heldVersion: heldVersion), client: client)
        download.policy = policy
        download.start { [logger] result in
            let document: FetchedDocument
            switch result {
            case .success(let fetched): document = fetched
            case .failure(let error): return completion(.failure(FetchError(url, .remote(error))))
            }
            if document.reply.notModified { return completion(.success(.unchanged(document.reply.validator))) }
            // A page of 10,000 links takes a while to read: not on the thread that runs every transfer.
            DispatchQueue.global().async {
                do throws(WebListingError) {
                    let place = document.reply.finalURL
                    let listing = try WebListing.parse(document.bytes, url: place, contentType: document.reply.contentType)
                    for link in listing.skipped {
                        logger.notice("\(place.redactedForDisplay): link \(link) not shown")
                    }
                    completion(.success(.listed(listing.entries, document.reply.validator, from: place)))
                } catch {
                    completion(.failure(FetchError(url, .unreadableListing(error.reason))))
                }
            }
        }
    }
}
