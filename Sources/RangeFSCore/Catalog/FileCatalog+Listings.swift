import Dispatch

/// Finding sizes ahead of the look-ups that need them. Listing a directory is usually followed
/// by a look-up of every name in it (`ls -l`), and a probe for each in turn would cost a round
/// trip per name.
extension FileCatalog {
    /// A directory with at most this many files has the sizes of all of them found when it is
    /// opened; a larger one only as its files are looked up.
    public static let eagerListingLimit = 256

    /// Names after an unprobed one whose sizes are found ahead of their look-ups.
    public static let lookAheadProbes = 8

    /// A directory is opened for listing. A small one has the sizes of all its files found at
    /// once; a large one (thousands of names) costs no request, so listing its names stays cheap.
    public func directoryOpened(_ directory: InodeNumber, in tree: MountedTree, recentListingTime: Duration) {
        treeWalked(recentListingTime: recentListingTime)
        let children = tree.namespace.children(of: directory)
        guard children.count <= Self.eagerListingLimit else { return }
        discoverSizes(ofEntries: children.compactMap(tree.catalogIndex(of:)))
    }

    /// A program walks the tree (the mount's quickest recent listing took `recentListingTime`).
    /// While it opens no file (`find`, `ls -R`, rsync's listing, a file manager) and its server
    /// is near, background work stands still, heads and tails too: such a walk is bound by the
    /// CPU, which the heads' transfers would take from it. A walk that waits on a distant
    /// server's listings leaves the CPU idle, and the heads fetched meanwhile serve the scan
    /// that usually follows; a scanner opens the files it walks to, and their heads go on too.
    private func treeWalked(recentListingTime: Duration) {
        let policy = environment.policy
        let now = DispatchTime.now().uptimeNanoseconds
        if BackgroundQuiet.isDistant(listingTime: recentListingTime, policy: policy) {
            lastDistantListing.store(now, ordering: .relaxed)
        }
        func since(_ moment: UInt64) -> Duration { .nanoseconds(now &- moment) }
        guard BackgroundQuiet.walkQuiets(sinceLastOpen: since(lastFileOpen.load(ordering: .relaxed)),
                                         sinceLastDistantListing: since(lastDistantListing.load(ordering: .relaxed)),
                                         policy: policy) else { return }
        environment.client.quietBackground(.treeWalk, for: policy.walkQuiet)
    }

    /// A name is looked up. When its size is unknown, probably `ls -l` is walking a directory
    /// too large to probe when opened: the sizes of the next names are found while this one is.
    public func nameLookedUp(_ node: NamespaceNode, in tree: MountedTree, recentListingTime: Duration) {
        treeWalked(recentListingTime: recentListingTime)
        guard let index = tree.catalogIndex(of: node), knownFile(forEntry: index) == nil,
              statedAttributes(ofEntry: index) == nil else { return }
        let next = tree.namespace.siblings(after: node, count: Self.lookAheadProbes)
        discoverSizes(ofEntries: next.compactMap(tree.catalogIndex(of:)))
    }

    /// Starts size discovery, at listing priority, for entries whose names are about to be
    /// looked up. Entries with a known size cost nothing.
    public func discoverSizes(ofEntries indices: some Sequence<Int>) {
        for index in indices where knownFile(forEntry: index) == nil && statedAttributes(ofEntry: index) == nil {
            file(forEntry: index, priority: .listing) { _ in }
        }
    }
}
