import FaultServer
import Foundation
import RangeFSCore
import Testing

/// The cache on a filesystem that fills up: reads that need more space fail with EIO in
/// bounded time (never zeros), what is cached stays right, and everything works again
/// once there is space.
extension RangeFSIntegrationTests {
    @Test("full disk: cache on an 8 MiB tmpfs, a 32 MiB file: uncached reads fail with EIO, cached data reads right; with space the file completes")
    func diskFull() throws {
        let tmpfs = try SizedTmpfs(sizeBytes: 8 << 20)
        defer { tmpfs.unmount() }
        let server = try FaultServer()
        let size = 32 << 20
        let data = RandomBytes.make(count: size, seed: 0xF11)
        server.publish("full.bin", bytes: data)
        let cacheDir = URL(fileURLWithPath: tmpfs.path).appendingPathComponent("cache")
        let mount = try fx.mount(server: server, names: ["full.bin"], cacheDir: cacheDir)
        defer { mount.unmount() }   // before the tmpfs goes
        let path = mount.path("full.bin")

        // Room for this: 256 KiB at the start (with read-ahead, well under 8 MiB).
        let headSize = 256 << 10
        let head = Reading.range(path, offset: 0, length: headSize)
        #expect(head.succeeded && head.bytes == Data(data[0..<headSize]), "first 256 KiB: \(head)\(Check.daemonLog(mount))")
        Thread.sleep(forTimeInterval: 1)   // let the commit of those blocks land
        print("tmpfs free after the first read: \(tmpfs.freeBytes) bytes")

        // Far more than fits: the whole file. It must stop with EIO, having given only right bytes.
        let whole = Reading.whole(path, timeout: 40)
        #expect(Reading.isPrefix(whole.bytes, of: data),
                "WRONG BYTES on a full disk at offset \(Reading.firstDifference(whole.bytes, data) ?? -1): \(whole)")
        #expect(whole.failedWithEIO, "reading 32 MiB into an 8 MiB cache should end with EIO: \(whole)\(Check.daemonLog(mount))")
        #expect(whole.result.seconds < 30, "the failing read took \(whole.result.seconds) s")
        print("whole file with a full cache: \(whole)")

        // An uncached block far away: EIO, not zeros.
        let far = Reading.range(path, offset: 28 << 20, length: 65536, timeout: 35)
        #expect(far.failedWithEIO && far.bytes.isEmpty, "uncached read with a full cache: \(far)\(Check.daemonLog(mount))")
        #expect(far.result.seconds < 30)
        #expect(mount.isMounted && !mount.daemonPids().isEmpty, "the daemon died on a full disk")

        // Bytes that were written while the disk filled, and whose commit may have failed:
        // they are read again (right bytes) or fail with EIO, in bounded time, never hang.
        for attempt in 1...2 {
            let offset = 4 << 20
            let again = Reading.range(path, offset: offset, length: 512 << 10, timeout: 35)
            #expect(Reading.isPrefix(again.bytes, of: data, at: offset), "WRONG BYTES at \(offset) on a full disk")
            #expect(!again.result.timedOut && again.result.seconds < 30 && (again.failedWithEIO || again.succeeded),
                    "read \(attempt) of bytes written as the disk filled: \(again)\(Check.daemonLog(mount))")
        }

        // What was cached before the disk filled is still right.
        for (offset, length) in [(0, 65536), (1000, 200_000), (headSize - 4096, 4096)] {
            let cached = Reading.range(path, offset: offset, length: length)
            #expect(cached.succeeded && cached.bytes == Data(data[offset..<(offset + length)]),
                    "cached bytes at \(offset) with a full disk: \(cached)\(Check.daemonLog(mount))")
        }
        let reason = XAttr.get(path, "user.rangefs.error") ?? mount.status().status?.files.first?.failure ?? ""
        print("reason shown for the full disk: \(reason)")

        // Space again: the same mount, no restart. Everything reads, and the file completes.
        try tmpfs.resize(to: 128 << 20)
        let again = Reading.whole(path, timeout: 120)
        #expect(again.succeeded && again.bytes == Data(data), "whole file once there is space: \(again)\(Check.daemonLog(mount))")
        let complete = mount.waitForStatus(timeout: 30) { $0.files.first?.state == .complete }
        #expect(complete?.files.first?.state == .complete, "not complete after reading everything: \(String(describing: complete))")
        Check.succeeded(mount.unmount(), "rangefs unmount")

        // The cache's data file holds the original, byte for byte.
        let records = try DurableBlocks.records(cacheDir: cacheDir)
        if let record = records.values.first {
            let file = cacheDir.appendingPathComponent("data/\(record.dataName)")
            let stored = (try? Data(contentsOf: file)) ?? Data()
            #expect(stored == Data(data), "the cache data file differs from the original (\(stored.count) bytes)")
            #expect(record.state == .complete)
        } else {
            Issue.record("no record in the cache database")
        }
    }
}
