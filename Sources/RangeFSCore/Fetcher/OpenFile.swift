import Synchronization

/// One open file handle: the file it reads, its reader's read-ahead window and, for the first
/// reader of a file, what its reads teach about the heads and tails of its type.
///
/// A handle that has been given no byte yet follows its file to the server's new version when
/// the one it opened turns out to have changed: it has seen nothing of the old one to mix with
/// the new. Once it has bytes, a change fails its reads (`FetchError.Reason.remoteChanged`), as
/// does a new version shorter than the one opened: the kernel keeps the length it was told at
/// the open, and fills a short read up to it with zeros where the change also made it forget
/// the file's attributes (it then drops the length a short read implies).
public final class OpenFile: Sendable {
    /// The version read, and whether any read was answered from it. Held only to read or
    /// replace these; reads and callbacks run after it is released.
    private struct Reading {
        var file: CachedFile
        var answered = false
    }

    private let reading: Mutex<Reading>
    /// A leaf lock, as `reading` is: held only to size the next read's read-ahead.
    private let readAhead = Mutex(ReadAheadWindow())
    private let firstScan: FirstScanWatch?
    /// Finds the entry's file again (its new version, once the catalog forgot the old one).
    private let reopen: (@Sendable (@escaping @Sendable (Result<CachedFile, FetchError>) -> Void) -> Void)?
    private let onClose: @Sendable () -> Void

    public var file: CachedFile { reading.withLock { $0.file } }

    init(file: CachedFile, firstScan: FirstScanWatch? = nil,
         reopen: (@Sendable (@escaping @Sendable (Result<CachedFile, FetchError>) -> Void) -> Void)? = nil,
         onClose: @escaping @Sendable () -> Void) {
        reading = Mutex(Reading(file: file))
        self.firstScan = firstScan
        self.reopen = reopen
        self.onClose = onClose
        file.opened()
    }

    public func read(offset: UInt64, length: UInt64, completion: @escaping ReadCompletion) {
        read(offset: offset, length: length, mayFollowChange: true, completion: completion)
    }

    private func read(offset: UInt64, length: UInt64, mayFollowChange: Bool, completion: @escaping ReadCompletion) {
        let file = self.file
        let bytes = file.layout.clampedRead(offset: offset, length: length)
        firstScan?.saw(bytes)
        let window = readAhead.withLock { $0.advise(read: bytes) }
        file.read(bytes, readAhead: window) { [self] result in
            switch result {
            case .success:
                reading.withLock { $0.answered = true }
                completion(result)
            case .failure(let error):
                guard mayFollowChange, error.reason.isCuredByReopening, let reopen,
                      !reading.withLock({ $0.answered }) else { return completion(result) }
                reopen { [self] reopened in
                    guard case .success(let newVersion) = reopened, switchTo(newVersion, from: file) else {
                        return completion(result)
                    }
                    read(offset: offset, length: length, mayFollowChange: false, completion: completion)
                }
            }
        }
    }

    /// Reads `newVersion` from now on, unless a read was answered from `old` meanwhile (or
    /// another read switched first, which is as good).
    private func switchTo(_ newVersion: CachedFile, from old: CachedFile) -> Bool {
        guard newVersion !== old, newVersion.layout.fileSize >= old.layout.fileSize else { return false }
        let switched = reading.withLock { reading -> Bool? in
            guard !reading.answered else { return nil }
            guard reading.file === old else { return false }
            reading.file = newVersion
            return true
        }
        guard let switched else { return false }
        if switched {
            newVersion.opened()
            old.handleClosed()
        }
        return true
    }

    public func close() {
        firstScan?.handleClosed()
        file.handleClosed()
        onClose()
    }
}
