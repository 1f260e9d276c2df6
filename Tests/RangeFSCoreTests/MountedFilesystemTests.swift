import FaultServer
import Foundation
import Testing
@testable import RangeFSCore

/// The filesystem façade driven without a mount, against a real server on loopback.
@Suite("Mounted filesystem")
struct MountedFilesystemTests {
    static let video = Array((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
    static let notes = Array("remote notes\n".utf8)

    static func harness(ownership: FileOwnership = FileOwnership()) throws -> FilesystemHarness {
        try FilesystemHarness(files: ["video.bin": video, "notes.txt": notes],
                              paths: [("media/video.bin", "video.bin"), ("notes.txt", "notes.txt"), ("gone.bin", "missing.bin")],
                              ownership: ownership)
    }

    @Test func lookupsAnswerNamesSizesAndModesOrNoSuchEntry() throws {
        let fs = try Self.harness(ownership: FileOwnership(uid: 1234, gid: 5678, umask: 0o027))
        let media = try #require(try fs.lookup("media").value)
        #expect(media.isDirectory && media.mode == S_IFDIR | 0o550 && media.linkCount == 2)
        #expect(media.uid == 1234 && media.gid == 5678)
        let video = try #require(try fs.lookup("video.bin", in: media.inode).value)
        #expect(video.mode == S_IFREG | 0o440 && video.size == UInt64(Self.video.count) && video.blocks == (UInt64(Self.video.count) + 511) / 512)
        #expect(video.inode == fs.inode("media/video.bin"))
        #expect(try fs.attributes(video.inode).value == video)
        #expect(try fs.lookup("nothing-here").error?.errno == ENOENT)
        #expect(try fs.attributes(999_999).error?.errno == ENOENT)
    }

    @Test func aFailedSizeProbeIsEIOWithTheServersAnswerAsItsCause() throws {
        let fs = try Self.harness()
        let error = try #require(try fs.lookup("gone.bin").error)
        #expect(error.errno == EIO)
        guard case .fetch(let fetch) = error.cause else { Issue.record("cause: \(error.cause)"); return }
        #expect(fetch.cause as? RemoteError == .status(404))
        #expect(error.description.contains("missing.bin") && error.description.contains("404"))
    }

    @Test func openReadAndReleaseThroughTheHandleTable() throws {
        let fs = try Self.harness()
        let inode = fs.inode("media/video.bin")
        let first = try #require(try fs.open(inode).value)
        let second = try #require(try fs.open(inode).value)
        #expect(first.handle != 0 && second.handle != first.handle)
        #expect(first.readPath == .daemon(keepCache: false), "nothing cached yet: the kernel must not keep pages")
        #expect(fs.filesystem.openHandleCount == 2)
        #expect(try fs.read(first.handle, offset: 100_000, size: 4096).value == Array(Self.video[100_000..<104_096]))
        #expect(try fs.read(second.handle, offset: 2_999_990, size: 4096).value == Array(Self.video[2_999_990...]))
        #expect(try fs.read(first.handle, offset: -1, size: 10).error?.errno == EINVAL)

        #expect(fs.filesystem.closeHandle(first.handle).value != nil)
        #expect(fs.filesystem.closeHandle(first.handle).error?.errno == EBADF, "closed twice")
        #expect(try fs.read(first.handle, offset: 0, size: 10).error?.errno == EBADF, "read on a closed handle")
        #expect(try fs.read(second.handle, offset: 0, size: 10).value == Array(Self.video[0..<10]))
        #expect(fs.filesystem.closeHandle(second.handle).value != nil)
        #expect(fs.filesystem.openHandleCount == 0)
    }

    @Test func aHandleKeepsItsFileFromEvictionUntilReleased() throws {
        let fs = try Self.harness()
        let opened = try #require(try fs.open(fs.inode("notes.txt")).value)
        #expect(try fs.read(opened.handle, offset: 0, size: 100).value == Self.notes)
        // Complete, and its transfer ended (on a loaded machine its end may come a while after
        // its last byte): from here only the open handle keeps it from eviction.
        #expect(FilesystemHarness.eventually {
            fs.catalog.knownFile(forEntry: 1).map { $0.isComplete && $0.snapshot.activeTransfers == 0 } == true
        })
        #expect(fs.catalog.evict(entries: [1]) == ["notes.txt"], "an open file is not evicted")
        // What the adapter does when the reply to an open cannot be delivered.
        #expect(fs.filesystem.closeHandle(opened.handle).value != nil)
        #expect(fs.catalog.evict(entries: [1]) == [], "the closed file is evicted")
        #expect(fs.catalog.knownFile(forEntry: 1)?.snapshot.cachedBytes == 0)
    }

    @Test func openRefusesDirectoriesWritesAndUnknownInodes() throws {
        let fs = try Self.harness()
        #expect(try fs.open(fs.inode("media")).error?.errno == EISDIR)
        #expect(try fs.open(fs.inode("notes.txt"), flags: O_WRONLY).error?.errno == EROFS)
        #expect(try fs.open(fs.inode("notes.txt"), flags: O_RDWR).error?.errno == EROFS)
        #expect(try fs.open(424_242).error?.errno == ENOENT)
        #expect(fs.filesystem.openHandleCount == 0)
    }

    @Test func directoriesListDotsThenChildrenFromAnyOffset() throws {
        let fs = try Self.harness()
        let root = fs.filesystem
        #expect(try fs.openDirectory(Namespace.rootInode).value != nil)
        #expect(try fs.openDirectory(fs.inode("notes.txt")).error?.errno == ENOTDIR)
        #expect(try fs.openDirectory(777_777).error?.errno == ENOENT)
        let listing = try #require(root.listDirectory(Namespace.rootInode).value)
        #expect(listing.map(\.name) == [".", "..", "gone.bin", "media", "notes.txt"])
        #expect(listing.map(\.nextOffset) == [1, 2, 3, 4, 5])
        #expect(listing[1].inode == Namespace.rootInode, "the root is its own parent")
        #expect(listing.names(from: 3).map(\.name) == ["media", "notes.txt"])
        #expect(listing.names(from: 5).isEmpty && listing.names(from: 99).isEmpty)
        #expect(listing.names(from: -4).count == 5)
        let media = try #require(root.listDirectory(fs.inode("media")).value)
        #expect(media.map(\.name) == [".", "..", "video.bin"] && media[1].inode == Namespace.rootInode)
        #expect(media[2].isDirectory == false && media[0].isDirectory)
        #expect(root.listDirectory(fs.inode("notes.txt")).error?.errno == ENOTDIR)
    }

    @Test func extendedAttributesGiveStateProgressAndTheBufferProtocol() throws {
        let fs = try Self.harness()
        let inode = fs.inode("media/video.bin")
        let filesystem = fs.filesystem
        func text(_ name: String) -> String? {
            filesystem.attribute(named: name, of: inode, bufferSize: 4096).value.flatMap {
                if case .bytes(let bytes) = $0 { return String(decoding: bytes, as: UTF8.self) }
                return nil
            }
        }
        #expect(text("user.rangefs.state") == "remote")
        #expect(text("user.rangefs.progress") == nil, "no progress before the size is known")
        let opened = try #require(try fs.open(inode).value)
        _ = try fs.read(opened.handle, offset: 0, size: 1)
        #expect(FilesystemHarness.eventually { text("user.rangefs.state") == "partial" })
        // Read-ahead may still be arriving: compare once it has.
        #expect(FilesystemHarness.eventually { fs.catalog.knownFile(forEntry: 0)?.snapshot.activeTransfers == 0 })
        let cached = try #require(text("user.rangefs.cached").flatMap(UInt64.init))
        #expect(cached > 0 && cached < UInt64(Self.video.count))
        #expect(text("user.rangefs.progress") == String(format: "%.1f", Double(cached) * 100 / Double(Self.video.count)))
        #expect(text("user.rangefs.url") == fs.server.url("video.bin").absoluteString)
        filesystem.closeHandle(opened.handle)

        #expect(filesystem.attribute(named: "user.rangefs.url", of: inode, bufferSize: 0).value == .size(fs.server.url("video.bin").absoluteString.utf8.count))
        #expect(filesystem.attribute(named: "user.rangefs.url", of: inode, bufferSize: 5).error?.errno == ERANGE)
        #expect(filesystem.attribute(named: "security.selinux", of: inode, bufferSize: 100).error?.errno == EOPNOTSUPP)
        #expect(filesystem.attribute(named: "system.posix_acl_access", of: inode, bufferSize: 100).error?.errno == EOPNOTSUPP)
        #expect(filesystem.attribute(named: "user.other", of: inode, bufferSize: 100).error?.errno == ENODATA)
        #expect(filesystem.attribute(named: "user.rangefs.error", of: inode, bufferSize: 100).error?.errno == ENODATA)
        #expect(filesystem.attribute(named: "user.rangefs.url", of: 888_888, bufferSize: 100).error?.errno == ENOENT)

        let names = "user.rangefs.cached\0user.rangefs.progress\0user.rangefs.state\0user.rangefs.url\0"
        #expect(filesystem.attributeNames(of: inode, bufferSize: 0).value == .size(names.utf8.count))
        #expect(filesystem.attributeNames(of: inode, bufferSize: 1000).value == .bytes(Array(names.utf8)))
        #expect(filesystem.attributeNames(of: inode, bufferSize: 10).error?.errno == ERANGE)
        #expect(filesystem.attributeNames(of: fs.inode("media"), bufferSize: 100).value == .bytes([]))
        let root = filesystem.attributeNames(of: Namespace.rootInode, bufferSize: 1000).value
        #expect(root == .bytes(Array("user.rangefs.control\0user.rangefs.pid\0".utf8)))
        #expect(filesystem.attribute(named: "user.rangefs.pid", of: Namespace.rootInode, bufferSize: 100).value == .bytes(Array(String(getpid()).utf8)))
    }

    @Test func aFailedFileShowsItsErrorAttribute() throws {
        let fs = try Self.harness()
        _ = try fs.lookup("gone.bin")
        let inode = fs.inode("gone.bin")
        #expect(fs.filesystem.attribute(named: "user.rangefs.state", of: inode, bufferSize: 100).value == .bytes(Array("failed".utf8)))
        guard case .bytes(let bytes)? = fs.filesystem.attribute(named: "user.rangefs.error", of: inode, bufferSize: 1000).value else {
            Issue.record("no user.rangefs.error"); return
        }
        #expect(String(decoding: bytes, as: UTF8.self).contains("404"))
    }

    @Test func totalsCountNodesAndKnownBytes() throws {
        let fs = try Self.harness()
        #expect(fs.filesystem.totals == FilesystemTotals(blockSize: 4096, blocks: 0, files: 5, maximumNameLength: 255))
        _ = try fs.lookup("notes.txt")
        _ = try fs.lookup("video.bin", in: fs.inode("media"))
        #expect(fs.filesystem.totals.blocks == (UInt64(Self.notes.count + Self.video.count) + 4095) / 4096)
    }
}
