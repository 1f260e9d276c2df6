import FaultServer
import Foundation
import Testing
@testable import RangeFSCore

/// What the filesystem tells the kernel besides its answers, the errno table and the handle table.
@Suite("Filesystem and kernel")
struct FilesystemKernelTests {
    static let bytes = Array((0..<150_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })

    @Test func errnoTableGivesEachCauseItsErrno() {
        let table: [(FilesystemError.Cause, Int32)] = [
            (.noSuchEntry, ENOENT), (.notADirectory, ENOTDIR), (.isADirectory, EISDIR), (.readOnly, EROFS),
            (.negativeOffset, EINVAL), (.unknownHandle, EBADF), (.attributeNamespaceUnsupported, EOPNOTSUPP),
            (.noSuchAttribute, ENODATA), (.attributeBufferTooSmall(needed: 9), ERANGE),
            (.fetch(FetchError("a", .unmounting)), EIO),
            (.fetch(FetchError("a", .remote(.status(503)))), EIO),
            (.fetch(FetchError("a", .cache(CacheError("No space left on device", errorNumber: ENOSPC)))), EIO),
            (.fetch(FetchError("a", .remoteChanged("etag differs"))), EIO),
            (.fetch(FetchError("a", .rejected("sha256 mismatch"))), EIO),
            (.fetch(FetchError("a", .timedOut(.seconds(120)))), EIO),
        ]
        for (cause, errno) in table {
            #expect(FilesystemError(cause).errno == errno, "\(cause)")
        }
    }

    @Test func aFetchErrorKeepsItsCauseAsAValueAndItsURLWithoutCredentials() throws {
        let url = try #require(URL(string: "http://user:secret@127.0.0.1:8080/film.mkv"))
        let error = FetchError(url, .remote(.protocolViolation("short body")))
        #expect(error.cause as? RemoteError == .protocolViolation("short body"))
        #expect(error.description.contains("film.mkv") && error.description.contains("short body"))
        #expect(!error.description.contains("secret"))
        #expect(FilesystemError(.fetch(error)).description == error.description)
    }

    /// Only a reason that opening the file again cures says so; the others say what happened.
    @Test func aFetchErrorAdvisesReopeningOnlyWhenThatHelps() {
        #expect(FetchError("f", .remoteChanged("etag differs")).description
            == "f: remote file changed (etag differs); open the file again")
        #expect(FetchError("f", .remote(.changed("412"))).description.hasSuffix("; open the file again"))
        #expect(FetchError("f", .rejected("sha256 mismatch")).description == "f: sha256 mismatch")
        #expect(FetchError("f", .timedOut(.seconds(120))).description == "f: timed out after 120.0 seconds")
        #expect(FetchError("f", .cache(CacheError("disk full"))).cause as? CacheError != nil)
        #expect(FetchError("f", .unmounting).cause == nil)
    }

    @Test func handleNumbersStartAtOneAndAreNeverReused() {
        var table = OpenHandleTable<String>()
        let a = table.insert("a")
        let b = table.insert("b")
        #expect(a == 1 && b == 2 && table.count == 2)
        #expect(table.remove(a) == "a" && table.remove(a) == nil)
        let c = table.insert("c")
        #expect(c == 3, "a released number is not handed out again")
        #expect(table[b] == "b" && table[a] == nil && table[0] == nil && table.count == 2)
    }

    @Test func treeDiffNamesWhatIsGoneOrLeadsElsewhere() throws {
        func tree(_ paths: [String], indices: [Int]) throws -> MountedTree {
            let entries = try paths.enumerated().map { line, path in
                ManifestEntry(path: try EntryPath(validating: path), url: URL(string: "http://127.0.0.1/\(path)")!, line: line + 1)
            }
            return MountedTree(manifest: Manifest(source: "test", entries: entries), catalogIndices: indices)
        }
        let old = try tree(["a/x.bin", "a/y.bin", "a/deep/z.bin", "b/w.bin", "c.bin", "same.bin"], indices: [0, 1, 2, 3, 4, 5])
        // a/x.bin and same.bin stay; a/y.bin is another entry now; b is a file; c.bin is gone; d.bin is new.
        let new = try tree(["a/x.bin", "a/y.bin", "a/deep/z.bin", "b", "same.bin", "d.bin"], indices: [0, 6, 2, 7, 5, 8])
        let a = try #require(old.inode(of: EntryPath(validating: "a")))
        let stale = KernelForgetting.staleNames(from: old, to: new).map { "\($0.parent)/\($0.name)" }.sorted()
        #expect(stale == ["\(Namespace.rootInode)/b", "\(Namespace.rootInode)/c.bin", "\(a)/y.bin"].sorted())
        #expect(KernelForgetting.staleNames(from: old, to: old).isEmpty)
    }

    @Test func refreshTellsTheKernelToForgetStaleNames() throws {
        let fs = try FilesystemHarness(files: ["one.bin": Self.bytes], paths: [("dir/one.bin", "one.bin"), ("two.bin", "one.bin")])
        let kernel = RecordingKernel()
        fs.filesystem.attach(kernel)
        let entries = [ManifestEntry(path: try EntryPath(validating: "dir/one.bin"), url: fs.server.url("one.bin"), line: 1)]
        let smaller = MountedTree(manifest: Manifest(source: "test", entries: entries), catalogIndices: [0])
        fs.filesystem.replaceTree(with: smaller)
        #expect(FilesystemHarness.eventually { kernel.recorded.names == ["\(Namespace.rootInode)/two.bin"] }, "\(kernel.recorded.names)")
        #expect(try fs.lookup("two.bin").error?.errno == ENOENT, "the new tree answers")
        #expect(try fs.lookup("dir").value?.isDirectory == true)
    }

    @Test func aRemoteChangeMakesTheKernelForgetEveryInodeShowingTheFile() throws {
        let fs = try FilesystemHarness(files: ["one.bin": Self.bytes, "other.bin": Self.bytes],
                                       paths: [("a.bin", "one.bin"), ("dir/alias.bin", "one.bin"), ("other.bin", "other.bin")])
        let kernel = RecordingKernel()
        fs.filesystem.attach(kernel)
        let opened = try #require(try fs.open(fs.inode("a.bin")).value)
        #expect(try fs.read(opened.handle, offset: 0, size: 4096).value == Array(Self.bytes[0..<4096]))
        fs.filesystem.closeHandle(opened.handle)
        fs.server.publish("one.bin", bytes: Self.bytes + [1, 2, 3])
        let (_, problems) = fs.catalog.verify(timeout: .seconds(30))
        // Both entries of the URL are reported.
        #expect(problems.count == 2 && problems.allSatisfy { $0.contains("changed") }, "\(problems)")
        let expected = [fs.inode("a.bin"), fs.inode("dir/alias.bin")].sorted()
        #expect(FilesystemHarness.eventually { kernel.recorded.inodes.sorted() == expected }, "\(kernel.recorded.inodes)")
        #expect(try fs.lookup("a.bin").value?.size == UInt64(Self.bytes.count + 3), "the new size after the change")
    }

    /// The kernel keeps one size per inode and ends reads there by itself: while the handles
    /// open on a file all read a version the server has since cut short, that version's size is
    /// what it is told, so their reads come here (and fail) rather than end early; the last close
    /// makes it forget, and the new size is told from then on.
    @Test func handlesOfAShrunkVersionKeepItsSizeUntilTheLastCloses() throws {
        let fs = try FilesystemHarness(files: ["s.bin": Self.bytes], paths: [("s.bin", "s.bin")])
        let kernel = RecordingKernel()
        fs.filesystem.attach(kernel)
        let inode = fs.inode("s.bin")
        let opened = try #require(try fs.open(inode).value)
        #expect(try fs.read(opened.handle, offset: 0, size: 4096).value == Array(Self.bytes[0..<4096]))
        let shorter = Array(Self.bytes[0..<1000].reversed())
        fs.server.publish("s.bin", bytes: shorter)
        let (_, problems) = fs.catalog.verify(timeout: .seconds(30))
        #expect(problems.count == 1 && problems.allSatisfy { $0.contains("changed") }, "\(problems)")
        #expect(FilesystemHarness.eventually { kernel.recorded.inodes.contains(inode) }, "the change makes the kernel forget")
        #expect(try fs.attributes(inode).value?.size == UInt64(Self.bytes.count), "the size the open handle reads")
        #expect(try fs.read(opened.handle, offset: Int64(Self.bytes.count - 4096), size: 4096).value == nil,
                "a read of the old version past the new end fails")

        let forgottenBefore = kernel.recorded.inodes.filter { $0 == inode }.count
        fs.filesystem.closeHandle(opened.handle)
        #expect(FilesystemHarness.eventually { kernel.recorded.inodes.filter { $0 == inode }.count > forgottenBefore },
                "the last close makes the kernel forget again")
        #expect(try fs.attributes(inode).value?.size == UInt64(shorter.count), "the new size once nothing reads the old")
    }

    @Test func completeFilesArePassedThroughOnOneBackingFileReleasedWithTheLastHandle() throws {
        let fs = try FilesystemHarness(files: ["one.bin": Self.bytes], paths: [("one.bin", "one.bin")])
        let kernel = RecordingKernel()
        fs.filesystem.attach(kernel)
        let inode = fs.inode("one.bin")
        let reader = try #require(try fs.open(inode).value)
        #expect(reader.readPath == .daemon(keepCache: false))
        #expect(try fs.read(reader.handle, offset: 0, size: Self.bytes.count).value == Self.bytes)
        fs.filesystem.closeHandle(reader.handle)
        #expect(FilesystemHarness.eventually { fs.catalog.knownFile(forEntry: 0)?.isComplete == true })

        let first = try #require(try fs.open(inode).value)
        let second = try #require(try fs.open(inode).value)
        let backingID = try #require(kernel.recorded.registered.first)
        #expect(first.readPath == .passthrough(backingID: backingID) && second.readPath == first.readPath)
        #expect(kernel.recorded.registered.count == 1)
        fs.filesystem.closeHandle(first.handle)
        #expect(kernel.recorded.unregistered.isEmpty, "one handle still reads through it")
        fs.filesystem.closeHandle(second.handle)
        #expect(kernel.recorded.unregistered == [backingID])
    }

    @Test func aRefusedBackingFileFallsBackToKeptPagesAndIsNotAskedAgain() throws {
        let fs = try FilesystemHarness(files: ["one.bin": Self.bytes], paths: [("one.bin", "one.bin")])
        let inode = fs.inode("one.bin")
        let reader = try #require(try fs.open(inode).value)
        _ = try fs.read(reader.handle, offset: 0, size: Self.bytes.count)
        fs.filesystem.closeHandle(reader.handle)
        #expect(FilesystemHarness.eventually { fs.catalog.knownFile(forEntry: 0)?.isComplete == true })

        let refusing = RecordingKernel(refusal: EPERM)
        fs.filesystem.attach(refusing)
        let opened = try #require(try fs.open(inode).value)
        #expect(opened.readPath == .daemon(keepCache: true), "a complete file's pages may stay in the kernel")
        fs.filesystem.closeHandle(opened.handle)
        // The kernel refused once: passthrough is off for the rest of the mount.
        let willing = RecordingKernel()
        fs.filesystem.attach(willing)
        #expect(try fs.open(inode).value?.readPath == .daemon(keepCache: true))
        #expect(willing.recorded.registered.isEmpty)

        let withoutPassthrough = try FilesystemHarness(files: ["one.bin": Self.bytes], paths: [("one.bin", "one.bin")])
        let off = RecordingKernel(passesThrough: false)
        withoutPassthrough.filesystem.attach(off)
        let fresh = try #require(try withoutPassthrough.open(withoutPassthrough.inode("one.bin")).value)
        #expect(fresh.readPath == .daemon(keepCache: false) && off.recorded.registered.isEmpty)
    }
}
