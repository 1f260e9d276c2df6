import FaultServer
import Foundation
import RangeFSCore
import Synchronization
import Testing

/// A collection many times larger than the disk of its cache, mounted with the default
/// options: the cache keeps its floor of free space, background work waits for space instead
/// of failing, and every read works (evicting, or served without storing).
extension RangeFSIntegrationTests {
    @Test("floor: a collection 10x a 32 MiB tmpfs, default options: free space never under the floor, every file byte-exact while prefetching, an open file is never evicted, growing the disk lets the prefetcher finish")
    func floorKeepsFreeSpaceWithDefaults() throws {
        let crowd = try CrowdedCache(tmpfsBytes: 32 << 20, fileCount: 8, fileBytes: 40 << 20, seed: 0xF100)
        defer { crowd.tmpfs.unmount() }
        let sampler = FreeSpaceSampler(path: crowd.tmpfs.path)
        let mount = try crowd.mount(fx, options: [])
        defer { mount.unmount() }   // before the tmpfs goes

        // A reader holds the first file open from the start; its blocks may never be evicted.
        let held = try HeldReader(path: mount.path(crowd.files[0].name))
        let head = try held.read(count: 4 << 20)
        #expect(head == Data(crowd.files[0].bytes[0..<(4 << 20)]), "the held file's first 4 MiB differ")
        let heldCached = crowd.cachedBytes(of: crowd.files[0].name, in: mount) ?? 0
        #expect(heldCached >= 4 << 20, "the held file has only \(heldCached) bytes cached after reading 4 MiB")

        // Every other file, whole and at random offsets, while the prefetcher fills the disk.
        for file in crowd.files.dropFirst() {
            crowd.expectReadsExact(file, through: mount)
            let stillCached = crowd.cachedBytes(of: crowd.files[0].name, in: mount) ?? 0
            #expect(stillCached >= heldCached, "the open file lost cached data: \(stillCached) < \(heldCached) bytes")
        }
        try crowd.expectRestExact(of: crowd.files[0], from: held, after: head.count)
        held.close()

        // Background work stops at the floor: files wait for space, none fails.
        crowd.waitUntilWaitingForSpace(mount)
        let samples = sampler.stop()
        print("floor, default options: \(samples); \(mount.logLines(containing: "evicted").count) evictions logged")
        #expect(samples.count >= 10, "too few free-space samples: \(samples)")
        #expect(samples.lowestMargin >= 0, "free space went under the floor: \(samples)\(Check.daemonLog(mount))")
        let text = mount.statusText().stdout
        #expect(text.contains("free (floor "), "the status has no free space or floor:\n\(text)")
        print("floor, default options: rangefs status:\n\(text)")

        // More space, the same mount: the prefetcher completes everything on its own.
        try crowd.tmpfs.resize(to: 512 << 20)
        let complete = mount.waitForStatus(timeout: 180) { $0.files.allSatisfy { $0.state == .complete } }
        #expect(complete?.files.allSatisfy { $0.state == .complete } == true,
                "not everything complete after the disk grew: \(crowd.describe(complete))\(Check.daemonLog(mount))")
        print("floor, default options: read-through \(complete?.cache?.readThroughBytes ?? 0) bytes; \(crowd.describe(complete))")
        Check.succeeded(mount.unmount(), "rangefs unmount")
    }

    @Test("floor: --cache-max-size smaller than one file: the cache stays under it, files wait for space, every read is byte-exact (served without storing)")
    func floorWithASizeLimitSmallerThanAFile() throws {
        let crowd = try CrowdedCache(tmpfsBytes: 32 << 20, fileCount: 4, fileBytes: 40 << 20, seed: 0xF200)
        defer { crowd.tmpfs.unmount() }
        let sampler = FreeSpaceSampler(path: crowd.tmpfs.path)
        let limit: UInt64 = 16 << 20
        let mount = try crowd.mount(fx, options: ["--cache-max-size", "16M"])
        defer { mount.unmount() }

        let held = try HeldReader(path: mount.path(crowd.files[0].name))
        let head = try held.read(count: 1 << 20)
        #expect(head == Data(crowd.files[0].bytes[0..<(1 << 20)]))
        for file in crowd.files.dropFirst() {
            crowd.expectReadsExact(file, through: mount)
        }
        try crowd.expectRestExact(of: crowd.files[0], from: held, after: head.count)
        // Closed now, not whenever it goes away: an open file keeps the unmount below busy.
        held.close()

        let waiting = crowd.waitUntilWaitingForSpace(mount)
        let cache = waiting?.cache
        // Concurrent readers may each find the last room at once: a few blocks of slack.
        #expect((cache?.cachedBytes ?? .max) <= limit + (1 << 20), "the cache grew past its limit: \(String(describing: cache))")
        #expect((cache?.readThroughBytes ?? 0) > 0, "no read was served without storing: \(String(describing: cache))")
        let samples = sampler.stop()
        print("floor, --cache-max-size 16M: \(samples); cache \(String(describing: cache))")
        #expect(samples.lowestMargin >= 0, "free space went under the floor: \(samples)")
        #expect(!mount.logLines(containing: "served from the network without being stored").isEmpty,
                "the log does not say that reads were served without storing")
        #expect(mount.logLines(containing: "served from the network without being stored").count < 20,
                "the log says so again and again")
        Check.succeeded(mount.unmount(), "rangefs unmount")
    }

    @Test("floor: another program fills the disk to the floor: background work waits, reads stay byte-exact, and it goes on once that space is freed")
    func floorWhenAnotherProgramFillsTheDisk() throws {
        let crowd = try CrowdedCache(tmpfsBytes: 48 << 20, fileCount: 8, fileBytes: 40 << 20, seed: 0xF300)
        defer { crowd.tmpfs.unmount() }
        // Background fetching slowed down so that the disk fills while the test watches.
        let mount = try crowd.mount(fx, options: ["--max-rate", "4M"])
        defer { mount.unmount() }
        // Let the prefetcher store something first, then take everything above the floor.
        let started = mount.waitForStatus(timeout: 30) { ($0.cache?.cachedBytes ?? 0) >= 4 << 20 }
        #expect((started?.cache?.cachedBytes ?? 0) >= 4 << 20, "the prefetcher stored nothing: \(crowd.describe(started))")
        let filler = (crowd.tmpfs.path as NSString).appendingPathComponent("filler")
        let filled = crowd.fillToFloor(at: filler)
        // At least a chunk (4 MiB), or freeing it would give background work no room to go on.
        #expect(filled >= 4 << 20, "fallocate beside the cache took only \(filled) bytes")
        let afterFill = crowd.tmpfs.freeBytes
        defer { unlink(filler) }
        // The other program took the database's room above the floor too (and transfers running
        // at that moment maybe some of the floor): the cache gives it back by evicting what
        // nobody uses, and background work waits.
        let floor = Int(FloorFormula.floor(ofFilesystem: crowd.tmpfs.sizeBytes))
        let room = Int(FreeSpaceFloor.databaseRoom)
        Poll.until(seconds: 15, every: 0.1) { crowd.tmpfs.freeBytes >= floor + room / 2 }
        #expect(crowd.tmpfs.freeBytes >= floor + room / 2,
                "the cache did not give back its database's room: \(crowd.tmpfs.freeBytes) free, floor \(floor)\(Check.daemonLog(mount))")
        crowd.waitUntilWaitingForSpace(mount)
        let sampler = FreeSpaceSampler(path: crowd.tmpfs.path)
        for file in crowd.files.suffix(3) {
            crowd.expectReadsExact(file, through: mount)
        }
        let samples = sampler.stop()
        print("floor, disk filled by another program (\(filled) bytes, \(afterFill) free right after): \(samples)")
        #expect(samples.lowestMargin >= 0, "free space went under the floor: \(samples)\(Check.daemonLog(mount))")
        let before = crowd.waitUntilWaitingForSpace(mount)?.cache?.cachedBytes ?? 0

        // The other program lets go of its space: background work goes on without a remount
        // and stores what fits, until less than a chunk (4 MiB) is left above the database's room.
        unlink(filler)
        let filledAgain = floor + room + (4 << 20) + (1 << 20)
        let resumed = mount.waitForStatus(timeout: 60) { status in
            (status.cache?.cachedBytes ?? 0) > before && crowd.tmpfs.freeBytes <= filledAgain
        }
        #expect((resumed?.cache?.cachedBytes ?? 0) > before && crowd.tmpfs.freeBytes <= filledAgain,
                "the prefetcher did not go on after the space came back (\(before) bytes before, \(crowd.tmpfs.freeBytes) free): \(crowd.describe(resumed))\(Check.daemonLog(mount))")
        print("floor, disk filled by another program: read-through \(resumed?.cache?.readThroughBytes ?? 0) bytes")
        Check.succeeded(mount.unmount(), "rangefs unmount")
    }
}

/// A tmpfs cache and a FaultServer with a collection of random files much larger than it.
private final class CrowdedCache {
    let tmpfs: SizedTmpfs
    let server: FaultServer
    let files: [(name: String, bytes: [UInt8])]
    let cacheDir: URL

    init(tmpfsBytes: Int, fileCount: Int, fileBytes: Int, seed: UInt64) throws {
        tmpfs = try SizedTmpfs(sizeBytes: tmpfsBytes)
        server = try FaultServer()
        files = (0..<fileCount).map { index in
            ("file\(index).bin", RandomBytes.make(count: fileBytes + index * 4099, seed: seed + UInt64(index)))
        }
        for file in files { server.publish(file.name, bytes: file.bytes) }
        cacheDir = URL(fileURLWithPath: tmpfs.path).appendingPathComponent("cache")
    }

    func mount(_ fx: Fixture, options: [String]) throws -> Mount {
        try fx.mount(server: server, names: files.map(\.name), cacheDir: cacheDir, options: options)
    }

    /// The whole file with `cat`, then a few reads at random offsets with `dd`, each byte-exact.
    func expectReadsExact(_ file: (name: String, bytes: [UInt8]), through mount: Mount,
                          sourceLocation: SourceLocation = #_sourceLocation) {
        let path = mount.path(file.name)
        let whole = Reading.whole(path, timeout: 120)
        #expect(whole.succeeded && whole.bytes == Data(file.bytes),
                "\(file.name) whole: \(whole), first difference at \(Reading.firstDifference(whole.bytes, file.bytes) ?? -1)\(Check.daemonLog(mount))",
                sourceLocation: sourceLocation)
        var generator = SeededRandom(seed: UInt64(file.bytes.count))
        for _ in 0..<6 {
            let offset = Int(generator.next() % UInt64(file.bytes.count - 1))
            let length = min(file.bytes.count - offset, 1 + Int(generator.next() % (300 << 10)))
            let piece = Reading.range(path, offset: offset, length: length, timeout: 60)
            #expect(piece.succeeded && piece.bytes == Data(file.bytes[offset..<(offset + length)]),
                    "\(file.name) at \(offset)+\(length): \(piece)\(Check.daemonLog(mount))", sourceLocation: sourceLocation)
        }
    }

    /// Reads the rest of `file` from a reader that has read `done` bytes of it, and closes it.
    func expectRestExact(of file: (name: String, bytes: [UInt8]), from held: HeldReader, after done: Int,
                         sourceLocation: SourceLocation = #_sourceLocation) throws {
        let rest = try held.read(count: file.bytes.count - done)
        #expect(rest == Data(file.bytes[done...]), "the held file's rest differs (\(rest.count) bytes)", sourceLocation: sourceLocation)
        held.close()
    }

    /// Waits until background work has stopped at the limits, and checks how that shows.
    @discardableResult
    func waitUntilWaitingForSpace(_ mount: Mount, sourceLocation: SourceLocation = #_sourceLocation) -> MountStatus? {
        let status = mount.waitForStatus(timeout: 60) { status in
            status.files.contains { $0.state == .waitingForSpace } && status.files.allSatisfy { $0.bytesPerSecond == 0 }
        }
        expectWaitingNotFailed(status, mount: mount, sourceLocation: sourceLocation)
        return status
    }

    func cachedBytes(of name: String, in mount: Mount) -> UInt64? {
        mount.status().status?.files.first { $0.path == name }?.cachedBytes
    }

    /// No file failed; one waits for space, and says so in its extended attribute too.
    func expectWaitingNotFailed(_ status: MountStatus?, mount: Mount, sourceLocation: SourceLocation = #_sourceLocation) {
        let failed = status?.files.filter { $0.state == .failed } ?? []
        #expect(status != nil && failed.isEmpty, "files failed: \(describe(status))\(Check.daemonLog(mount))", sourceLocation: sourceLocation)
        guard let waiting = status?.files.first(where: { $0.state == .waitingForSpace }) else {
            Issue.record("no file waits for space: \(describe(status))\(Check.daemonLog(mount))", sourceLocation: sourceLocation)
            return
        }
        let shown = XAttr.get(mount.path(waiting.path), "user.rangefs.state")
        #expect(shown == "waiting for space", "user.rangefs.state of \(waiting.path): \(shown ?? "none")", sourceLocation: sourceLocation)
    }

    /// Takes the free space above the floor with `fallocate` (as another program would);
    /// returns the bytes taken.
    func fillToFloor(at path: String) -> Int {
        for _ in 0..<20 {
            let free = tmpfs.freeBytes
            let target = (free - Int(FloorFormula.floor(ofFilesystem: tmpfs.sizeBytes))) / 4096 * 4096
            guard target > 0 else { return 0 }
            if Command.run(["fallocate", "-l", "\(target)", path], timeout: 30).succeeded { return target }
            unlink(path)
        }
        return 0
    }

    func describe(_ status: MountStatus?) -> String {
        guard let status else { return "no status" }
        return status.files.map { "\($0.path) \($0.state.rawValue) \($0.cachedBytes)\($0.failure.map { " (\($0))" } ?? "")" }
            .joined(separator: "; ") + "; cache \(String(describing: status.cache))"
    }
}

/// The default floor, written out here from the documentation rather than taken from the
/// code under test: 15% of the filesystem, at most 4 GiB.
enum FloorFormula {
    static func floor(ofFilesystem size: UInt64) -> UInt64 {
        min(4 << 30, size * 15 / 100)
    }
}

extension SizedTmpfs {
    var sizeBytes: UInt64 {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return 0 }
        return UInt64(info.f_blocks) * UInt64(info.f_frsize)
    }
}

/// Free space of a filesystem and its default floor, sampled every 100 ms on a thread of its own.
final class FreeSpaceSampler: Sendable {
    struct Summary: CustomStringConvertible {
        var count = 0
        var lowestFree = UInt64.max
        /// The lowest free space minus the floor at that moment (negative: under the floor).
        var lowestMargin = Int64.max
        var floorAtLowest: UInt64 = 0

        var description: String {
            "\(count) samples, lowest free \(lowestFree) bytes (floor then \(floorAtLowest)), lowest margin over the floor \(lowestMargin) bytes"
        }
    }

    private let summary = Mutex(Summary())
    private let running = Mutex(true)
    private let done = DispatchSemaphore(value: 0)

    init(path: String) {
        let thread = Thread { [self] in
            while running.withLock({ $0 }) {
                var info = statvfs()
                if statvfs(path, &info) == 0 {
                    let free = UInt64(info.f_bavail) * UInt64(info.f_frsize)
                    let floor = FloorFormula.floor(ofFilesystem: UInt64(info.f_blocks) * UInt64(info.f_frsize))
                    summary.withLock { summary in
                        summary.count += 1
                        let margin = Int64(free) - Int64(floor)
                        if margin < summary.lowestMargin { summary.lowestMargin = margin }
                        if free < summary.lowestFree {
                            summary.lowestFree = free
                            summary.floorAtLowest = floor
                        }
                    }
                }
                // The sampling period is what the test promises (free space seen every 100 ms).
                usleep(100_000)
            }
            done.signal()
        }
        thread.start()
    }

    /// Stops sampling (waits for the thread) and returns what it saw.
    func stop() -> Summary {
        running.withLock { $0 = false }
        _ = done.wait(timeout: .now() + 5)
        return summary.withLock { $0 }
    }
}

/// A reader that keeps a file open across other work, reading on from where it stopped.
private final class HeldReader {
    private let handle: FileHandle

    init(path: String) throws {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw HarnessError("cannot open \(path)") }
        self.handle = handle
    }

    /// Exactly `count` bytes from the current position (fewer only at the end of the file).
    func read(count: Int) throws -> Data {
        var data = Data()
        while data.count < count {
            guard let chunk = try handle.read(upToCount: count - data.count), !chunk.isEmpty else { break }
            data += chunk
        }
        return data
    }

    func close() {
        try? handle.close()
    }
}
