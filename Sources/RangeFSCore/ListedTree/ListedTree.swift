import Foundation

/// One directory's listing as the cache database keeps it, so a remount (or a mount while the
/// server is unreachable) shows the last known tree at once.
public struct StoredListing: Sendable, Equatable, Codable {
    public var children: [WebListingEntry]
    /// The listing's ETag / Last-Modified, asked again with `If-None-Match` / `If-Modified-Since`.
    public var validator: RemoteValidator?
    /// When the server last gave or confirmed it.
    public var listedAt: Date

    public init(children: [WebListingEntry], validator: RemoteValidator?, listedAt: Date) {
        self.children = children
        self.validator = validator
        self.listedAt = listedAt
    }
}

/// A tree mounted from a server's own directory listings: which directories are known, which
/// are listed, and what each listing said. It does no I/O (`ListedDirectories` fetches the
/// listings and feeds them in) and turns what is known into the manifest and the directories
/// the mount shows. A directory is listed when first looked at, so a tree of any size mounts
/// at once; the rules below keep a hostile or odd listing from growing it without end.
struct ListedTree {
    struct Directory {
        let url: URL
        /// 0 for the root.
        let depth: Int
        /// What its listing showed (refused children left out); nil until listed.
        var children: [WebListingEntry]? {
            didSet { files = Self.files(of: children ?? [], in: path) }
        }
        /// Its path in the mount ("" for the root).
        let path: String
        /// The manifest entries of its files, made once per listing: a tree of 10,000 files is
        /// shown anew after each listing, and remaking them all each time cost more than the rest.
        private(set) var files: [ManifestEntry] = []

        init(url: URL, depth: Int, path: String) {
            self.url = url
            self.depth = depth
            self.path = path
        }

        private static func files(of children: [WebListingEntry], in path: String) -> [ManifestEntry] {
            let directory = path.isEmpty ? [] : path.split(separator: "/").map(String.init)
            return children.filter { !$0.isDirectory }.map { child in
                ManifestEntry(path: EntryPath(trustedComponents: directory + [child.name]), url: child.url,
                              size: child.size, modified: child.modified, line: 0)
            }
        }
        var validator: RemoteValidator?
        /// When the server last gave or confirmed the listing.
        var listedAt: Date?
    }

    /// Why a listed child is not shown.
    enum Refusal: Equatable {
        /// Not a name a file can have here (empty, ".", "..", a "/", too long); the reason.
        case badName(String)
        /// Its URL is not below the root's (a link out of the tree).
        case outsideTheRoot
        /// Its URL is one the tree already shows (a link back to an ancestor or a second name
        /// for a directory shown elsewhere): listing it would loop.
        case alreadyShown(at: String)
        /// Deeper than the tree may go.
        case tooDeep
    }

    let root: URL
    let maxDepth: Int
    /// The most names the listed directories may show together (`--max-listed-entries`): what
    /// the mount holds of each name, in the tree, the catalog and the kept listings, is then
    /// bounded, whatever the server lists.
    let maxEntries: Int
    /// The names the listed directories show now, all together.
    private(set) var entryCount = 0
    /// By path in the mount ("" for the root, "a/b" below it).
    private(set) var directories: [String: Directory]
    /// The path each shown directory URL has, to refuse a second path to it.
    private var pathByURL: [String: String]
    /// The root's URL, and where its page came from when a redirect led elsewhere: a directory
    /// is in the tree when its URL lies below one of them.
    private var rootKeys: [String]

    init(root: URL, maxDepth: Int = 32, maxEntries: Int = .max) {
        self.root = root
        self.maxDepth = maxDepth
        self.maxEntries = maxEntries
        directories = ["": Directory(url: root, depth: 0, path: "")]
        pathByURL = [Self.key(root): ""]
        rootKeys = [Self.key(root)]
    }

    func isListed(_ path: String) -> Bool {
        directories[path]?.children != nil
    }

    /// Whether a listing of `count` names at `path` fits beside the other listings: the one it
    /// replaces makes room.
    func fits(_ count: Int, at path: String) -> Bool {
        count <= maxEntries - entryCount + (directories[path]?.children?.count ?? 0)
    }

    /// True for a listed directory whose listing is older than `maxAge` at `now`.
    func isStale(_ path: String, now: Date, maxAge: TimeInterval) -> Bool {
        guard let listedAt = directories[path]?.listedAt else { return false }
        return now.timeIntervalSince(listedAt) > maxAge
    }

    /// The server confirmed the listing is unchanged (a `304`), maybe with a newer validator.
    mutating func confirm(_ path: String, at date: Date, validator: RemoteValidator?) {
        guard directories[path]?.children != nil else { return }
        directories[path]?.listedAt = date
        if let validator { directories[path]?.validator = validator }
    }

    /// What to store of a listed directory.
    func stored(_ path: String) -> StoredListing? {
        guard let directory = directories[path], let children = directory.children, let listedAt = directory.listedAt else { return nil }
        return StoredListing(children: children, validator: directory.validator, listedAt: listedAt)
    }

    /// Rebuilds what was known from stored listings (by directory URL), from the root down:
    /// each known directory whose listing is stored is shown as it was.
    mutating func restore(from stored: [String: StoredListing]) {
        var pending = [""]
        while let path = pending.popLast() {
            // A listing kept with a higher limit than this mount's is listed again when looked at (and refused then, said in the log).
            guard let url = directories[path]?.url, let listing = stored[url.cacheKey],
                  fits(listing.children.count, at: path) else { continue }
            _ = record(listing.children, at: path, validator: listing.validator, listedAt: listing.listedAt)
            pending += (directories[path]?.children ?? []).filter(\.isDirectory).map { Self.join(path, $0.name) }
        }
    }

    /// The directory's URL, or nil when the tree has no directory at `path`.
    func url(of path: String) -> URL? {
        directories[path]?.url
    }

    /// Records the listing of the directory at `path` (its page came from `place`, after
    /// redirects), replacing an earlier one. Child directories become known (not listed);
    /// returns those refused, by name, for the log. A page that came from outside the root or
    /// from a directory shown elsewhere (a redirect back up) lists nothing here: refused with
    /// an empty name.
    mutating func record(_ children: [WebListingEntry], at path: String, from place: URL? = nil,
                         validator: RemoteValidator? = nil, listedAt: Date = Date()) -> [(name: String, refusal: Refusal)] {
        guard let directory = directories[path] else { return [] }
        if let place, Self.key(place) != Self.key(directory.url) {
            if let refusal = refusal(ofPlace: place, forPath: path) {
                return record([], at: path, validator: validator, listedAt: listedAt) + [("", refusal)]
            }
            // The root's page lives elsewhere (`/music` → `/media/music/`): its links lead there.
            if path.isEmpty, !rootKeys.contains(Self.key(place)) { rootKeys.append(Self.key(place)) }
        }
        // Directories of the earlier listing that are gone from this one go, with what is below them.
        if let earlier = directory.children {
            let kept = Set(children.filter(\.isDirectory).map(\.name))
            let gone = Set(earlier.filter { $0.isDirectory && !kept.contains($0.name) }.map(\.name))
            if !gone.isEmpty { forget(gone, below: path) }
        }
        var shown: [WebListingEntry] = []
        var refused: [(String, Refusal)] = []
        for child in children {
            do throws(EntryPathError) {
                _ = try EntryPath(validatingComponent: child.name)
            } catch {
                refused.append((child.name, .badName(error.reason)))
                continue
            }
            guard child.isDirectory else {
                shown.append(child)
                continue
            }
            let childPath = Self.join(path, child.name)
            if let refusal = refusal(of: child, at: childPath, depth: directory.depth + 1) {
                refused.append((child.name, refusal))
                continue
            }
            shown.append(child)
            if directories[childPath] == nil {
                directories[childPath] = Directory(url: child.url, depth: directory.depth + 1, path: childPath)
                pathByURL[Self.key(child.url)] = childPath
            }
        }
        entryCount += shown.count - (directories[path]?.children?.count ?? 0)
        directories[path]?.children = shown
        directories[path]?.validator = validator
        directories[path]?.listedAt = listedAt
        return refused
    }

    /// What the latest listing of the directory at `path` showed; nil before it is listed.
    func children(at path: String) -> [WebListingEntry]? {
        directories[path]?.children
    }

    /// The files of a directory's earlier listing that its new listing shows with another size
    /// or date (the same name and URL; only what both listings state is compared): the server
    /// changed them since. Linear in the two listings.
    static func changedFiles(from earlier: [WebListingEntry], to now: [WebListingEntry]) -> [URL] {
        var before: [String: WebListingEntry] = [:]
        for entry in earlier where !entry.isDirectory { before[entry.name] = entry }
        return now.compactMap { entry in
            guard !entry.isDirectory, let old = before[entry.name], old.url == entry.url else { return nil }
            let resized = old.size != nil && entry.size != nil && old.size != entry.size
            let redated = old.modified != nil && entry.modified != nil && old.modified != entry.modified
            return resized || redated ? entry.url : nil
        }
    }

    /// Why a directory's page may not come from `place`, or nil when it may.
    private func refusal(ofPlace place: URL, forPath path: String) -> Refusal? {
        let key = Self.key(place)
        if let shownAt = pathByURL[key], shownAt != path { return .alreadyShown(at: shownAt) }
        return path.isEmpty || isBelowTheRoot(key) ? nil : .outsideTheRoot
    }

    private func isBelowTheRoot(_ key: String) -> Bool {
        rootKeys.contains { key.hasPrefix($0) && key != $0 }
    }

    private func refusal(of child: WebListingEntry, at childPath: String, depth: Int) -> Refusal? {
        let key = Self.key(child.url)
        if let shownAt = pathByURL[key], shownAt != childPath { return .alreadyShown(at: shownAt) }
        guard isBelowTheRoot(key) else { return .outsideTheRoot }
        return depth > maxDepth ? .tooDeep : nil
    }

    /// Drops the directories named `names` in the one at `path`, and everything known below
    /// them, in one pass over the tree however many go.
    private mutating func forget(_ names: Set<String>, below path: String) {
        let prefix = path.isEmpty ? "" : path + "/"
        for (candidate, directory) in directories where candidate.hasPrefix(prefix) && candidate.count > prefix.count {
            let below = candidate.dropFirst(prefix.count)
            guard names.contains(String(below.prefix { $0 != "/" })) else { continue }
            entryCount -= directory.children?.count ?? 0
            directories[candidate] = nil
            pathByURL[Self.key(directory.url)] = nil
        }
    }

    /// What the mount shows: one entry per listed file (its path, URL and the size and time the
    /// listing states), directory by directory in byte order of their paths, each directory's
    /// files in the order of its listing; and every known directory, listed or not.
    func snapshot(source: String) -> (manifest: Manifest, directories: [EntryPath]) {
        var entries: [ManifestEntry] = []
        var shownDirectories: [EntryPath] = []
        for path in directories.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            if !path.isEmpty { shownDirectories.append(EntryPath(trustedComponents: path.split(separator: "/").map(String.init))) }
            entries += directories[path]!.files
        }
        for index in entries.indices { entries[index].line = index + 1 }
        return (Manifest(source: source, entries: entries), shownDirectories)
    }

    static func join(_ path: String, _ name: String) -> String {
        path.isEmpty ? name : path + "/" + name
    }

    /// A directory URL compared without its query, fragment or trailing slash.
    private static func key(_ url: URL) -> String {
        var components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        components?.query = nil
        components?.fragment = nil
        var text = components?.string ?? url.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        return text + "/"
    }
}
