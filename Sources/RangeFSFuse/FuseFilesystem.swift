import CFuse
import Logging
import RangeFSCore

/// Translates each kernel request into one call on the mounted filesystem, and its answer into
/// the reply. It decides nothing: the answers, their errnos and the handles are the core's.
final class FuseFilesystem: Sendable {
    let core: MountedFilesystem
    let logger: Logger

    init(core: MountedFilesystem, logger: Logger) {
        self.core = core
        self.logger = logger
    }

    func lookup(_ request: FuseRequest, parent: InodeNumber, name: String) {
        core.lookup(parent: parent, name: name) { request.reply(entry: $0, timeout: self.core.attributeTimeout) }
    }

    func getattr(_ request: FuseRequest, inode: InodeNumber) {
        core.attributes(of: inode) { request.reply(attributes: $0, timeout: self.core.attributeTimeout) }
    }

    func opendir(_ request: FuseRequest, inode: InodeNumber, info: fuse_file_info) {
        core.openDirectory(inode) { request.reply(openDirectory: $0, info: info) }
    }

    func readdir(_ request: FuseRequest, inode: InodeNumber, size: Int, offset: Int) {
        request.reply(names: core.listDirectory(inode).map { $0.names(from: offset) }, bufferSize: size)
    }

    func open(_ request: FuseRequest, inode: InodeNumber, info: fuse_file_info) {
        core.open(inode, flags: info.flags) { result in
            switch result {
            case .success(let opened):
                // An open interrupted meanwhile takes no reply: its handle is closed here, as
                // libfuse's high-level layer does, or the file would count as open for ever.
                guard !request.reply(open: opened, info: info) else { return }
                self.logger.debug("open of inode \(inode) was interrupted; its handle is closed")
                self.core.closeHandle(opened.handle)
            case .failure(let error):
                request.reply(error: error)
            }
        }
    }

    func read(_ request: FuseRequest, size: Int, offset: Int64, info: fuse_file_info) {
        core.read(handle: info.fh, offset: offset, size: size) { request.reply(read: $0) }
    }

    func release(_ request: FuseRequest, info: fuse_file_info) {
        request.reply(core.closeHandle(info.fh))
    }

    func getxattr(_ request: FuseRequest, inode: InodeNumber, name: String, size: Int) {
        request.reply(attribute: core.attribute(named: name, of: inode, bufferSize: size))
    }

    func listxattr(_ request: FuseRequest, inode: InodeNumber, size: Int) {
        request.reply(attribute: core.attributeNames(of: inode, bufferSize: size))
    }

    func statfs(_ request: FuseRequest) {
        request.reply(statfs: core.totals)
    }
}
