import Foundation

/// What the kernel must forget when the mount changes under it: the names a refresh removed
/// or pointed elsewhere, and the inodes that show a remote file that changed.
enum KernelForgetting {
    /// The names of `old` that `new` no longer has, or that now lead to another catalog entry or
    /// another kind of node. A directory that stayed is searched further; one that went is
    /// forgotten as a whole by forgetting its name.
    static func staleNames(from old: MountedTree, to new: MountedTree) -> [(parent: InodeNumber, name: String)] {
        var stale: [(parent: InodeNumber, name: String)] = []
        var pending = [Namespace.rootInode]
        while let directory = pending.popLast() {
            for child in old.namespace.children(of: directory) {
                let now = new.namespace.lookup(parent: directory, name: child.name)
                let same = now.map { $0.isDirectory == child.isDirectory && new.catalogIndex(of: $0) == old.catalogIndex(of: child) } ?? false
                if !same {
                    stale.append((directory, child.name))
                } else if child.isDirectory {
                    pending.append(child.inode)
                }
            }
        }
        return stale
    }

    /// The inodes of `tree` whose catalog entry (among `activeEntries` of `entries`) fetches `url`.
    static func inodes(showing url: URL, in tree: MountedTree, entries: [ManifestEntry], activeEntries: [Int]) -> [InodeNumber] {
        // Compared as text: building a URL for each of 100,000 entries would cost far more.
        let changed = SharedPrefixText(url.absoluteString)
        return activeEntries.filter { entries[$0].urlText == changed }.compactMap { tree.inode(of: entries[$0].path) }
    }
}
