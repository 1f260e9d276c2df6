import CFusePassthrough
import Foundation
import Logging
import RangeFSCore
import Synchronization

/// Lets the kernel read complete files straight from their cache files (FUSE passthrough:
/// Linux 6.9 or later, and CAP_SYS_ADMIN), so a warm read costs no trip through this process.
/// Every other open keeps the usual read path.
final class KernelPassthrough: Sendable {
    private let modes = Mutex(KernelReadModes())
    /// Cleared the first time the kernel refuses a backing file: it would refuse them all.
    private let usable = Atomic<Bool>(true)
    private let logger: Logger

    init(logger: Logger) {
        self.logger = logger
    }

    /// How the kernel is to read a handle being opened on `inode`.
    func mode(forOpening inode: InodeNumber, of file: CachedFile) -> KernelReadMode {
        let complete = file.isComplete
        return modes.withLock { modes in
            modes.open(inode: inode, complete: complete) { self.backingID(for: file) }
        }
    }

    /// A handle closed; the backing file goes once the inode's last passthrough handle has.
    func released(inode: InodeNumber, mode: KernelReadMode) {
        if let backingID = modes.withLock({ $0.release(inode: inode, mode: mode) }) {
            rangefs_passthrough_unregister(backingID)
        }
    }

    private func backingID(for file: CachedFile) -> Int32? {
        guard usable.load(ordering: .relaxed), rangefs_passthrough_enabled(),
              let descriptor = file.openCompleteData() else { return nil }
        defer { close(descriptor) }
        let backingID = rangefs_passthrough_register(descriptor)
        guard backingID > 0 else {
            if usable.exchange(false, ordering: .relaxed) {
                let reason = String(cString: strerror(-backingID))
                logger.notice("complete files are read through rangefs, not passed through by the kernel: \(reason)")
            }
            return nil
        }
        return backingID
    }
}

/// What `fuse_file_info.fh` points at: an open file and how the kernel reads it.
final class FuseOpenHandle: Sendable {
    let file: OpenFile
    let inode: InodeNumber
    let mode: KernelReadMode

    init(file: OpenFile, inode: InodeNumber, mode: KernelReadMode) {
        self.file = file
        self.inode = inode
        self.mode = mode
    }
}
