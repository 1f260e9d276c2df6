import Foundation
import Logging
import Synchronization

// Design note: an S3 bucket mounted from its listings, as a web directory is.
//
// - `BucketAddress`: the URLs of objects, prefixes (the directories) and ListObjectsV2 pages, in
//   path or virtual-hosted style, and the way back from a URL to its key.
// - `BucketLister` (this file): one directory's pages, fetched until the last, turned into
//   children (`BucketListingPage` parses a page, `BucketDirectory` maps keys to names by
//   mountpoint-s3's rules).
// - `S3Dialect` is what the HTTP client needs beyond plain HTTP (`ServerDialect`): a SigV4
//   signature made as each request goes out (`SigV4Signer`, the path and query signed in S3's
//   encoding, `S3URIEncoding`, which `BucketAddress` builds its URLs in, so S3 checks what was
//   signed; tested against AWS's published example and against botocore; credentials found by
//   `AWSSettings` as the AWS CLI finds them), `If-Match` instead of `If-Range`, and error replies
//   read for their S3 code (`S3ErrorReply`, explained by `S3Failure`).
// - Nothing else of the mount knows it is a bucket.

/// Lists one "directory" of a bucket for a mount grown from listings (`ListedDirectories`):
/// ListObjectsV2 of its prefix with `delimiter=/`, so only that level comes back, page after
/// page (1,000 keys each) until the reply is no longer truncated; then the keys become
/// children (`BucketDirectory`: names as mountpoint-s3 maps keys, keys that cannot be a name
/// left out and said once in the log). Sizes and dates come from the listing, so `ls -l`
/// sends no request per object. A listing is always asked in full: S3 gives no validator
/// for one.
public struct BucketLister: DirectoryLister {
    private let client: any RemoteClient
    private let address: BucketAddress
    private let policy: FetchPolicy
    /// A directory of more pages than this (a million keys at 1,000 a page) is not mounted.
    private let maxPages: Int
    /// A directory of more keys and prefixes is refused as its pages come (`ListedDirectories.Settings.maxEntries`).
    private let maxEntries: Int
    private let timeout: Duration
    private let logger: Logger
    /// Keys already said to be left out: a directory listed again says nothing new.
    private let reported = ReportedKeys()

    public init(client: any RemoteClient, address: BucketAddress, policy: FetchPolicy = FetchPolicy(),
                maxPages: Int = 1_000, maxEntries: Int = ListedDirectories.Settings.defaultMaxEntries,
                timeout: Duration = .seconds(60), logger: Logger) {
        self.client = client
        self.address = address
        self.policy = policy
        self.maxPages = maxPages
        self.maxEntries = maxEntries
        self.timeout = timeout
        self.logger = logger
    }

    public func list(_ url: URL, heldVersion: RemoteValidator?,
                     completion: @escaping @Sendable (Result<ListingAnswer, FetchError>) -> Void) {
        guard let prefix = address.key(of: url) else {
            return completion(.failure(FetchError(url, .unreadableListing("not a directory of \(address.displayName)"))))
        }
        listPage(of: url, prefix: prefix, after: nil, pages: [], entries: 0, completion: completion)
    }

    /// Asks for the page after `token` and goes on until the last; pages are read off the
    /// thread that runs every transfer.
    /// `entries`: the keys and prefixes of `pages`.
    private func listPage(of url: URL, prefix: String, after token: String?, pages: [BucketListingPage], entries: Int,
                          completion: @escaping @Sendable (Result<ListingAnswer, FetchError>) -> Void) {
        let request = DocumentRequest(url: address.listingURL(prefix: prefix, continuationToken: token),
                                      maxBytes: 16 << 20, timeout: timeout, connection: .stream)
        var download = DocumentDownload(request: request, client: client)
        download.policy = policy
        download.start { [self] result in
            let document: FetchedDocument
            switch result {
            case .success(let fetched): document = fetched
            case .failure(let error): return completion(.failure(FetchError(url, .remote(error))))
            }
            DispatchQueue.global().async {
                let page: BucketListingPage
                do {
                    page = try BucketListingPage.parse(document.bytes)
                } catch {
                    return completion(.failure(FetchError(url, .unreadableListing("\(error)"))))
                }
                let pages = pages + [page]
                let entries = entries + page.objects.count + page.commonPrefixes.count
                guard entries <= maxEntries else {
                    return completion(.failure(FetchError(url, .unreadableListing(
                        "more than \(maxEntries) keys in one directory, more than the mount holds (--max-listed-entries)"))))
                }
                if page.isTruncated {
                    guard let next = page.nextContinuationToken, next != token else {
                        return completion(.failure(FetchError(url, .unreadableListing("a truncated page without a new continuation token"))))
                    }
                    guard pages.count < maxPages else {
                        return completion(.failure(FetchError(url, .unreadableListing("more than \(maxPages) pages of keys in one directory"))))
                    }
                    return listPage(of: url, prefix: prefix, after: next, pages: pages, entries: entries, completion: completion)
                }
                completion(.success(.listed(children(of: prefix, pages: pages), nil, from: url,
                                            serverTime: document.reply.serverTime)))
            }
        }
    }

    /// The directory's children as the listed tree takes them; keys left out are logged.
    private func children(of prefix: String, pages: [BucketListingPage]) -> [WebListingEntry] {
        let directory = BucketDirectory(prefix: prefix, pages: pages)
        for left in directory.leftOut where reported.isNew(left.key) {
            logger.notice("\(address.displayName): key left out: \(left)")
        }
        return directory.children.map { child in
            switch child {
            case .file(let file):
                WebListingEntry(name: file.name, url: address.objectURL(key: file.key), isDirectory: false,
                                size: file.size, modified: file.lastModified)
            case .directory(let subdirectory):
                WebListingEntry(name: subdirectory.name, url: address.directoryURL(prefix: subdirectory.prefix), isDirectory: true)
            }
        }
    }
}

/// The keys a mount has reported, so each is reported once however often its directory is listed.
private final class ReportedKeys: Sendable {
    /// Taken alone, for one insertion.
    private let keys = Mutex<Set<String>>([])

    /// True the first time `key` is seen.
    func isNew(_ key: String) -> Bool {
        keys.withLock { $0.insert(key).inserted }
    }
}
