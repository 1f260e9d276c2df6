import Foundation
import Logging
import Synchronization

/// Decides for each open handle whether the kernel reads the cache file by itself (FUSE
/// passthrough, for complete files) or sends its reads here, and registers and unregisters the
/// backing files through the kernel link.
final class KernelReadPaths: Sendable {
    /// Held while an inode's first passthrough handle opens and registers its backing file, so
    /// that a second open waits for that id; inside, the `CachedFile`'s state lock is taken (to
    /// open the complete data file). Never taken while holding another lock.
    private let modes = Mutex(KernelReadModes())
    /// Cleared the first time the kernel refuses a backing file: it would refuse them all.
    private let usable = Atomic<Bool>(true)
    private let logger: Logger

    init(logger: Logger) {
        self.logger = logger
    }

    /// How the kernel is to read a handle being opened on `inode`.
    func mode(forOpening inode: InodeNumber, of file: CachedFile, kernel: (any KernelLink)?) -> KernelReadMode {
        let complete = file.isComplete
        return modes.withLock { modes in
            modes.open(inode: inode, complete: complete) { backingID(for: file, kernel: kernel) }
        }
    }

    /// A handle closed; the backing file goes once the inode's last passthrough handle has.
    func handleClosed(inode: InodeNumber, mode: KernelReadMode, kernel: (any KernelLink)?) {
        if let backingID = modes.withLock({ $0.forgetClosedHandle(inode: inode, mode: mode) }) {
            kernel?.unregisterBackingFile(backingID)
        }
    }

    private func backingID(for file: CachedFile, kernel: (any KernelLink)?) -> Int32? {
        guard let kernel, usable.load(ordering: .relaxed), kernel.passesThrough,
              let descriptor = file.openCompleteData() else { return nil }
        defer { close(descriptor) }
        switch kernel.registerBackingFile(descriptor: descriptor) {
        case .success(let backingID):
            return backingID
        case .failure(let refusal):
            if usable.exchange(false, ordering: .relaxed) {
                let reason = String(cString: strerror(refusal.errno))
                logger.notice("complete files are read through rangefs, not passed through by the kernel: \(reason)")
            }
            return nil
        }
    }
}
