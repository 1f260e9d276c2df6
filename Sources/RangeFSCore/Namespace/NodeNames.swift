/// The names of all nodes of a namespace, as UTF-8 bytes one after another in a single buffer:
/// one allocation instead of a String per node.
struct NodeNames: Sendable {
    /// Where one name lies in the buffer. Names are at most NAME_MAX (255) bytes.
    struct Span: Sendable {
        let start: UInt32
        let count: UInt16

        static let empty = Span(start: 0, count: 0)
    }

    private var bytes: ContiguousArray<UInt8> = []

    init(expectedBytes: Int = 0) {
        bytes.reserveCapacity(expectedBytes)
    }

    mutating func append(_ name: String) -> Span {
        let start = bytes.count
        bytes.append(contentsOf: name.utf8)
        let count = bytes.count - start
        precondition(count <= Int(UInt16.max) && bytes.count <= Int(UInt32.max), "name or namespace too large")
        return Span(start: UInt32(start), count: UInt16(count))
    }

    func string(_ span: Span) -> String {
        String(decoding: slice(span), as: UTF8.self)
    }

    /// Byte order, the order `readdir` lists names in.
    func precedes(_ lhs: Span, _ rhs: Span) -> Bool {
        slice(lhs).lexicographicallyPrecedes(slice(rhs))
    }

    func equal(_ lhs: Span, _ rhs: Span) -> Bool {
        slice(lhs).elementsEqual(slice(rhs))
    }

    /// Where `name` (exact bytes) sorts against the name at `span`: negative when before, 0 when equal.
    func compare(_ name: UnsafeBufferPointer<UInt8>, with span: Span) -> Int {
        let stored = slice(span)
        for (index, byte) in zip(stored.indices, name) where stored[index] != byte {
            return byte < stored[index] ? -1 : 1
        }
        return name.count - stored.count
    }

    func pathHash(_ parent: PathHash, appending span: Span) -> PathHash {
        parent.appending(bytes: slice(span))
    }

    private func slice(_ span: Span) -> ArraySlice<UInt8> {
        let start = Int(span.start)
        return bytes[start..<start + Int(span.count)]
    }
}
