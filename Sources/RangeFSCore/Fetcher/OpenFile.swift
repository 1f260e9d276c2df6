import Synchronization

/// One open file handle: the file it reads and its reader's read-ahead window.
public final class OpenFile: Sendable {
    public let file: CachedFile
    private let readAhead = Mutex(ReadAheadWindow())
    private let onClose: @Sendable () -> Void

    init(file: CachedFile, onClose: @escaping @Sendable () -> Void) {
        self.file = file
        self.onClose = onClose
        file.opened()
    }

    public func read(offset: UInt64, length: UInt64, completion: @escaping ReadCompletion) {
        let bytes = file.layout.clampedRead(offset: offset, length: length)
        let window = readAhead.withLock { $0.advise(read: bytes) }
        file.read(bytes, readAhead: window, completion: completion)
    }

    public func close() {
        file.released()
        onClose()
    }
}
