import Foundation
import Logging

/// Lists one directory of a web server for a mount grown from listings (`ListedDirectories`):
/// one GET of the directory's URL (chunked or not, up to a cap; conditional when a listing with
/// a validator is held, and a `304` keeps it), the page read by `WebListing.parse` against the
/// URL it came from after redirects, off the thread that runs every transfer.
public struct WebDirectoryLister: DirectoryLister {
    private let client: any RemoteClient
    /// The mount's `--header`s: an `Authorization` for a protected listing. Sent to the
    /// directories on `headersOrigin`'s origin alone: a root that redirected to another server
    /// has its tree there, and that server gets none of them.
    private let headers: [String: String]
    private let headersOrigin: URL?
    private let policy: FetchPolicy
    /// A bigger page is not a listing anyone means to mount.
    private let maxBytes: UInt64
    /// A page of more entries is refused as it is read (`ListedDirectories.Settings.maxEntries`).
    private let maxEntries: Int
    private let timeout: Duration
    private let logger: Logger
    /// Pages are read one at a time: each holds its page thrice over while it is read (the
    /// body, its text, its bytes) and up to `maxEntries` entries, so listings fetched at once
    /// would multiply what the mount holds.
    private let reading = DispatchQueue(label: "rangefs.listing-pages")

    /// `headersOrigin`: the URL (the mount's root) whose origin `headers` were given for.
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
        let request = DocumentRequest(url: url, headers: sent, maxBytes: maxBytes, heldVersion: heldVersion, timeout: timeout)
        var download = DocumentDownload(request: request, client: client)
        download.policy = policy
        download.start { [logger, reading] result in
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
            reading.async { [maxEntries] in
                do throws(WebListingError) {
                    let listing = try WebListing.parse(document.bytes, url: reply.finalURL, contentType: reply.contentType,
                                                    maxEntries: maxEntries)
                    for link in listing.skipped {
                        logger.notice("\(url.redactedForDisplay): link left out: \(link)")
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
