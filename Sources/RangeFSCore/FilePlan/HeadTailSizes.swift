/// How many bytes of a file's start (its head) and of its end (its tail) background work
/// fetches before it completes any file: where tags and stream headers live, which media
/// servers and taggers read from every file of a library (`FilePlan+Heads`). The plan widens
/// both to whole blocks.
struct HeadTailSizes: Sendable, Equatable {
    var head: UInt64
    var tail: UInt64

    /// More than this is never learned for a head or a tail: an MP4's `moov` can take several
    /// MiB, and a reader that needs more than this is reading the file, not its tags.
    static let learnedCap: UInt64 = 4 << 20

    /// For file types not in `byType`: a header and an ID3v1/APE tag or an index at the end.
    static let generic = HeadTailSizes(head: 64 << 10, tail: 64 << 10)

    /// What each file type needs before anything was learned about it (by lowercased extension).
    static let byType: [String: HeadTailSizes] = {
        var table: [String: HeadTailSizes] = [:]
        func add(_ types: [String], head: UInt64, tail: UInt64) {
            for type in types { table[type] = HeadTailSizes(head: head, tail: tail) }
        }
        // ID3v2 (often with a cover of 100–500 KiB), FLAC's metadata blocks and picture, Ogg's
        // comment header, ASF's header object come first; ID3v1 (128 bytes), APEv2, the last Ogg
        // page (the duration) at the end.
        add(["mp3", "flac", "ogg", "oga", "opus", "spx", "wma", "wmv", "asf"], head: 256 << 10, tail: 64 << 10)
        // MP4: `moov` sits at either end, with the cover inside it; a video's is larger.
        add(["m4a", "m4b", "m4p", "m4r", "alac"], head: 512 << 10, tail: 256 << 10)
        add(["mp4", "m4v", "mov", "3gp"], head: 1 << 20, tail: 1 << 20)
        // Matroska: header, tracks and seek head first, cues and often tags last; AVI's index last.
        add(["mkv", "mka", "webm", "avi"], head: 256 << 10, tail: 256 << 10)
        // APEv2 tags, with their cover, at the end; DSF points at an ID3v2 tag at its end.
        add(["ape", "wv", "mpc", "dsf"], head: 64 << 10, tail: 256 << 10)
        return table
    }()

    /// The defaults for a file type (`fileType(ofName:)`).
    static func defaults(forType type: String) -> HeadTailSizes {
        byType[type] ?? generic
    }

    /// A file name's type for these sizes: its extension, lowercased; "" for none, or for one
    /// that does not look like a type (over 8 characters, not letters and digits), so odd
    /// names do not each learn sizes of their own.
    static func fileType(ofName name: String) -> String {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return "" }
        let type = name[name.index(after: dot)...].lowercased()
        guard (1...8).contains(type.count), type.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else { return "" }
        return type
    }

    /// What is learned after `seen` (one first scan, `FirstScan`), from what was learned
    /// before: a running maximum with decay, each size rising at once to a larger need and
    /// falling by an eighth of the difference towards a smaller one. One file with a huge
    /// cover does not hold every later head high for long; a type whose files need more is
    /// served at once. Both are capped at `learnedCap`.
    func learning(_ seen: HeadTailSizes) -> HeadTailSizes {
        func step(_ learned: UInt64, _ seen: UInt64) -> UInt64 {
            min(Self.learnedCap, seen >= learned ? seen : learned - (learned - seen) / 8)
        }
        return HeadTailSizes(head: step(head, seen.head), tail: step(tail, seen.tail))
    }
}
