import Foundation
import Testing
@testable import RangeFSCore

private let mebibyte: UInt64 = 1 << 20
private let gibibyte: UInt64 = 1 << 30

// MARK: The default floor

@Test("the default floor is 15% of the filesystem, at most 4 GiB; data stops the database's room above it")
func defaultFloor() {
    let floor = FreeSpaceFloor.standard
    // A 32 GB SD card: 15% would be 4.8 GB, the cap keeps 4 GiB.
    #expect(floor.bytes(ofFilesystem: 32_000_000_000) == 4 * gibibyte)
    // A 4 TB disk: 4 GiB, not 600 GB.
    #expect(floor.bytes(ofFilesystem: 4_000_000_000_000) == 4 * gibibyte)
    // A 200 MB partition: 30 MB.
    #expect(floor.bytes(ofFilesystem: 200_000_000) == 30_000_000)
    // A 16 MiB tmpfs: 2.4 MiB, and data writes stop 4 MiB above that.
    #expect(floor.bytes(ofFilesystem: 16 * mebibyte) == 16 * mebibyte * 15 / 100)
    #expect(floor.dataLimit(ofFilesystem: 16 * mebibyte) == 16 * mebibyte * 15 / 100 + FreeSpaceFloor.databaseRoom)
    // Exact for sizes that are not a multiple of 100, and no overflow at the top.
    #expect(floor.bytes(ofFilesystem: 100 * mebibyte + 99) == (100 * mebibyte + 99) * 15 / 100)
    #expect(floor.bytes(ofFilesystem: UInt64.max) == 4 * gibibyte)
}

@Test("--cache-min-free: a fixed floor; 0 turns it off but data still leaves the database its room")
func explicitFloor() {
    #expect(FreeSpaceFloor.bytes(5 * gibibyte).bytes(ofFilesystem: 4_000_000_000_000) == 5 * gibibyte)
    #expect(FreeSpaceFloor.bytes(0).bytes(ofFilesystem: 4_000_000_000_000) == 0)
    #expect(FreeSpaceFloor.bytes(0).dataLimit(ofFilesystem: 0) == FreeSpaceFloor.databaseRoom)
}

// MARK: Budget decisions

@Test("shortfall: what must be evicted before more bytes fit, by the size limit and by the floor")
func shortfallDecisions() {
    // Floor 150 MiB; data stops at 154 MiB free (the database's 4 MiB above the floor).
    let space = FilesystemSpace(free: 100 * mebibyte, size: 1000 * mebibyte)
    let floorOnly = CacheLimits(minFree: .standard)
    // Already 54 MiB under the data limit: that much must go, and every extra byte on top.
    #expect(floorOnly.shortfall(cached: 0, space: space) == 54 * mebibyte)
    #expect(floorOnly.shortfall(cached: 0, extra: mebibyte, space: space) == 55 * mebibyte)
    // Eviction starts halfway into the database's room: measured with 2 MiB of room.
    #expect(floorOnly.shortfall(cached: 0, space: space, room: 2 * mebibyte) == 52 * mebibyte)
    #expect(floorOnly.shortfall(cached: 0, space: FilesystemSpace(free: 153 * mebibyte, size: 1000 * mebibyte), room: 2 * mebibyte) == 0)
    // Above it: room for what is left, reservations counted.
    let roomy = FilesystemSpace(free: 200 * mebibyte, size: 1000 * mebibyte)
    #expect(floorOnly.shortfall(cached: 0, extra: 46 * mebibyte, space: roomy) == 0)
    #expect(floorOnly.shortfall(cached: 0, extra: 46 * mebibyte + 1, space: roomy) == 1)
    #expect(floorOnly.shortfall(cached: 0, reserved: 20 * mebibyte, extra: 40 * mebibyte, space: roomy) == 14 * mebibyte)
    // The size limit alone, and both: the larger shortfall decides.
    let sized = CacheLimits(maxBytes: 64 * mebibyte)
    #expect(sized.shortfall(cached: 60 * mebibyte, extra: 4 * mebibyte, space: nil) == 0)
    #expect(sized.shortfall(cached: 60 * mebibyte, extra: 8 * mebibyte, space: nil) == 4 * mebibyte)
    #expect(sized.shortfall(cached: 70 * mebibyte, space: nil) == 6 * mebibyte)
    let both = CacheLimits(maxBytes: 64 * mebibyte, minFree: .standard)
    #expect(both.shortfall(cached: 60 * mebibyte, extra: 8 * mebibyte, space: roomy) == 4 * mebibyte)
    #expect(both.shortfall(cached: 10 * mebibyte, extra: 8 * mebibyte, space: space) == 62 * mebibyte)
    // A filesystem that cannot be read limits nothing but the size.
    #expect(floorOnly.shortfall(cached: UInt64.max, extra: UInt64.max, space: nil) == 0)
}

@Test("the budget refuses background reservations and writes that would cross the floor, and counts read-through")
func budgetOnARealDirectory() throws {
    let directory = FileManager.default.temporaryDirectory.path
    let free = try #require(FilesystemSpace.of(directory)).free
    // A floor above the free space: nothing may be reserved or written, and the shortfall says how much to evict.
    let full = CacheBudget(limits: CacheLimits(minFree: .bytes(free + 64 * mebibyte)), directory: directory, initialBytes: 0)
    #expect(!full.hasRoom(for: 1))
    #expect(!full.reserve(4096))
    #expect(!full.claim(4096, reservedPart: 0))
    #expect(full.excess >= 60 * mebibyte)

    // Room for 8 MiB under a size limit: reservations are counted until written or unreserved.
    let sized = CacheBudget(limits: CacheLimits(maxBytes: 8 * mebibyte), directory: directory, initialBytes: 0)
    #expect(sized.reserve(6 * mebibyte))
    #expect(!sized.hasRoom(for: 4 * mebibyte))
    #expect(!sized.reserve(4 * mebibyte))
    // A reader goes first: background promises do not count against it.
    #expect(sized.hasRoom(forRead: 4 * mebibyte))
    #expect(sized.claim(mebibyte, reservedPart: mebibyte))
    sized.add(Int64(mebibyte))
    sized.unreserve(5 * mebibyte)
    #expect(sized.hasRoom(for: 7 * mebibyte))
    #expect(!sized.hasRoom(for: 7 * mebibyte + 1))
    #expect(sized.shortfall(extra: 8 * mebibyte) == mebibyte)

    // Read-through is said once per episode: again only after a read found room.
    #expect(sized.readThrough(4096))
    #expect(!sized.readThrough(4096))
    sized.storing()
    #expect(sized.readThrough(8192))
    let status = sized.status
    #expect(status.readThroughBytes == 16384 && status.cachedBytes == mebibyte && status.maxBytes == 8 * mebibyte)
    #expect(status.freeBytes != nil && status.minFreeBytes == 0)
}

@Test("a full disk is told apart from other storage errors")
func outOfSpaceErrors() {
    #expect(CacheBudget.isOutOfSpace(CacheError.system("write", errno: ENOSPC)))
    #expect(CacheBudget.isOutOfSpace(CacheError.system("write", errno: EDQUOT)))
    #expect(!CacheBudget.isOutOfSpace(CacheError.system("write", errno: EIO)))
    #expect(!CacheBudget.isOutOfSpace(CacheError("no errno")))
}

// MARK: Status

@Test("status: the totals line shows the cache's size, free space and floor, and files waiting for space")
func statusShowsSpace() {
    let files = [
        FileStatus(path: "a.flac", url: "https://example.com/a.flac", state: .complete, size: 40 * mebibyte,
                   cachedBytes: 40 * mebibyte, bytesPerSecond: 0, failure: nil),
        FileStatus(path: "b.flac", url: "https://example.com/b.flac", state: .waitingForSpace, size: 40 * mebibyte,
                   cachedBytes: 12 * mebibyte, bytesPerSecond: 0, failure: nil),
    ]
    let cache = CacheSpaceStatus(cachedBytes: 52 * mebibyte, maxBytes: nil, freeBytes: 4 * gibibyte,
                                 minFreeBytes: 4 * gibibyte, readThroughBytes: 0)
    let status = MountStatus(mountpoint: "/mnt/m", manifest: "m.txt", paused: false, prefetch: "all", files: files, cache: cache)
    #expect(StatusReport.totalsLine(status)
            == "total: 1/2 complete, 1 waiting for space, 52.0 MiB / 80.0 MiB (65%); cache 52.0 MiB, 4.0 GiB free (floor 4.0 GiB)")
    var limited = status
    limited.cache?.maxBytes = 64 * mebibyte
    limited.cache?.readThroughBytes = 3 * mebibyte
    #expect(StatusReport.totalsLine(limited).hasSuffix("; cache 52.0 MiB (max 64.0 MiB), 4.0 GiB free (floor 4.0 GiB), 3.0 MiB read without storing"))
    // The state column widens for the longer state; rows stay aligned.
    let lines = StatusReport.lines(status)
    #expect(lines[1].contains("waiting for space  "))
    #expect(lines[0].firstIndex(of: "4") .map { lines[0].distance(from: lines[0].startIndex, to: $0) }
            == lines[1].firstIndex(of: "1").map { lines[1].distance(from: lines[1].startIndex, to: $0) })
    // JSON carries the state as shown and the cache block.
    let json = StatusReport.json(status)
    #expect(json.contains("\"state\" : \"waiting for space\"") && json.contains("\"minFreeBytes\" : 4294967296"))
}
