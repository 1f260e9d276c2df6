import Testing
@testable import RangeFSCore

@Suite("Listing ahead: the window a walk grows")
struct ListAheadWindowsTests {
    @Test("a look into one directory lists the next four; a walk through its siblings doubles that at each, up to the largest")
    func aWalkDoublesTheWindow() {
        var windows = ListAheadWindows()
        #expect(windows.toListAhead(parent: 1, opened: 0, childCount: 1_000) == 1..<5)
        // The next sibling was listed ahead: a walk. Only what is not listed yet is asked for.
        #expect(windows.toListAhead(parent: 1, opened: 1, childCount: 1_000) == 5..<10)
        #expect(windows.toListAhead(parent: 1, opened: 2, childCount: 1_000) == 10..<19)
        #expect(windows.toListAhead(parent: 1, opened: 3, childCount: 1_000) == 19..<36)
        var opened = 3, end = 36, size = 32
        for _ in 0..<10 {
            opened += 1
            size = min(size * 2, ListAheadWindows.largest)
            let ahead = windows.toListAhead(parent: 1, opened: opened, childCount: 1_000)
            #expect(ahead == end..<max(end, opened + 1 + size))
            end = max(end, opened + 1 + size)
        }
        #expect(size == ListAheadWindows.largest)
        // Never past the last child.
        #expect(windows.toListAhead(parent: 1, opened: 900, childCount: 1_000).upperBound <= 1_000)
    }

    @Test("an open outside what was listed ahead, or back before the last, starts over at four")
    func aJumpStartsOver() {
        var windows = ListAheadWindows()
        _ = windows.toListAhead(parent: 1, opened: 0, childCount: 100)
        _ = windows.toListAhead(parent: 1, opened: 1, childCount: 100)
        #expect(windows.toListAhead(parent: 1, opened: 50, childCount: 100) == 51..<55)
        #expect(windows.toListAhead(parent: 1, opened: 10, childCount: 100) == 11..<15)
        #expect(windows.toListAhead(parent: 1, opened: 98, childCount: 100) == 99..<100)
        #expect(windows.toListAhead(parent: 1, opened: 99, childCount: 100).isEmpty)
    }

    @Test("each parent has its window: a walk down into a child and back keeps the parent's")
    func eachParentItsOwn() {
        var windows = ListAheadWindows()
        _ = windows.toListAhead(parent: 1, opened: 0, childCount: 100)
        #expect(windows.toListAhead(parent: 1, opened: 1, childCount: 100) == 5..<10)
        // Into the child's own subdirectories, then on with the parent's.
        #expect(windows.toListAhead(parent: 7, opened: 0, childCount: 3) == 1..<3)
        #expect(windows.toListAhead(parent: 1, opened: 2, childCount: 100) == 10..<19)
    }

    @Test("only the latest parents are kept")
    func boundedParents() {
        var windows = ListAheadWindows()
        _ = windows.toListAhead(parent: 1, opened: 0, childCount: 100)
        for parent in 2...InodeNumber(ListAheadWindows.parentsKept + 1) {
            _ = windows.toListAhead(parent: parent, opened: 0, childCount: 100)
        }
        // Parent 1's window was dropped: its next open starts over.
        #expect(windows.toListAhead(parent: 1, opened: 1, childCount: 100) == 2..<6)
    }
}
