import Synchronization

/// One open file handle: the file it reads, its reader's read-ahead window and, for the first
/// reader of a file, what its reads teach about the heads and tails of its type.
public final class OpenFile: Sendable {
    public let file: CachedFile
    private let readAhead = Mutex(ReadAheadWindow())
    private let firstScan: FirstScanWatch?
    private let onClose: @Sendable () -> Void

    init(file: CachedFile, firstScan: FirstScanWatch? = nil, onClose: @escaping @Sendable () -> Void) {
        self.file = file
        self.firstScan = firstScan
        self.onClose = onClose
        file.opened()
    }

    public func read(offset: UInt64, length: UInt64, completion: @escaping ReadCompletion) {
        let bytes = file.layout.clampedRead(offset: offset, length: length)
        firstScan?.saw(bytes)
        let window = readAhead.withLock { $0.advise(read: bytes) }
        file.read(bytes, readAhead: window, completion: completion)
    }

    public func close() {
        firstScan?.handleClosed()
        file.released()
        onClose()
    }
}
