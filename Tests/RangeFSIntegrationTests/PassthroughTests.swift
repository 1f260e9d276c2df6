import Foundation
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// FUSE passthrough: the kernel reads complete files from their cache files by itself. The
/// tests tell the two read paths apart by stopping the daemon (SIGSTOP): a passed-through
/// handle still reads, one served by the daemon waits until it runs again.
extension RangeFSIntegrationTests {
    /// Passthrough needs Linux 6.9 or later, and CAP_SYS_ADMIN to register backing files.
    static let kernelPassesThrough: Bool = {
        var name = utsname()
        uname(&name)
        let release = withUnsafeBytes(of: &name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let numbers = release.split(whereSeparator: { !$0.isNumber }).prefix(2).compactMap { Int($0) }
        guard numbers.count == 2 else { return false }
        return geteuid() == 0 && (numbers[0], numbers[1]) >= (6, 9)
    }()

    @Test("a complete file is passed through: two handles read every byte while the daemon is stopped; with --no-passthrough such a read waits for the daemon",
          .enabled(if: kernelPassesThrough, "FUSE passthrough needs Linux 6.9 or later and root"))
    func completeFileIsPassedThrough() throws {
        let file = fx.data.file("tail.bin")
        let original = try Data(contentsOf: file.url)
        for passthrough in [true, false] {
            let mount = try fx.mount([ManifestLine(path: "p.bin", url: fx.nginx.url(file.name))],
                                     options: passthrough ? [] : ["--no-passthrough"])
            let (status, complete) = try mount.waitForStatus(timeout: 60) { $0.allComplete }
            try #require(complete, "p.bin not complete:\n\(status)\(Check.daemonLog(mount))")
            let handles = try [OpenedFile(mount.path("p.bin")), OpenedFile(mount.path("p.bin"))]
            let daemon = try #require(mount.daemonPids().first, "no daemon process")
            kill(daemon, SIGSTOP)
            var stopped = true
            defer { if stopped { kill(daemon, SIGCONT) } }
            for handle in handles { handle.dropPageCache() }

            let timeout = passthrough ? 10.0 : 1.0
            let reads = handles.map { $0.readAll(size: file.size + 1, timeout: timeout) }
            if passthrough {
                for (index, read) in reads.enumerated() {
                    #expect(read == original, "handle \(index): \(read.map { "\($0.count) bytes, not the file's" } ?? "no answer in 10 s: the read went to the stopped daemon")")
                }
            } else {
                #expect(reads.allSatisfy { $0 == nil }, "with --no-passthrough a read answered without the daemon")
            }
            kill(daemon, SIGCONT)
            stopped = false
            #expect(handles[0].readAll(size: file.size + 1, timeout: 30) == original, "a read after the daemon runs again")
            for handle in handles { handle.close() }
            Check.succeeded(mount.unmount(), "rangefs unmount", mount: mount)
        }
    }

    @Test("handles read the right bytes whatever the kernel's read path: one opened before completion and one after; a file changed on the server while passed through is read in its old version, whole, until every handle closes",
          .enabled(if: kernelPassesThrough, "FUSE passthrough needs Linux 6.9 or later and root"))
    func readPathsMixSafely() throws {
        let site = try ServedFiles(names: ["c.bin"], size: 3 << 20)
        defer { site.remove() }
        let mount = try fx.mount([ManifestLine(path: "c.bin", url: site.server.url("c.bin"))],
                                 options: ["--prefetch", "opened"])
        let path = mount.path("c.bin")
        let oldBytes = try Data(contentsOf: site.dir.appendingPathComponent("c.bin"))

        // Opened before anything is fetched (page cache); a second handle after completion must
        // open too, though the kernel forbids mixing passthrough with a page-cache handle.
        let early = try OpenedFile(path)
        #expect(early.read(offset: 0, count: 4096) == oldBytes.prefix(4096), "first read before completion")
        let (status, complete) = try mount.waitForStatus(timeout: 90) { $0.allComplete }
        try #require(complete, "c.bin not complete:\n\(status)\(Check.daemonLog(mount))")
        let late = try OpenedFile(path)
        #expect(late.readAll(size: site.size + 1, timeout: 30) == oldBytes, "the handle opened after completion")
        #expect(early.readAll(size: site.size + 1, timeout: 30) == oldBytes, "the handle opened before completion")
        early.close()
        late.close()

        // Passed through, then the server's copy changes and `verify` drops the cached one.
        let daemon = try #require(mount.daemonPids().first, "no daemon process")
        let passed = try Self.openPassedThrough(path, size: site.size, daemon: daemon)
        let newSum = try site.rewrite("c.bin")
        let verify = mount.rangefs("verify", timeout: 60)
        #expect(verify.stdout.contains("c.bin: changed"), "verify should find the change: \(verify)")
        // While it is open, the kernel holds every handle of the file to its backing file.
        let alongside = try OpenedFile(path)
        #expect(alongside.readAll(size: site.size + 1, timeout: 30) == oldBytes,
                "a handle opened beside the passed-through one reads the same version, whole")
        #expect(passed.readAll(size: site.size + 1, timeout: 30) == oldBytes,
                "the passed-through handle keeps reading the version it opened, whole")
        passed.close()
        alongside.close()
        // The kernel reports a closed handle a little after close() returns.
        var sum = SHA256.of(path).hash
        Poll.until(seconds: 2, every: 0.1) {
            sum = SHA256.of(path).hash
            return sum == newSum
        }
        #expect(sum == newSum, "sha256sum after every handle closed reads the new version")
        Check.succeeded(mount.unmount(), "rangefs unmount", mount: mount)
    }
}

extension RangeFSIntegrationTests {
    /// Opens `path` until the handle is passed through: the kernel tells the daemon that earlier
    /// handles closed a little after close() returns, and until then a new one uses the page cache.
    /// A passed-through handle reads with the daemon stopped.
    fileprivate static func openPassedThrough(_ path: String, size: Int, daemon: Int32) throws -> OpenedFile {
        for _ in 0..<20 {
            let handle = try OpenedFile(path)
            kill(daemon, SIGSTOP)
            handle.dropPageCache()
            let read = handle.readAll(size: size + 1, timeout: 2)
            kill(daemon, SIGCONT)
            if read != nil { return handle }
            _ = handle.readAll(size: size + 1, timeout: 30)   // the waiting read ends first
            handle.close()
            usleep(100_000)
        }
        throw HarnessError("\(path) was never opened for passthrough in 20 tries")
    }
}

/// A read-only descriptor whose reads can be bounded in time (one may wait on a stopped daemon).
private final class OpenedFile: Sendable {
    let descriptor: Int32

    init(_ path: String) throws {
        descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw HarnessError("open \(path): errno \(errno)") }
    }

    func read(offset: Int, count: Int) -> Data? {
        var buffer = [UInt8](repeating: 0, count: count)
        let n = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, count, off_t(offset)) }
        return n < 0 ? nil : Data(buffer.prefix(n))
    }

    /// Up to `size` bytes from offset 0, read on another thread; nil if not done in `timeout` s.
    /// A read left waiting finishes on its own later.
    func readAll(size: Int, timeout: Double) -> Data? {
        let result = Mutex<Data?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            var data = Data()
            while data.count < size, let chunk = self.read(offset: data.count, count: min(1 << 20, size - data.count)),
                  !chunk.isEmpty {
                data.append(chunk)
            }
            result.withLock { $0 = data }
            done.signal()
        }
        guard done.wait(timeout: .now() + timeout) == .success else { return nil }
        return result.withLock { $0 }
    }

    func dropPageCache() {
        _ = posix_fadvise(descriptor, 0, 0, Int32(POSIX_FADV_DONTNEED))
    }

    func close() {
        _ = Glibc.close(descriptor)
    }
}
