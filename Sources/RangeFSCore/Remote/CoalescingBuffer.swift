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
}
