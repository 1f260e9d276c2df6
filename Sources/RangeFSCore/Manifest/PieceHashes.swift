import Foundation

/// The SHA-256 of each piece of a file: the file cut into pieces of `pieceLength` bytes, the
/// last one shorter when the size is not a multiple. Digests are kept as 32 bytes each, not
/// as hex text (which would take three times the memory across a large manifest).
public struct PieceHashes: Sendable, Hashable {
    public static let digestBytes = 32

    /// Bytes in each piece but the last.
    public let pieceLength: UInt64
    /// The digests one after another.
    private let digests: [UInt8]

    /// `hexDigests` are 64 hexadecimal digits each, in either case.
    init?(pieceLength: UInt64, hexDigests: [String]) {
        guard pieceLength > 0 else { return nil }
        var digests: [UInt8] = []
        digests.reserveCapacity(hexDigests.count * Self.digestBytes)
        for hex in hexDigests {
            guard let bytes = Self.bytes(ofHex: hex) else { return nil }
            digests += bytes
        }
        self.pieceLength = pieceLength
        self.digests = digests
    }

    public var count: Int { digests.count / Self.digestBytes }

    /// How many pieces a file of `size` bytes has.
    public static func count(forSize size: UInt64, pieceLength: UInt64) -> UInt64 {
        size.unitsRoundedUp(of: pieceLength)
    }

    /// The bytes of piece `index` in a file of `size` bytes.
    public func range(ofPiece index: Int, fileSize size: UInt64) -> Range<UInt64> {
        let start = UInt64(index) * pieceLength
        return start..<min(size, start + pieceLength)
    }

    /// The pieces holding any of `bytes` in a file of `size` bytes.
    public func indices(covering bytes: Range<UInt64>, fileSize size: UInt64) -> Range<Int> {
        guard !bytes.isEmpty, bytes.lowerBound < size else { return 0..<0 }
        let last = Int((min(bytes.upperBound, size) - 1) / pieceLength)
        return Int(bytes.lowerBound / pieceLength)..<min(last + 1, count)
    }

    /// `bytes` widened to the whole pieces they fall in.
    public func aligned(_ bytes: Range<UInt64>, fileSize size: UInt64) -> Range<UInt64> {
        let indices = indices(covering: bytes, fileSize: size)
        guard let last = indices.last else { return bytes }
        return range(ofPiece: indices.lowerBound, fileSize: size).lowerBound..<range(ofPiece: last, fileSize: size).upperBound
    }

    /// The 32 bytes of piece `index`'s SHA-256.
    public func digest(ofPiece index: Int) -> ArraySlice<UInt8> {
        digests[index * Self.digestBytes..<(index + 1) * Self.digestBytes]
    }

    /// Piece `index`'s SHA-256 as 64 lowercase hexadecimal digits.
    public func hexDigest(ofPiece index: Int) -> String {
        digest(ofPiece: index).lowercaseHex
    }

    private static func bytes(ofHex hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count == digestBytes * 2 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digestBytes)
        for pair in stride(from: 0, to: digits.count, by: 2) {
            guard let high = PercentDecoding.hexValue(digits[pair]), let low = PercentDecoding.hexValue(digits[pair + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }
}
