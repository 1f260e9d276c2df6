import Foundation
import Synchronization

/// Walks a web directory from its root listing down, a bounded number of listings at a
/// time and a bounded number of levels deep, and yields its files as manifest entries
/// (path relative to the root, URL, and the size and date where the listings state them).
///
/// Only links one level below a page are followed (`ListingBase`), so a parent link cannot
/// lead back up; a redirect can, and a directory whose listing comes from a place already
/// listed, or from outside the root, is not listed again. A symbolic link to an ancestor on
/// the server makes an endless chain of new URLs: the depth limit ends it.
public struct WebListingCrawler: Sendable {
    public struct Limits: Sendable {
        public var listingsInFlight = 4
        /// Levels below the root that are listed; the root is level 0.
        public var maxDepth = 32
        public var maxListingBytes: UInt64 = 32 << 20
        /// For each listing's download.
        public var timeout: Duration = .seconds(60)

        public init() {}
    }

    /// What a walk found.
    public struct Outcome: Sendable {
        /// Every file, sorted by path.
        public var entries: [ManifestEntry]
        /// Things left out by rule: links with bad names, directories too deep or already listed.
        public var notes: [String]
        /// Directories whose listing could not be had or read: their files are missing.
        public var failures: [String]
    }

    public let root: URL
    /// Sent with every listing request (an `Authorization` for a protected listing).
    public var headers: [String: String]
    public var limits: Limits
    private let client: any RemoteClient

    /// `root` names a directory: a missing trailing `/` is added, as a browser's redirect would.
    public init(root: URL, headers: [String: String] = [:], client: any RemoteClient, limits: Limits = Limits()) {
        self.root = root.absoluteString.hasSuffix("/") ? root : URL(string: root.absoluteString + "/") ?? root
        self.headers = headers
        self.client = client
        self.limits = limits
    }

    /// Lists the whole tree and waits for it. Throws only when the root itself cannot be
    /// listed; a subdirectory that cannot be is a failure of the outcome.
    public func run() throws(WebListingError) -> Outcome {
        let walk = CrawlWalk(crawler: self)
        walk.start()
        return try walk.waitForOutcome()
    }

    fileprivate func download(_ url: URL, completion: @escaping @Sendable (Result<FetchedDocument, RemoteError>) -> Void) {
        let request = DocumentRequest(url: url, headers: headers, maxBytes: limits.maxListingBytes, timeout: limits.timeout)
        DocumentDownload(request: request, client: client).start(completion: completion)
    }
}

/// One walk's state, shared by the downloads' completions. Every field is behind `state`'s lock,
/// taken for bookkeeping only: no download starts and no page is parsed while it is held.
private final class CrawlWalk: Sendable {
    /// A directory to list: its URL and its path below the root ("" for the root, "a/b/" below).
    struct Directory: Sendable {
        var url: URL
        var path: String
        var depth: Int
    }

    struct State {
        var waiting: [Directory] = []
        var running = 0
        /// Final URLs (after redirects) of the directories listed, and the root's.
        var listed: Set<String> = []
        var rootPlace: String?
        var entries: [ManifestEntry] = []
        var notes: [String] = []
        var failures: [String] = []
        var rootError: WebListingError?
    }

    private let crawler: WebListingCrawler
    private let state = Mutex(State())
    private let finished = DispatchSemaphore(value: 0)

    init(crawler: WebListingCrawler) {
        self.crawler = crawler
    }

    func start() {
        state.withLock { $0.waiting.append(Directory(url: crawler.root, path: "", depth: 0)) }
        launch()
    }

    /// Bounded without a deadline of its own: every listing's download has its timeout and
    /// its bounded retries, no directory is listed twice, and none deeper than the limit.
    func waitForOutcome() throws(WebListingError) -> WebListingCrawler.Outcome {
        finished.wait()
        let final = state.withLock { $0 }
        if let error = final.rootError { throw error }
        let entries = final.entries.sorted { $0.path.description.utf8.lexicographicallyPrecedes($1.path.description.utf8) }
            .enumerated().map { index, entry in
                var numbered = entry
                numbered.line = index + 1
                return numbered
            }
        return WebListingCrawler.Outcome(entries: entries, notes: final.notes, failures: final.failures)
    }

    /// Starts listings while there is room; signals the end once nothing waits or runs.
    private func launch() {
        let (starting, done) = state.withLock { state -> ([Directory], Bool) in
            var starting: [Directory] = []
            while state.running < crawler.limits.listingsInFlight, !state.waiting.isEmpty {
                starting.append(state.waiting.removeFirst())
                state.running += 1
            }
            return (starting, starting.isEmpty && state.running == 0 && state.waiting.isEmpty)
        }
        if done { finished.signal() }
        for directory in starting {
            crawler.download(directory.url) { [self] result in
                list(directory, result)
                state.withLock { $0.running -= 1 }
                launch()
            }
        }
    }

    private func list(_ directory: Directory, _ result: Result<FetchedDocument, RemoteError>) {
        let shown = directory.url.redactedForDisplay
        let listing: WebListing
        let finalURL: URL
        do {
            let document = try result.get()
            finalURL = document.reply.finalURL
            listing = try WebListing.parse(document.bytes, url: finalURL, contentType: document.reply.contentType)
        } catch let error as WebListingError {
            record(directory, failure: error)
            return
        } catch {
            record(directory, failure: WebListingError(url: shown, reason: "cannot fetch the listing: \(error)"))
            return
        }
        let place = finalURL.absoluteString
        let refusal = state.withLock { state -> String? in
            // The root is listed alone, before any other directory.
            if directory.depth == 0 { state.rootPlace = place }
            if let root = state.rootPlace, !place.hasPrefix(root) {
                return "it leads to \(finalURL.redactedForDisplay), outside the root"
            }
            return state.listed.insert(place).inserted ? nil : "it leads to \(finalURL.redactedForDisplay), listed already"
        }
        if let refusal {
            note("\(shown): not listed: \(refusal)")
            return
        }
        var files: [ManifestEntry] = []
        var subdirectories: [Directory] = []
        for entry in listing.entries {
            let path = directory.path + entry.name
            if entry.isDirectory {
                if directory.depth + 1 > crawler.limits.maxDepth {
                    note("\(entry.url.redactedForDisplay): not listed: deeper than \(crawler.limits.maxDepth) levels")
                } else {
                    subdirectories.append(Directory(url: entry.url, path: path + "/", depth: directory.depth + 1))
                }
            } else if let entryPath = try? EntryPath(validating: path) {
                files.append(ManifestEntry(path: entryPath, url: entry.url, size: entry.size, modified: entry.modified, line: 0))
            }
        }
        state.withLock { state in
            state.entries += files
            state.waiting += subdirectories
            state.notes += listing.skipped.map { "\(shown): link \($0)" }
        }
    }

    private func record(_ directory: Directory, failure: WebListingError) {
        state.withLock { state in
            if directory.depth == 0 { state.rootError = failure } else { state.failures.append(failure.description) }
        }
    }

    private func note(_ text: String) {
        state.withLock { $0.notes.append(text) }
    }
}
