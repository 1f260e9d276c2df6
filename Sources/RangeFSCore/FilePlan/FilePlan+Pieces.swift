import Foundation

/// Piece hashes (Metalink `<pieces>`): where the manifest gives them, bytes reach readers and
/// the bitmap only once the piece they are in matched its SHA-256. Blocks whose pieces are not
/// checked yet stay among the written bytes (`partial`), where no request asks for them again
/// and no reader is answered from them; a piece whose bytes are all written is hashed by the
/// shell (`.verifyPiece`), and a bad one is forgotten, the source that wrote it dropped for this
/// file, and fetched again from another. Without piece hashes nothing here applies.
extension FilePlan {
    /// The manifest's piece hashes when they fit a file of `size` bytes; else nil, and why:
    /// hashes for another size can never match (the whole-file sha256, if any, still checks).
    static func usablePieces(_ given: PieceHashes?, fileSize size: UInt64) -> (pieces: PieceHashes?, refusal: String?) {
        guard let given, UInt64(given.count) != PieceHashes.count(forSize: size, pieceLength: given.pieceLength) else {
            return (given, nil)
        }
        return (nil, "the manifest's \(given.count) piece hashes of \(given.pieceLength) bytes do not fit its size of \(size) bytes; they are not used")
    }

    /// The pieces overlapping `bytes` (none without piece hashes).
    func pieceIndices(covering bytes: Range<UInt64>) -> Range<Int> {
        pieces?.indices(covering: bytes, fileSize: layout.fileSize) ?? 0..<0
    }

    /// True when every piece overlapping `bytes` matched its hash (always without piece hashes).
    func piecesVerified(covering bytes: Range<UInt64>) -> Bool {
        pieceIndices(covering: bytes).allSatisfy(isPieceVerified)
    }

    /// A piece matched its hash in this version, or all its blocks are available (blocks become
    /// available only once their pieces matched, also before a remount).
    func isPieceVerified(_ index: Int) -> Bool {
        guard let pieces else { return true }
        if verifiedPieces.contains(index) { return true }
        let blocks = layout.blocks(covering: pieces.range(ofPiece: index, fileSize: layout.fileSize))
        return available.firstMissing(in: blocks) == nil
    }

    /// `bytes` widened to whole pieces: what a reader must have fetched to be answered.
    func pieceAligned(_ bytes: Range<UInt64>) -> Range<UInt64> {
        pieces?.aligned(bytes, fileSize: layout.fileSize) ?? bytes
    }

    /// The pieces around `bytes` (just written) whose bytes are all written now: each is hashed.
    mutating func piecesToVerify(touching bytes: Range<UInt64>) -> [Action] {
        guard let pieces else { return [] }
        var actions: [Action] = []
        for index in pieceIndices(covering: bytes) where verifyingPieces[index] == nil && !isPieceVerified(index) {
            let range = pieces.range(ofPiece: index, fileSize: layout.fileSize)
            guard isWritten(range) else { continue }
            verifyingPieces[index] = nextVerificationToken
            actions.append(.verifyPiece(index, range, expected: Array(pieces.digest(ofPiece: index)), token: nextVerificationToken))
            nextVerificationToken += 1
        }
        return actions
    }

    /// What hashing a piece found.
    enum PieceCheck {
        case matched
        /// The bytes' SHA-256 as hex.
        case mismatched(String)
        /// The data file could not be read back: the piece is fetched again, no source blamed.
        case unreadable(String)
    }

    /// Piece `index` was hashed (`token` says which request this answers): a match makes its
    /// whole blocks available and answers its readers; a mismatch forgets its bytes, drops the
    /// source that wrote it (each is backed off when several did) and asks for it again.
    mutating func pieceChecked(_ index: Int, token: Int, _ check: PieceCheck, now: ContinuousClock.Instant) -> [Action] {
        guard let pieces, verifyingPieces[index] == token else { return [] }
        verifyingPieces[index] = nil
        let range = pieces.range(ofPiece: index, fileSize: layout.fileSize)
        let writers = pieceWriters.removeValue(forKey: index) ?? []
        guard case .matched = check else {
            return pieceRejected(index, range: range, check: check, writers: writers, now: now)
        }
        verifiedPieces.insert(index)
        var completed: UInt64 = 0
        for block in layout.blocks(covering: range) where !available.contains(block) {
            let blockBytes = layout.byteRange(ofBlock: block)
            guard partial[block] == [blockBytes], piecesVerified(covering: blockBytes) else { continue }
            available.insert(block)
            partial[block] = nil
            completed += UInt64(blockBytes.count)
        }
        // Pieces whose blocks are all available are known to be right without an entry here.
        verifiedPieces = verifiedPieces.filter { piece in
            available.firstMissing(in: layout.blocks(covering: pieces.range(ofPiece: piece, fileSize: layout.fileSize))) != nil
        }
        var actions = answerWaiters(overlapping: range)
        if completed > 0 {
            actions.append(.cachedBytes(Int64(completed)))
            uncommitted(at: now)
        }
        actions += commitIfDue(now: now)
        return actions
    }

    private mutating func pieceRejected(_ index: Int, range: Range<UInt64>, check: PieceCheck, writers: Set<Int>,
                                        now: ContinuousClock.Instant) -> [Action] {
        var forgotten: UInt64 = 0
        for block in layout.blocks(covering: range) where !durable.contains(block) {
            forgotten += forgetBlock(block)
        }
        var actions: [Action] = forgotten > 0 ? [.cachedBytes(-Int64(forgotten))] : []
        let bytes = "piece \(index) (bytes \(range.lowerBound)-\(range.upperBound - 1))"
        switch check {
        case .matched:
            return actions
        case .unreadable(let why):
            lastFailure = why
            actions.append(.log(.error, "\(name): cannot check \(bytes): \(why); fetching it again"))
        case .mismatched(let actual):
            let why = "\(bytes) does not match its sha-256 (got \(actual))"
            if writers.count == 1, let writer = writers.first {
                actions += dropSource(writer, because: why, forgetBytes: true)
            } else {
                // Several sources wrote into it: none is known to be the bad one.
                actions.append(.log(.warning, "\(name): \(why); it came from several sources, each rests"))
                for writer in writers.sorted() { sources.backOff(writer, after: .protocolViolation(why), now: now, policy: policy) }
            }
            if sources.allDropped { return actions + noSourceLeft() }
        }
        return actions + refetchForOrphanedWaiters()
    }

    /// Forgets what block `block` holds (it is not durable): its bytes are fetched again, and
    /// the pieces it holds part of are checked again once they are. Returns the bytes it counted.
    mutating func forgetBlock(_ block: Int) -> UInt64 {
        let blockBytes = layout.byteRange(ofBlock: block)
        for piece in pieceIndices(covering: blockBytes) {
            verifiedPieces.remove(piece)
            verifyingPieces[piece] = nil
        }
        partial[block] = nil
        guard available.contains(block) else { return 0 }
        available.remove(block)
        if committing { forgottenWhileCommitting.append(block) }
        return UInt64(blockBytes.count)
    }

    /// Every piece check is forgotten with the bytes it was about (a rolled back commit, a
    /// version given up, eviction): what is available stays known to be right.
    mutating func forgetPieceChecks() {
        verifiedPieces = []
        verifyingPieces = [:]
        pieceWriters = [:]
    }
}
