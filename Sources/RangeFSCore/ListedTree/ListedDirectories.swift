import Foundation
import Logging
import Synchronization

// Design note: a tree grown from a server's listings.
//
// - Each kind of server is one `DirectoryLister`: one directory's children, each with its name,
//   URL and what the listing states (size, date). The CLI picks it
//   (`MountRunner.Listing.Source`); nothing past the lister knows which source it is.
// - `ListedTree` (pure) holds the directories known, listed or not, what each listing showed,
//   and the rules that keep listings from growing the tree without end: links out of the tree,
//   back to a directory shown, too deep, or more names over the mount than
//   `--max-listed-entries` are refused, and that directory gives `EIO`. A page that came but
//   cannot be read is not asked for again before `--dir-cache-time` has passed.
// - `ListedDirectories` (this file) lists a directory when it is first looked at, a bounded
//   number at once (`ListingQueue`), and the next ones a walk will open (`listAhead`; how many,
//   `ListAheadWindows`, grows as the walk goes on), shows the grown tree before the callers go
//   on (listings that arrive while a tree is being shown are shown together by the next show,
//   and a show costs the tree's size: a walk gains by many listings per show), keeps each
//   listing in the cache database and checks an old one again with its validator. A file a new
//   listing shows with another size or date than the one before (`ListedTree.changedFiles`) was
//   changed on its server: the mount discards what it cached of it (`Snapshot.changedFiles`,
//   `FileCatalog.filesChangedOnServer`), whose only other sign would be a read of a byte not
//   cached yet.
// - `WebDirectoryLister` is one web page's GET and parse; `ListingDownload` is how it and the
//   WebDAV and Subsonic listers fetch a document (the client, the `--header`s and the one
//   origin they are for, the caps). Pages are parsed one at a time, each refused past
//   `--max-listed-entries` as it is read, so memory stays bounded however many are fetched.

/// The directories of a mount made from a server's listings, listed as they are first looked
/// at: a bounded number of listings at once, every caller waiting on a directory answered once
/// its listing is in. After each listing the mount is shown the grown tree (`onChange`) before
/// the callers waiting on it go on, so they find what it listed. Listings are kept (`save`) and
/// shown again at the next mount at once; one older than `maxAge` is asked again, with its
/// validator, when next looked at, while the caller goes on with what is known.
public final class ListedDirectories: Sendable {
    public typealias Completion = @Sendable (Result<Void, FetchError>) -> Void
    /// What the mount shows: the files of the listed directories as a manifest, and every
    /// known directory (listed or not).
    /// The tree to show, and the files whose listing changed since the tree shown before: their
    /// server changed them (`ListedTree.changedFiles`), so what is cached of them is stale.
    public typealias Snapshot = (manifest: Manifest, directories: [EntryPath], changedFiles: [URL])

    private struct State {
        var tree: ListedTree
        /// Callers waiting per directory path; a path here is queued or being listed.
        var waiting: [String: [Completion]] = [:]
        var queue = ListingQueue()
        /// The paths being listed.
        var started: Set<String> = []
        /// Listings recorded so far: the number of the latest.
        var recorded = 0
        /// The latest record a show held.
        var shown = 0
        /// Directories whose page came but cannot be read (not a listing, or more names than
        /// the mount holds), with why and until when: asking again would bring the same page,
        /// so looks at them fail at once until the listing's age limit passes.
        var unreadable: [String: (error: FetchError, until: Date)] = [:]
        /// Listed, but the mount does not show that listing yet (by the number of its record):
        /// a caller waits for the show.
        var unshown: [String: Int] = [:]
        /// Callers answered once the mount shows a tree with the record of that number.
        var waitingForShow: [(record: Int, completion: Completion)] = []
        /// Files relisted with another size or date since the last show.
        var changedFiles: [URL] = []
        /// How long the server took to answer each of the latest listings.
        var listingTimes = RecentListingTimes()
    }

    public struct Settings: Sendable {
        /// Listings fetched at once, however many directories are looked at.
        public var maxInFlight = 4
        /// Directories deeper than this below the root are not shown.
        public var maxDepth = 32
        /// A listing older than this is asked again when next looked at (`--dir-cache-time`).
        public var maxAge: Duration = .seconds(300)
        /// The most names the listed directories show together (`--max-listed-entries`); a
        /// listing that would go past it is refused, and its directory cannot be read.
        public var maxEntries = Self.defaultMaxEntries
        public static let defaultMaxEntries = 100_000

        public init() {}
    }

    /// Taken alone: no other lock is taken and no call made while it is held.
    private let state: Mutex<State>
    private let lister: any DirectoryLister
    private let settings: Settings
    private let source: String
    private let logger: Logger
    private let onChange: @Sendable (Snapshot) -> Void
    /// Keeps a listing (by directory URL) for the next mount.
    private let save: @Sendable (URL, StoredListing) -> Void
    /// Shows each change in turn, so an older tree is never shown after a newer one.
    private let publisher = DispatchQueue(label: "rangefs.listed-tree")
    /// The shortest server time of the latest listings (`recentListingTime`), in ns (0: none yet).
    private let recentListingNanoseconds = Atomic<UInt64>(0)

    /// - Parameter stored: the listings an earlier mount kept, by directory URL.
    public init(root: URL, lister: any DirectoryLister, settings: Settings = Settings(),
                stored: [String: StoredListing] = [:], logger: Logger,
                save: @escaping @Sendable (URL, StoredListing) -> Void = { _, _ in },
                onChange: @escaping @Sendable (Snapshot) -> Void) {
        var tree = ListedTree(root: root, maxDepth: settings.maxDepth, maxEntries: settings.maxEntries)
        tree.restore(from: stored)
        state = Mutex(State(tree: tree))
        self.lister = lister
        self.settings = settings
        source = root.redactedForDisplay
        self.logger = logger
        self.save = save
        self.onChange = onChange
    }

    /// A directory's URL ends in `/`: one without is given it, as a browser's redirect would.
    public static func directoryURL(_ url: URL) -> URL {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false),
              !components.percentEncodedPath.hasSuffix("/") else { return url }
        components.percentEncodedPath += "/"
        return components.url ?? url
    }

    /// What is known now (an empty tree before the root is listed).
    public var snapshot: Snapshot {
        state.withLock { state in
            let (manifest, directories) = state.tree.snapshot(source: source)
            return (manifest, directories, [])
        }
    }

    public func isListed(_ path: EntryPath?) -> Bool {
        state.withLock { $0.tree.isListed(path?.description ?? "") }
    }

    /// Calls `completion` once the directory at `path` (nil: the root) is listed: at once when
    /// it is, or when the tree has no directory there (the caller then finds nothing in it).
    public func ensureListed(_ path: EntryPath?, completion: @escaping Completion) {
        let key = path?.description ?? ""
        let now = Date()
        let maxAge = settings.maxAge.timeInterval
        enum Next { case answer, wait, answerAndRevalidate, waitForShow, fail(FetchError) }
        let next = state.withLock { state -> Next in
            guard state.tree.url(of: key) != nil else { return .answer }
            if let known = state.unreadable[key], known.until > now { return .fail(known.error) }
            if let record = state.unshown[key] {
                // The show that has it is on its way (`finished` queued it).
                state.waitingForShow.append((record, completion))
                return .waitForShow
            }
            if state.tree.isListed(key) {
                // Stale: asked again in the background (once), the caller goes on with what is known.
                guard state.tree.isStale(key, now: now, maxAge: maxAge), state.waiting[key] == nil else { return .answer }
                state.waiting[key] = []
                state.queue.putLast(key)
                return .answerAndRevalidate
            }
            if state.waiting[key] != nil {
                state.waiting[key]!.append(completion)
                // Queued ahead of need: someone waits for it now, so it goes first.
                if !state.started.contains(key) { state.queue.putFirst(key) }
            } else {
                state.waiting[key] = [completion]
                // Before the listings asked for ahead of need.
                state.queue.putFirst(key)
            }
            return .wait
        }
        switch next {
        case .answer:
            completion(.success(()))
        case .wait:
            startQueued()
        case .waitForShow:
            break
        case .fail(let error):
            completion(.failure(error))
        case .answerAndRevalidate:
            completion(.success(()))
            startQueued()
        }
    }

    /// Lists these directories ahead of need, after any a caller waits for: a walk (`find`,
    /// `du`, `ls -R`) opens a directory's subdirectories one after another, and listing the
    /// next ones while it reads this one keeps several round trips in flight.
    public func listAhead(_ paths: [EntryPath]) {
        let now = Date()
        let queued = state.withLock { state -> Bool in
            var queued = false
            for path in paths.map(\.description) where state.waiting[path] == nil {
                guard state.tree.url(of: path) != nil, !state.tree.isListed(path),
                      (state.unreadable[path]?.until ?? now) <= now else { continue }
                state.waiting[path] = []
                state.queue.putLast(path)
                queued = true
            }
            return queued
        }
        if queued { startQueued() }
    }

    /// Lists the whole tree (`rangefs manifest`), or all below `top` (a directory pinned before
    /// it was looked at): every directory known, then every one those
    /// listings showed, until none is left, a bounded number at once. Waits at most `timeout`;
    /// returns why each directory that could not be listed was not (see `isListed(nil)` for
    /// the top).
    public func listEverything(below top: EntryPath? = nil, timeout: Duration) -> [FetchError] {
        let prefix = top?.description ?? ""
        let deadline = DispatchTime.now() + timeout.timeInterval
        let failures = Mutex<[String: FetchError]>([:])
        while true {
            let failed = failures.withLock { Set($0.keys) }
            let unlisted = state.withLock { state in
                state.tree.directories.filter { path, directory in
                    directory.children == nil && !failed.contains(path)
                        // Below `top`, and the directories above it, whose listings lead there.
                        && (prefix.isEmpty || path == prefix || path.hasPrefix(prefix + "/")
                            || path.isEmpty || prefix.hasPrefix(path + "/"))
                }.map(\.key)
            }
            guard !unlisted.isEmpty else { break }
            let group = DispatchGroup()
            for path in unlisted {
                group.enter()
                let entryPath = path.isEmpty ? nil : EntryPath(trustedComponents: path.split(separator: "/").map(String.init))
                ensureListed(entryPath) { result in
                    if case .failure(let error) = result { failures.withLock { $0[path] = error } }
                    group.leave()
                }
            }
            if group.wait(timeout: deadline) == .timedOut {
                return failures.withLock { $0 }.sorted { $0.key < $1.key }.map(\.value) + [FetchError(source, .timedOut(timeout))]
            }
        }
        return failures.withLock { $0 }.sorted { $0.key < $1.key }.map(\.value)
    }

    /// Lists every listed directory again (`rangefs refresh`), waiting at most `timeout`; a
    /// directory whose listing fails keeps what it showed. Returns the failures.
    public func relistAll(timeout: Duration) -> [FetchError] {
        let listed = state.withLock { state in
            state.tree.directories.filter { $0.value.children != nil }.map { ($0.key, $0.value.url, $0.value.validator) }
        }
        let failures = Mutex<[FetchError]>([])
        let group = DispatchGroup()
        for (path, url, validator) in listed {
            group.enter()
            lister.list(url, heldVersion: validator) { [self] result in
                switch result {
                case .success(let answer):
                    if let refusal = record(answer, at: path) { failures.withLock { $0.append(refusal) } }
                case .failure(let error): failures.withLock { $0.append(error) }
                }
                group.leave()
            }
        }
        if group.wait(timeout: .now() + timeout.timeInterval) == .timedOut {
            failures.withLock { $0.append(FetchError(source, .timedOut(timeout))) }
        }
        return failures.withLock { $0 }
    }

    /// Shows the tree as it is now, after every change queued before (for `rangefs refresh`).
    public func showNow() {
        publisher.sync { show(evenUnchanged: true) }
    }

    /// Shows the tree as it is, then answers the callers who waited for a listing in it. Runs
    /// on `publisher` only, so trees are shown in the order they were known. Listings that came
    /// while a show ran are all shown by the next one; the shows queued for them after it find
    /// nothing new and cost nothing (showing a tree costs time in the number of its names).
    private func show(evenUnchanged: Bool = false) {
        let (shownRecord, snapshot) = state.withLock { state -> (Int, Snapshot?) in
            guard evenUnchanged || state.recorded > state.shown else { return (state.recorded, nil) }
            state.shown = state.recorded
            let (manifest, directories) = state.tree.snapshot(source: source)
            defer { state.changedFiles = [] }
            return (state.recorded, (manifest, directories, state.changedFiles))
        }
        if let snapshot { onChange(snapshot) }
        // Only now is it shown; what was recorded since waits for the next show.
        let answered = state.withLock { state in
            state.unshown = state.unshown.filter { $0.value > shownRecord }
            let (shown, later) = state.waitingForShow.partitioned { $0.record <= shownRecord }
            state.waitingForShow = later
            return shown
        }
        for waiter in answered { waiter.completion(.success(())) }
    }

    // MARK: Listing

    /// How long the server took to answer the quickest of the latest listings
    /// (`ListingAnswer.serverTime`, `RecentListingTimes`): its round trip, not the wait for a
    /// free connection nor the page's transfer nor the tree's growth after it. Tells a near
    /// server from a distant one.
    public var recentListingTime: Duration {
        .nanoseconds(recentListingNanoseconds.load(ordering: .relaxed))
    }

    private func startQueued() {
        while let (path, url, validator) = nextToList() {
            lister.list(url, heldVersion: validator) { [self] result in
                if case .success(let answer) = result {
                    let shortest = state.withLock { state in
                        state.listingTimes.record(answer.serverTime)
                        return state.listingTimes.shortest
                    }
                    recentListingNanoseconds.store(UInt64(shortest / .nanoseconds(1)), ordering: .relaxed)
                    logger.debug("\(url.redactedForDisplay): listed, the server answered in \(answer.serverTime)")
                }
                finished(path, result)
            }
        }
    }

    private func nextToList() -> (String, URL, RemoteValidator?)? {
        state.withLock { state in
            while state.started.count < settings.maxInFlight, let path = state.queue.next() {
                // Put first after it was put last, or listed since: listed once.
                guard state.waiting[path] != nil, !state.started.contains(path) else { continue }
                guard let directory = state.tree.directories[path] else {
                    // Gone since it was queued (its parent was listed again without it).
                    for completion in state.waiting.removeValue(forKey: path) ?? [] {
                        DispatchQueue.global().async { completion(.success(())) }
                    }
                    continue
                }
                state.started.insert(path)
                // Only a listing held may be asked for conditionally.
                return (path, directory.url, directory.children == nil ? nil : directory.validator)
            }
            return nil
        }
    }

    private func finished(_ path: String, _ result: Result<ListingAnswer, FetchError>) {
        var result = result
        if case .success(let answer) = result {
            // Recorded, and its callers moved to wait for the show, at once: a look in between
            // neither lists it again nor finds it listed before the mount shows it.
            let refusal = record(answer, at: path) { state, record in
                state.started.remove(path)
                state.waitingForShow += (state.waiting.removeValue(forKey: path) ?? []).map { (record, $0) }
            }
            guard let refusal else {
                publisher.async { [self] in show() }
                return startQueued()
            }
            result = .failure(refusal)
        }
        let until = Date() + settings.maxAge.timeInterval
        let (waiting, wasListed) = state.withLock { state in
            state.started.remove(path)
            if case .failure(let error) = result, case .unreadableListing = error.reason { state.unreadable[path] = (error, until) }
            return (state.waiting.removeValue(forKey: path) ?? [], state.tree.isListed(path))
        }
        switch result {
        case .success:
            preconditionFailure("handled above")
        case .failure(let error) where wasListed:
            // A stale listing that could not be checked stays shown; the next look asks again.
            logger.warning("cannot check the listing of \(Self.name(path)) again, showing what was known: \(error)")
        case .failure(let error):
            // Not remembered: the next look at the directory asks again.
            logger.error("cannot list \(Self.name(path)): \(error)")
            for completion in waiting { completion(.failure(error)) }
        }
        startQueued()
    }

    /// Records a listing (or its confirmation) and, under the same lock, does `alsoLocked`;
    /// the mount shows it at the next `show()`. A listing with more names than the mount has
    /// room for is not recorded (nor `alsoLocked` done): returns why.
    @discardableResult
    private func record(_ answer: ListingAnswer, at path: String,
                        alsoLocked: (inout State, Int) -> Void = { _, _ in }) -> FetchError? {
        let now = Date()
        enum Outcome {
            case recorded(refused: [(name: String, refusal: ListedTree.Refusal)], stored: (URL, StoredListing)?)
            case tooMany(FetchError)
        }
        let outcome = state.withLock { state -> Outcome in
            if case .listed(let children, _, _, _) = answer, !state.tree.fits(children.count, at: path),
               let url = state.tree.url(of: path) {
                let limit = state.tree.maxEntries
                return .tooMany(FetchError(url, .unreadableListing(
                    "its \(children.count) names would bring the names listed in this mount past \(limit) (--max-listed-entries)")))
            }
            state.recorded += 1
            state.unreadable[path] = nil
            state.unshown[path] = state.recorded
            alsoLocked(&state, state.recorded)
            var refused: [(name: String, refusal: ListedTree.Refusal)] = []
            switch answer {
            case .unchanged(let validator, _):
                state.tree.confirm(path, at: now, validator: validator)
            case .listed(let children, let validator, let place, _):
                if let earlier = state.tree.children(at: path) {
                    state.changedFiles += ListedTree.changedFiles(from: earlier, to: children)
                }
                refused = state.tree.record(children, at: path, from: place, validator: validator, listedAt: now)
            }
            return .recorded(refused: refused, stored: state.tree.stored(path).map { (state.tree.url(of: path)!, $0) })
        }
        let refused: [(name: String, refusal: ListedTree.Refusal)], stored: (URL, StoredListing)?
        switch outcome {
        case .tooMany(let error): return error
        case .recorded(let recordedRefusals, let recordedListing): (refused, stored) = (recordedRefusals, recordedListing)
        }
        for (name, refusal) in refused {
            // An empty name: the directory's own page, which came from elsewhere.
            let shown = name.isEmpty ? Self.name(path) : ListedTree.join(path, name)
            logger.notice("\(shown): not shown, \(Self.describe(refusal))")
        }
        if let (url, listing) = stored { save(url, listing) }
        return nil
    }

    private static func name(_ path: String) -> String {
        path.isEmpty ? "the top directory" : path
    }

    private static func describe(_ refusal: ListedTree.Refusal) -> String {
        switch refusal {
        case .badName(let reason): reason
        case .outsideTheRoot: "it links outside the mounted URL"
        case .alreadyShown(let path): "it links to a directory shown as \(path.isEmpty ? "the top" : path)"
        case .tooDeep: "it is deeper than the deepest directory shown"
        }
    }
}

extension Array {
    /// The elements for which `belongs` holds, and the others, each in order.
    func partitioned(_ belongs: (Element) -> Bool) -> ([Element], [Element]) {
        var yes: [Element] = [], no: [Element] = []
        for element in self {
            if belongs(element) { yes.append(element) } else { no.append(element) }
        }
        return (yes, no)
    }
}
