/// The open file handles, by the number the kernel is given (`fuse_file_info.fh`). Numbers are
/// never reused within a mount, so a stale number cannot reach another file's handle.
struct OpenHandleTable<Handle> {
    private var handles: [UInt64: Handle] = [:]
    private var lastNumber: UInt64 = 0

    var count: Int { handles.count }

    /// Adds `handle` and returns its number (never 0: libfuse treats 0 as "no handle").
    mutating func insert(_ handle: Handle) -> UInt64 {
        lastNumber += 1
        handles[lastNumber] = handle
        return lastNumber
    }

    subscript(number: UInt64) -> Handle? {
        handles[number]
    }

    /// The handles `isWanted` picks, in no order.
    func filter(_ isWanted: (Handle) -> Bool) -> [Handle] {
        handles.values.filter(isWanted)
    }

    /// Takes the handle out; nil when the number is unknown or released already.
    mutating func remove(_ number: UInt64) -> Handle? {
        handles.removeValue(forKey: number)
    }
}
