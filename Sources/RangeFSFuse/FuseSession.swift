import CFuse
import CFusePassthrough
import Foundation
import Logging
import RangeFSCore

public struct FuseError: Error, CustomStringConvertible {
    public var description: String
}

/// The kernel as the mounted filesystem reaches it outside of replies: invalidations and
/// passthrough backing files. libfuse's notify functions may be called from any thread while
/// the session exists, which is why the session pointer may cross threads; `FuseSession`
/// detaches this before it destroys the session.
struct FuseKernelLink: KernelLink, @unchecked Sendable {
    let session: OpaquePointer

    func invalidate(inode: InodeNumber) {
        _ = fuse_lowlevel_notify_inval_inode(session, fuse_ino_t(inode), 0, 0)
    }

    func invalidate(parent: InodeNumber, name: String) {
        _ = fuse_lowlevel_notify_inval_entry(session, fuse_ino_t(parent), name, name.utf8.count)
    }

    var passesThrough: Bool { rangefs_passthrough_enabled() }

    func registerBackingFile(descriptor: Int32) -> Result<Int32, KernelRefusal> {
        let backingID = rangefs_passthrough_register(descriptor)
        return backingID > 0 ? .success(backingID) : .failure(KernelRefusal(errno: -backingID))
    }

    func unregisterBackingFile(_ backingID: Int32) {
        rangefs_passthrough_unregister(backingID)
    }
}

/// A mounted libfuse session: created and mounted in `init`, served by `run`, torn down after.
/// Used from the one thread that mounts, runs and unmounts.
public final class FuseSession {
    private let session: OpaquePointer
    /// The session's user data, retained until the session is destroyed.
    private let filesystem: Unmanaged<FuseFilesystem>
    private let core: MountedFilesystem
    private var mounted = false

    /// Mounts `filesystem` read-only at `mountpoint`; `options` are extra `-o` mount options.
    /// With `passthrough`, the kernel is offered to read complete files by itself.
    public init(filesystem core: MountedFilesystem, mountpoint: String, options: [String], passthrough: Bool = true,
                debug: Bool = false, logger: Logger) throws {
        var args = rangefs_args_empty()
        defer { fuse_opt_free_args(&args) }
        var argv = ["rangefs", "-o", (["ro", "fsname=rangefs", "subtype=rangefs"] + options).joined(separator: ",")]
        if debug { argv.append("-d") }
        for argument in argv {
            fuse_opt_add_arg(&args, argument)
        }
        var operations = makeLowLevelOperations()
        filesystem = Unmanaged.passRetained(FuseFilesystem(core: core, logger: logger))
        self.core = core
        guard let session = fuse_session_new(&args, &operations, MemoryLayout<fuse_lowlevel_ops>.size,
                                             filesystem.toOpaque()) else {
            filesystem.release()
            throw FuseError(description: "cannot start the filesystem (bad -o option?)")
        }
        self.session = session
        guard fuse_session_mount(session, mountpoint) == 0 else {
            fuse_session_destroy(session)
            filesystem.release()
            throw FuseError(description: "cannot mount at \(mountpoint)")
        }
        mounted = true
        if passthrough {
            // Without the hooks the kernel is never offered passthrough; reads work as before.
            _ = rangefs_passthrough_install(session)
        }
        core.attach(FuseKernelLink(session: session))
    }

    /// Serves requests until unmounted or until SIGINT, SIGTERM or SIGHUP.
    public func run(maxThreads: UInt32 = 16) -> Int32 {
        // A process started in the background by a shell starts with SIGINT ignored, and
        // libfuse leaves ignored signals alone; Ctrl-C must unmount.
        signal(SIGINT, SIG_DFL)
        fuse_set_signal_handlers(session)
        defer { fuse_remove_signal_handlers(session) }
        let config = fuse_loop_cfg_create()
        defer { fuse_loop_cfg_destroy(config) }
        fuse_loop_cfg_set_max_threads(config, maxThreads)
        return rangefs_session_loop_mt(session, config)
    }

    /// Unmounts (if the kernel still has the mount) and frees the session.
    public func close() {
        core.attach(nil)
        if mounted {
            fuse_session_unmount(session)
            mounted = false
        }
        fuse_session_destroy(session)
        filesystem.release()
    }
}
