/// How many of a directory's next siblings are listed ahead when it is opened, grown as a
/// reader's read-ahead grows. Opening a directory that an earlier open listed ahead is a walk
/// through its siblings (`find`, `du`, `ls -R`): the siblings listed ahead then double, up to
/// `largest`; any other open starts over at `smallest`, so a look into one folder among many
/// lists only a few more.
///
/// Why a walk wants many: the mount shows each listing before its callers go on, and showing
/// the tree costs its size. Listings that arrive together are shown together, so with many in
/// the queue a walk's directories come a hundred to a show, where a few ahead made one show per
/// directory and a walk cost the tree's size times its directories. Pure.
struct ListAheadWindows {
    static let smallest = 4
    static let largest = 256
    /// The parents walked most recently; a walk goes down at most `ListedDirectories.Settings.maxDepth`.
    static let parentsKept = 64

    /// Of one parent: the child opened last, how far its children are listed ahead (positions
    /// below `end`), and the window the next hit doubles.
    private struct Window {
        var parent: InodeNumber
        var lastOpened: Int
        var end: Int
        var size: Int
    }

    /// Most recent last.
    private var windows: [Window] = []

    /// The positions among `parent`'s `childCount` children (files and directories, in the
    /// namespace's order) to list ahead now that the child at `opened` is opened: those not
    /// listed ahead already.
    mutating func toListAhead(parent: InodeNumber, opened: Int, childCount: Int) -> Range<Int> {
        let next = opened + 1
        var window: Window
        if let index = windows.firstIndex(where: { $0.parent == parent }) {
            window = windows.remove(at: index)
        } else {
            window = Window(parent: parent, lastOpened: -1, end: 0, size: 0)
        }
        let listedAhead = window.lastOpened < opened && opened < window.end
        let start: Int
        if listedAhead {
            window.size = min(window.size * 2, Self.largest)
            start = window.end
        } else {
            window.size = Self.smallest
            start = next
        }
        let end = max(start, min(childCount, next + window.size))
        window.lastOpened = opened
        window.end = end
        windows.append(window)
        if windows.count > Self.parentsKept { windows.removeFirst() }
        return start..<end
    }
}
