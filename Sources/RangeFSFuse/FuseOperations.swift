import CFuse
import Foundation
import RangeFSCore

// The libfuse low-level callbacks. Each one finds the filesystem through the session's
// user data and hands the request on; replies that wait for the network come later from
// another thread, so no worker thread waits with them.

private func filesystem(_ request: fuse_req_t?) -> FuseFilesystem {
    Unmanaged<FuseFilesystem>.fromOpaque(fuse_req_userdata(request)!).takeUnretainedValue()
}

private func fileInfo(_ pointer: UnsafeMutablePointer<fuse_file_info>?) -> fuse_file_info {
    pointer?.pointee ?? rangefs_file_info_zero()
}

private func readOnly(_ request: fuse_req_t?) {
    fuse_reply_err(request, EROFS)
}

func makeLowLevelOperations() -> fuse_lowlevel_ops {
    var ops = fuse_lowlevel_ops()
    ops.`init` = { _, connection in
        if let connection { rangefs_conn_want_splice(connection) }
    }
    ops.lookup = { request, parent, name in
        filesystem(request).lookup(FuseRequest(raw: request!), parent: parent, name: String(cString: name!))
    }
    ops.getattr = { request, inode, _ in
        filesystem(request).getattr(FuseRequest(raw: request!), inode: inode)
    }
    ops.opendir = { request, inode, info in
        filesystem(request).opendir(FuseRequest(raw: request!), inode: inode, info: fileInfo(info))
    }
    ops.readdir = { request, inode, size, offset, _ in
        filesystem(request).readdir(FuseRequest(raw: request!), inode: inode, size: size, offset: Int(offset))
    }
    ops.releasedir = { request, _, _ in
        fuse_reply_err(request, 0)
    }
    ops.open = { request, inode, info in
        filesystem(request).open(FuseRequest(raw: request!), inode: inode, info: fileInfo(info))
    }
    ops.read = { request, _, size, offset, info in
        filesystem(request).read(FuseRequest(raw: request!), size: size, offset: Int64(offset), info: fileInfo(info))
    }
    ops.release = { request, _, info in
        filesystem(request).release(FuseRequest(raw: request!), info: fileInfo(info))
    }
    ops.getxattr = { request, inode, name, size in
        filesystem(request).getxattr(FuseRequest(raw: request!), inode: inode, name: String(cString: name!), size: size)
    }
    ops.listxattr = { request, inode, size in
        filesystem(request).listxattr(FuseRequest(raw: request!), inode: inode, size: size)
    }
    ops.statfs = { request, _ in
        filesystem(request).statfs(FuseRequest(raw: request!))
    }
    // Everything that would change the tree or a file: the mount is read-only.
    ops.setattr = { request, _, _, _, _ in readOnly(request) }
    ops.mknod = { request, _, _, _, _ in readOnly(request) }
    ops.mkdir = { request, _, _, _ in readOnly(request) }
    ops.unlink = { request, _, _ in readOnly(request) }
    ops.rmdir = { request, _, _ in readOnly(request) }
    ops.symlink = { request, _, _, _ in readOnly(request) }
    ops.rename = { request, _, _, _, _, _ in readOnly(request) }
    ops.link = { request, _, _, _ in readOnly(request) }
    ops.write = { request, _, _, _, _, _ in readOnly(request) }
    ops.create = { request, _, _, _, _ in readOnly(request) }
    ops.setxattr = { request, _, _, _, _, _ in readOnly(request) }
    ops.removexattr = { request, _, _ in readOnly(request) }
    return ops
}
