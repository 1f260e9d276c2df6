import Glibc

/// A fixed buffer of body bytes waiting to be written; lives on the loop thread with its transfer.
final class CoalescingBuffer {
    private let storage: UnsafeMutableRawBufferPointer
    private(set) var count = 0

    init(capacity: Int) {
        storage = .allocate(byteCount: capacity, alignment: 4096)
    }

    deinit {
        storage.deallocate()
    }

    var capacity: Int { storage.count }

    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: storage[0..<count]) }

    /// False when `bytes` do not fit in what is left.
    func append(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count <= storage.count - count else { return false }
        if let base = bytes.baseAddress, bytes.count > 0 {
            (storage.baseAddress! + count).copyMemory(from: base, byteCount: bytes.count)
        }
        count += bytes.count
        return true
    }

    func removeAll() { count = 0 }

    /// Writes every page once, so the kernel maps them now rather than at the first body bytes.
    func touchPages() {
        memset(storage.baseAddress!, 0, storage.count)
    }
}

/// The loop's spare coalescing buffers. A buffer freshly allocated for each transfer came
/// from pages the kernel had to map and zero on first touch: 128 page faults per 512 KiB, all
/// on the one thread every received byte passes (34,000 for a cold 512 MiB read), and the
/// mount's first read paid them before its reply. Kept buffers stay mapped. Lives on the loop
/// thread only, like the transfers that borrow from it.
final class CoalescingBufferPool {
    let bufferBytes: Int
    /// At most this many spare buffers are kept (about as many as transfers run at once).
    private let keptAtMost: Int
    private var spare: [CoalescingBuffer] = []
    /// Buffers ready to be taken without allocating.
    var spareCount: Int { spare.count }

    init(bufferBytes: Int, keptAtMost: Int) {
        self.bufferBytes = bufferBytes
        self.keptAtMost = keptAtMost
    }

    /// Maps `count` buffers ahead of the first transfers.
    func prepare(_ count: Int) {
        while spare.count < min(count, keptAtMost) {
            let buffer = CoalescingBuffer(capacity: bufferBytes)
            buffer.touchPages()
            spare.append(buffer)
        }
    }

    func take() -> CoalescingBuffer {
        spare.popLast() ?? CoalescingBuffer(capacity: bufferBytes)
    }

    /// Takes a buffer back once its transfer is over; its bytes are dropped.
    func giveBack(_ buffer: CoalescingBuffer) {
        buffer.removeAll()
        if spare.count < keptAtMost { spare.append(buffer) }
    }
}
