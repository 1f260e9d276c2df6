import Foundation
import Testing
@testable import RangeFSCore

/// Sizes no real file has, from a server, a listing or the cache database: refused for that
/// file, or held at the top of the range, never trapping and never sizing an allocation.
@Suite("Hostile sizes")
struct HostileSizeTests {
    static let claims: [UInt64] = [1 << 46, 1 << 50, (1 << 50) + 1, 1 << 62, UInt64(Int64.max), .max]

    // MARK: Arithmetic

    @Test func theLimitIsOnePebibyte() {
        #expect(FileSizeLimit.accepts(0))
        #expect(FileSizeLimit.accepts(1 << 50))
        #expect(!FileSizeLimit.accepts((1 << 50) + 1))
        #expect(!FileSizeLimit.accepts(.max))
    }

    @Test(arguments: claims)
    func roundingUpAndSumsNeverOverflow(_ size: UInt64) {
        #expect(size.unitsRoundedUp(of: 512) == size / 512 + (size % 512 == 0 ? 0 : 1))
        #expect(UInt64.max.unitsRoundedUp(of: 4096) == 1 << 52)
        #expect([size, size, size].saturatingSum { $0 } == (size > UInt64.max / 3 ? .max : 3 * size))
        let attributes = NodeAttributes.file(1, size: size, modified: nil, ownership: FileOwnership(), mountTime: Date())
        #expect(attributes.blocks == size.unitsRoundedUp(of: 512), "st_blocks of \(size) bytes")
    }

    @Test func statusTotalsHoldAtTheTop() {
        let file = FileStatus(path: "a", url: "http://x/a", state: .remote, size: .max, cachedBytes: .max,
                              bytesPerSecond: .max, failure: nil)
        let status = MountStatus(mountpoint: "/m", manifest: "m", paused: false, prefetch: "all", files: [file, file])
        #expect(status.totalBytes == .max)
        #expect(status.cachedBytes == .max)
        #expect(status.bytesPerSecond == .max)
    }

    @Test func aLargestFileInTheSmallestBlocksHasAnIntBlockCountAndACheapBitmap() {
        let layout = BlockLayout(fileSize: FileSizeLimit.largest, blockSize: 4096)
        #expect(layout.blockCount == 1 << 38)
        #expect(layout.byteRange(ofBlock: layout.blockCount - 1) == (FileSizeLimit.largest - 4096)..<FileSizeLimit.largest)
        #expect(BlockBitmap(blockCount: layout.blockCount).serialized.count == BlockBitmap.listedMagic.count)
        #expect(PieceHashes.count(forSize: .max, pieceLength: 1 << 20) == 1 << 44)
    }

    @Test func aRecordOverTheLimitOrWithoutABlockSizeIsNotSound() {
        func record(size: UInt64, blockSize: UInt64) -> CachedFileRecord {
            CachedFileRecord(url: "http://x/a", dataName: "d", size: size, etag: nil, lastModified: nil, lastModifiedIsStrong: false, modified: nil,
                             blockSize: blockSize, bitmap: Data(), state: .remote, failure: nil, lastAccess: 0,
                             pinned: false, location: nil)
        }
        #expect(record(size: 1 << 40, blockSize: 256 << 10).isWithinLimits)
        #expect(!record(size: 1 << 62, blockSize: 256 << 10).isWithinLimits)
        #expect(!record(size: 100, blockSize: 0).isWithinLimits)
        #expect(!record(size: 100, blockSize: 1 << 40).isWithinLimits)
    }

    // MARK: Stated sizes become files in one place

    @Test func aListingStatingAnAbsurdSizeRefusesThatFileAloneWithEFBIG() throws {
        let data = FetchEngineHarness.bytes(64 * 1024)
        let engine = try FetchEngineHarness(files: ["big.bin": data, "ok.bin": data],
                                            sizes: ["big.bin": UInt64(Int64.max), "ok.bin": UInt64(data.count)],
                                            statedSizesAreExact: true)
        guard case .failure(let error) = try engine.file("big.bin") else {
            Issue.record("a file stated at 2^63-1 bytes was made")
            return
        }
        guard case .tooLarge(let size) = error.reason else {
            Issue.record("refused for another reason: \(error)")
            return
        }
        #expect(size == UInt64(Int64.max))
        #expect(FilesystemError(.fetch(error)).errno == EFBIG)
        #expect(error.description.contains("largest file a mount accepts"), "\(error)")
        #expect(engine.server.requests.isEmpty, "nothing asked of the server for a refused size")
        let file = try #require(try engine.file("ok.bin").value)
        #expect(try engine.read(file, 0..<4096).value == Array(data[0..<4096]))
    }
}
