import Testing
@testable import RangeFSCore

/// The loop's spare body buffers: a transfer's buffer goes to the next transfer, emptied, and
/// no more are kept than the pool's bound.
@Suite struct CoalescingBufferPoolTests {
    @Test func aBufferGivenBackIsTheNextOneTakenAndComesBackEmpty() {
        let pool = CoalescingBufferPool(bufferBytes: 4096, keptAtMost: 2)
        let first = pool.take()
        let bytes: [UInt8] = [1, 2, 3]
        #expect(bytes.withUnsafeBytes { first.append($0) })
        pool.giveBack(first)
        let second = pool.take()
        #expect(second === first)
        #expect(second.count == 0)
        #expect(second.capacity == 4096)
    }

    @Test func noMoreThanTheBoundAreKept() {
        let pool = CoalescingBufferPool(bufferBytes: 4096, keptAtMost: 2)
        let taken = (0..<3).map { _ in pool.take() }
        for buffer in taken { pool.giveBack(buffer) }
        let again = (0..<3).map { _ in pool.take() }
        // Two come back from the pool (the last given back first); the third is new.
        #expect(again[0] === taken[1] && again[1] === taken[0])
        #expect(!taken.contains { $0 === again[2] })
    }

    @Test func preparedBuffersAreTakenBeforeNewOnesAreMade() {
        let pool = CoalescingBufferPool(bufferBytes: 4096, keptAtMost: 4)
        pool.prepare(2)
        #expect(pool.spareCount == 2)
        let first = pool.take()
        #expect(pool.spareCount == 1)
        _ = pool.take()
        #expect(pool.spareCount == 0)
        pool.giveBack(first)
        #expect(pool.spareCount == 1)
        pool.prepare(9)
        #expect(pool.spareCount == 4)
    }
}
