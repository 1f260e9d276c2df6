import Foundation
import Logging

/// Lists one directory of a web server for a mount grown from listings (`ListedDirectories`):
/// one GET of the directory's URL (chunked or not, up to a cap; conditional when a listing with
/// a validator is held, and a `304` keeps it), the page read by `WebListing.parse` against the
/// URL it came from after redirects, off the thread that runs every transfer.
public struct WebDirectoryLister: DirectoryLister {
    private let download: ListingDownload
    /// Pages are read one at a time: each holds its page thrice over while it is read (the
    /// body, its text, its bytes) and up to `maxEntries` entries, so listings fetched at once
    /// would multiply what the mount holds.
    private let reading = DispatchQueue(label: "rangefs.listing-pages")

    public init(_ download: ListingDownload) {
        self.download = download
    }

    public func list(_ url: URL, heldVersion: RemoteValidator?,
                     completion: @escaping @Sendable (Result<ListingAnswer, FetchError>) -> Void) {
        download.fetch(url, heldVersion: heldVersion) { [download, reading] result in
            let document: FetchedDocument
            switch result {
            case .success(let fetched): document = fetched
            case .failure(let error): return completion(.failure(FetchError(url, .remote(error))))
            }
            let reply = document.reply
            // Most servers send no validator with a listing: there is then nothing to ask again with.
            let validator = reply.validator.etag == nil && reply.validator.lastModified == nil ? nil : reply.validator
            if reply.notModified { return completion(.success(.unchanged(validator, serverTime: reply.serverTime))) }
            // A page of 10,000 links takes a while to read: not on the thread that runs every transfer.
            reading.async {
                do throws(WebListingError) {
                    let listing = try WebListing.parse(document.bytes, url: reply.finalURL, contentType: reply.contentType,
                                                    maxEntries: download.maxEntries)
                    for link in listing.skipped {
                        download.logger.notice("\(url.redactedForDisplay): link left out: \(link)")
                    }
                    completion(.success(.listed(listing.entries, validator, from: reply.finalURL, serverTime: reply.serverTime)))
                } catch {
                    // Asking again brings the same page: not a transient failure.
                    completion(.failure(FetchError(url, .unreadableListing(error.reason))))
                }
            }
        }
    }
}
