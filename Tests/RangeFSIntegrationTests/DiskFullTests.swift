import FaultServer
import Foundation
import RangeFSCore
import Testing

/// The cache on a filesystem that fills up, with the free-space floor turned off: data
/// writes stop at the database's room, every read still gets the right bytes (what does not
/// fit is served without storing, never EIO), and everything is stored once there is space.
extension RangeFSIntegrationTests {
    @Test("full disk: cache on an 8 MiB tmpfs with --cache-min-free 0, a 32 MiB file: every read is byte-exact (what does not fit is served without storing), cached data reads right; with space the file completes")
    func diskFull() throws {
        let tmpfs = try SizedTmpfs(sizeBytes: 8 << 20)
        defer { tmpfs.unmount() }
        let server = try FaultServer()
        let size = 32 << 20
        let data = RandomBytes.make(count: size, seed: 0xF11)
        server.publish("full.bin", bytes: data)
        let cacheDir = URL(fileURLWithPath: tmpfs.path).appendingPathComponent("cache")
        let mount = try fx.mount(server: server, names: ["full.bin"], cacheDir: cacheDir,
                                 options: Fixture.readsOnly + ["--cache-min-free", "0"])
        defer { mount.unmount() }   // before the tmpfs goes
        let path = mount.path("full.bin")

        // Room for this: 256 KiB at the start (with read-ahead, well under 8 MiB).
        let headSize = 256 << 10
        let head = Reading.range(path, offset: 0, length: headSize)
        #expect(head.succeeded && head.bytes == Data(data[0..<headSize]), "first 256 KiB: \(head)\(Check.daemonLog(mount))")

        // Far more than fits: the whole file. Every byte arrives, right, and the disk keeps the
        // database's room.
        let whole = Reading.whole(path, timeout: 60)
        #expect(whole.succeeded && whole.bytes == Data(data),
                "whole file with a full cache: \(whole), first difference at \(Reading.firstDifference(whole.bytes, data) ?? -1)\(Check.daemonLog(mount))")
        print("whole file with a full cache: \(whole); tmpfs free after it: \(tmpfs.freeBytes) bytes")
        #expect(tmpfs.freeBytes >= Int(FreeSpaceFloor.databaseRoom) - (256 << 10),
                "the cache took the database's room: \(tmpfs.freeBytes) bytes free")

        // An uncached block far away: its bytes, not EIO and not zeros.
        let far = Reading.range(path, offset: 28 << 20, length: 65536, timeout: 35)
        #expect(far.succeeded && far.bytes == Data(data[(28 << 20)..<((28 << 20) + 65536)]),
                "uncached read with a full cache: \(far)\(Check.daemonLog(mount))")
        #expect(mount.isMounted && !mount.daemonPids().isEmpty, "the daemon died on a full disk")
        let status = mount.status().status
        #expect(status?.files.first?.state != .failed, "the file failed on a full disk: \(String(describing: status))")
        #expect((status?.cache?.readThroughBytes ?? 0) > 0, "nothing was served without storing: \(String(describing: status?.cache))")
        #expect(mount.logLines(containing: "database or disk is full").isEmpty, "the cache database ran out of room:\n\(mount.logTail())")

        // What was cached before the disk filled is still right.
        for (offset, length) in [(0, 65536), (1000, 200_000), (headSize - 4096, 4096)] {
            let cached = Reading.range(path, offset: offset, length: length)
            #expect(cached.succeeded && cached.bytes == Data(data[offset..<(offset + length)]),
                    "cached bytes at \(offset) with a full disk: \(cached)\(Check.daemonLog(mount))")
        }
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
