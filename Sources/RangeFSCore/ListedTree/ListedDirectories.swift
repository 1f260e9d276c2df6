import Foundation
import Logging
import Synchronization

/// Fetches the listing of one directory URL: its children, or why they could not be had.
public protocol DirectoryLister: Sendable {
    func list(_ url: URL, completion: @escaping @Sendable (Result<[ListedChild], FetchError>) -> Void)
}

/// The directories of a mount made from a server's listings, listed as they are first looked
/// at: a bounded number of listings at once, every caller waiting on a directory answered once
/// its listing is in. After each listing the mount is shown the grown tree (`onChange`) before
/// the callers waiting on it go on, so they find what it listed.
public final class ListedDirectories: Sendable {
    public typealias Completion = @Sendable (Result<Void, FetchError>) -> Void
    /// What the mount shows: the files of the listed directories as a manifest, and every
    /// known directory (listed or not).
    public typealias Snapshot = (manifest: Manifest, directories: [EntryPath])

    private struct State {
        var tree: ListedTree
        /// Callers waiting per directory path; a path here is queued or being listed.
        var waiting: [String: [Completion]] = [:]
        var queue: [String] = []
        var inFlight = 0
    }

    /// Taken alone: no other lock is taken and no call made while it is held.
    private let state: Mutex<State>
    private let lister: any DirectoryLister
    private let maxInFlight: Int
    private let source: String
    private let logger: Logger
    private let onChange: @Sendable (Snapshot) -> Void
    /// Shows each change in turn, so an older tree is never shown after a newer one.
    private let publisher = DispatchQueue(label: "rangefs.listed-tree")

    /// - Parameters:
    ///   - maxInFlight: listings fetched at once, however many directories are looked at.
    ///   - maxDepth: directories deeper than this below the root are not shown.
    public init(root: URL, lister: any DirectoryLister, maxInFlight: Int = 4, maxDepth: Int = 32,
                logger: Logger, onChange: @escaping @Sendable (Snapshot) -> Void) {
        state = Mutex(State(tree: ListedTree(root: root, maxDepth: maxDepth)))
        self.lister = lister
        self.maxInFlight = max(1, maxInFlight)
        source = root.redactedForDisplay
        self.logger = logger
        self.onChange = onChange
    }

    /// What is known now (an empty tree before the root is listed).
    public var snapshot: Snapshot {
        state.withLock { $0.tree.snapshot(source: source) }
    }

    public func isListed(_ path: EntryPath?) -> Bool {
        state.withLock { $0.tree.isListed(path?.description ?? "") }
    }

    /// Calls `completion` once the directory at `path` (nil: the root) is listed: at once when
    /// it is, or when the tree has no directory there (the caller then finds nothing in it).
    public func ensureListed(_ path: EntryPath?, completion: @escaping Completion) {
        let key = path?.description ?? ""
        let queued = state.withLock { state -> Bool in
            guard state.tree.url(of: key) != nil, !state.tree.isListed(key) else { return false }
            if state.waiting[key] != nil {
                state.waiting[key]!.append(completion)
            } else {
                state.waiting[key] = [completion]
                state.queue.append(key)
            }
            return true
        }
        guard queued else { return completion(.success(())) }
        startQueued()
    }

    /// Lists every listed directory again (`rangefs refresh`), waiting at most `timeout`; a
    /// directory whose listing fails keeps what it showed. Returns the failures.
    public func relistAll(timeout: Duration) -> [FetchError] {
        let listed = state.withLock { state in
            state.tree.directories.filter { $0.value.children != nil }.map { ($0.key, $0.value.url) }
        }
        let failures = Mutex<[FetchError]>([])
        let group = DispatchGroup()
        for (path, url) in listed {
            group.enter()
            lister.list(url) { [self] result in
                switch result {
                case .success(let children): record(children, at: path)
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
        publisher.sync { onChange(snapshot) }
    }

    // MARK: Listing

    private func startQueued() {
        while let (path, url) = nextToList() {
            lister.list(url) { [self] result in finished(path, result) }
        }
    }

    private func nextToList() -> (String, URL)? {
        state.withLock { state in
            while state.inFlight < maxInFlight, !state.queue.isEmpty {
                let path = state.queue.removeFirst()
                guard let url = state.tree.url(of: path) else {
                    // Gone since it was queued (its parent was listed again without it).
                    continue
                }
                state.inFlight += 1
                return (path, url)
            }
            return nil
        }
    }

    private func finished(_ path: String, _ result: Result<[ListedChild], FetchError>) {
        let waiting = state.withLock { state in
            state.inFlight -= 1
            return state.waiting.removeValue(forKey: path) ?? []
        }
        switch result {
        case .success(let children):
            record(children, at: path)
            publisher.async { [self] in
                onChange(snapshot)
                for completion in waiting { completion(.success(())) }
            }
        case .failure(let error):
            // Not remembered: the next look at the directory asks again.
            logger.error("cannot list \(path.isEmpty ? "the top directory" : path): \(error)")
            for completion in waiting { completion(.failure(error)) }
        }
        startQueued()
    }

    private func record(_ children: [ListedChild], at path: String) {
        let refused = state.withLock { $0.tree.record(children, at: path) }
        for (name, refusal) in refused {
            logger.notice("\(ListedTree.join(path, name)): not shown, \(Self.describe(refusal))")
        }
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
