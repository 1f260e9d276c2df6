import CFuse
import Foundation
import RangeFSCore

// The libfuse low-level callbacks. Each one finds the filesystem through the session's
// user data and hands the request on; replies that wait for the network come later from
// another thread, so no worker thread waits with them.

/// Hands `raw` to `body` with the filesystem the session serves.
private func serve(_ raw: fuse_req_t?, _ body: (FuseFilesystem, FuseRequest) -> Void) {
    // The session holds the filesystem retained until it is destroyed, after the last request.
    let filesystem = Unmanaged<FuseFilesystem>.fromOpaque(fuse_req_userdata(raw)!).takeUnretainedValue()
    body(filesystem, FuseRequest(raw: raw!, logger: filesystem.logger))
}

private func fileInfo(_ pointer: UnsafeMutablePointer<fuse_file_info>?) -> fuse_file_info {
    pointer?.pointee ?? rangefs_file_info_zero()
}

private func readOnly(_ raw: fuse_req_t?) {
    serve(raw) { _, request in request.reply(error: FilesystemError(.readOnly)) }
}

func makeLowLevelOperations() -> fuse_lowlevel_ops {
    var ops = fuse_lowlevel_ops()
    ops.`init` = { _, connection in
        if let connection { rangefs_conn_want_splice(connection) }
    }
    ops.lookup = { raw, parent, name in
        serve(raw) { $0.lookup($1, parent: parent, name: String(cString: name!)) }
    }
    ops.getattr = { raw, inode, _ in
        serve(raw) { $0.getattr($1, inode: inode) }
    }
    ops.opendir = { raw, inode, info in
        serve(raw) { $0.opendir($1, inode: inode, info: fileInfo(info)) }
    }
    ops.readdir = { raw, inode, size, offset, _ in
        serve(raw) { $0.readdir($1, inode: inode, size: size, offset: Int(offset)) }
    }
    ops.releasedir = { raw, _, _ in
        serve(raw) { _, request in request.reply(.success(())) }
    }
    ops.open = { raw, inode, info in
        serve(raw) { $0.open($1, inode: inode, info: fileInfo(info)) }
    }
    ops.read = { raw, _, size, offset, info in
        serve(raw) { $0.read($1, size: size, offset: Int64(offset), info: fileInfo(info)) }
    }
    ops.release = { raw, _, info in
        serve(raw) { $0.release($1, info: fileInfo(info)) }
    }
    ops.getxattr = { raw, inode, name, size in
        serve(raw) { $0.getxattr($1, inode: inode, name: String(cString: name!), size: size) }
    }
    ops.listxattr = { raw, inode, size in
        serve(raw) { $0.listxattr($1, inode: inode, size: size) }
    }
    ops.statfs = { raw, _ in
        serve(raw) { $0.statfs($1) }
    }
    // Everything that would change the tree or a file: the mount is read-only.
    ops.setattr = { raw, _, _, _, _ in readOnly(raw) }
    ops.mknod = { raw, _, _, _, _ in readOnly(raw) }
    ops.mkdir = { raw, _, _, _ in readOnly(raw) }
    ops.unlink = { raw, _, _ in readOnly(raw) }
    ops.rmdir = { raw, _, _ in readOnly(raw) }
    ops.symlink = { raw, _, _, _ in readOnly(raw) }
    ops.rename = { raw, _, _, _, _, _ in readOnly(raw) }
    ops.link = { raw, _, _, _ in readOnly(raw) }
    ops.write = { raw, _, _, _, _, _ in readOnly(raw) }
    ops.create = { raw, _, _, _, _ in readOnly(raw) }
    ops.setxattr = { raw, _, _, _, _, _ in readOnly(raw) }
    ops.removexattr = { raw, _, _ in readOnly(raw) }
    return ops
}
