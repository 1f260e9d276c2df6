import Testing
@testable import RangeFSCore

@Test func completeFileOpensForPassthroughAndSharesOneBackingFile() {
    var modes = KernelReadModes()
    var registered = 0
    let backing = { () -> Int32? in registered += 1; return 7 }
    #expect(modes.open(inode: 5, complete: true, backingFile: backing) == .passthrough(backingID: 7))
    #expect(modes.open(inode: 5, complete: true, backingFile: backing) == .passthrough(backingID: 7))
    #expect(registered == 1)
    #expect(modes.forgetClosedHandle(inode: 5, mode: .passthrough(backingID: 7)) == nil)
    #expect(modes.forgetClosedHandle(inode: 5, mode: .passthrough(backingID: 7)) == 7)
    // Closed for good: the next open registers the file again.
    #expect(modes.open(inode: 5, complete: true, backingFile: backing) == .passthrough(backingID: 7))
    #expect(registered == 2)
}

@Test func incompleteFileUsesThePageCacheAndBlocksPassthroughUntilClosed() {
    var modes = KernelReadModes()
    var asked = false
    #expect(modes.open(inode: 5, complete: false, backingFile: { asked = true; return 7 }) == .cached)
    // The file completed while the first handle is open: the kernel would refuse passthrough.
    #expect(modes.open(inode: 5, complete: true, backingFile: { asked = true; return 7 }) == .cached)
    #expect(!asked)
    #expect(modes.forgetClosedHandle(inode: 5, mode: .cached) == nil)
    #expect(modes.forgetClosedHandle(inode: 5, mode: .cached) == nil)
    #expect(modes.open(inode: 5, complete: true, backingFile: { 9 }) == .passthrough(backingID: 9))
}

@Test func fileDiscardedUnderPassthroughHandlesStaysOnItsBackingFileUntilTheyClose() {
    var modes = KernelReadModes()
    #expect(modes.open(inode: 5, complete: true, backingFile: { 7 }) == .passthrough(backingID: 7))
    // Changed on the server: the kernel still insists on the inode's one backing file.
    #expect(modes.open(inode: 5, complete: false, backingFile: { 8 }) == .passthrough(backingID: 7))
    #expect(modes.forgetClosedHandle(inode: 5, mode: .passthrough(backingID: 7)) == nil)
    #expect(modes.forgetClosedHandle(inode: 5, mode: .passthrough(backingID: 7)) == 7)
    #expect(modes.open(inode: 5, complete: false, backingFile: { 8 }) == .cached)
}

@Test func unavailablePassthroughFallsBackToThePageCache() {
    var modes = KernelReadModes()
    #expect(modes.open(inode: 5, complete: true, backingFile: { nil }) == .cached)
    #expect(modes.open(inode: 6, complete: true, backingFile: { 3 }) == .passthrough(backingID: 3))
    #expect(modes.forgetClosedHandle(inode: 5, mode: .cached) == nil)
}
