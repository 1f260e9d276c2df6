import Foundation
import Testing

/// Names, sizes and bytes seen through the mount.
extension RangeFSIntegrationTests {
    @Test("ls -la and stat show every name with its real size; directories come from paths")
    func listingShowsNamesAndSizes() throws {
        let mount = try fx.mount(fx.standardEntries)
        let layout = fx.standardLayout

        // Every directory the paths imply, the root included.
        var directories: Set<String> = [""]
        for placed in layout {
            var parts = placed.path.split(separator: "/").dropLast()
            while !parts.isEmpty {
                directories.insert(parts.joined(separator: "/"))
                parts = parts.dropLast()
            }
        }
        #expect(directories.count == 4, "root, blocks, blocks/deeper, podcast")

        for dir in directories.sorted() {
            let r = Command.run(["ls", "-la", "--time-style=+%s", mount.path(dir)], timeout: 30)
            guard Check.succeeded(r, "ls -la \(dir.isEmpty ? "/" : dir)", mount: mount) else { continue }
            let listed = LsListing.parse(r.stdout)
            let prefix = dir.isEmpty ? "" : dir + "/"
            var expected: [String: LsListing.Item] = [:]
            for placed in layout where placed.path.hasPrefix(prefix) {
                let rest = placed.path.dropFirst(prefix.count)
                if let slash = rest.firstIndex(of: "/") {
                    let name = String(rest[..<slash])
                    expected[name] = LsListing.Item(name: name, isDirectory: true, size: nil)
                } else {
                    expected[String(rest)] = LsListing.Item(name: String(rest), isDirectory: false,
                                                            size: placed.file.size)
                }
            }
            let names = Set(listed.map(\.name)).subtracting([".", ".."])
            #expect(names == Set(expected.keys), "ls -la \(dir): names\n\(r.stdout)")
            for item in listed where expected[item.name] != nil {
                let want = expected[item.name]!
                #expect(item.isDirectory == want.isDirectory, "\(dir)/\(item.name): type\n\(r.stdout)")
                if let size = want.size {
                    #expect(item.size == size, "\(dir)/\(item.name): size in ls -la\n\(r.stdout)")
                }
            }
        }

        // stat of every file and directory.
        for placed in layout {
            let r = Command.run(["stat", "-c", "%s|%F", mount.path(placed.path)], timeout: 30)
            guard Check.succeeded(r, "stat \(placed.path)", mount: mount) else { continue }
            let fields = r.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "|")
            #expect(fields.first.flatMap { Int($0) } == placed.file.size, "stat size of \(placed.path): \(r.stdout)")
            #expect(fields.last?.hasPrefix("regular") == true, "stat type of \(placed.path): \(r.stdout)")
        }
        for dir in directories {
            let r = Command.run(["stat", "-c", "%F", mount.path(dir)], timeout: 30)
            Check.succeeded(r, "stat \(dir)", mount: mount)
            #expect(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "directory", "stat type of /\(dir)")
        }
        let missing = Command.run(["stat", mount.path("no-such-file")], timeout: 30)
        #expect(!missing.succeeded && missing.stderr.contains("No such file or directory"),
                "stat of a name not in the manifest: \(missing)")
    }

    @Test("sha256sum, cat and cp through the mount give the original bytes of every file")
    func wholeFilesMatch() throws {
        // sha256sum is the first reader of a fresh cache...
        let first = try fx.mount(fx.standardEntries)
        for placed in fx.standardLayout {
            let (hash, r) = SHA256.of(first.path(placed.path))
            Check.succeeded(r, "sha256sum \(placed.path)", mount: first)
            #expect(hash == placed.file.sha256, "sha256sum of \(placed.path)")
        }
        // ...and cp, then cat, are the first readers of another.
        let second = try fx.mount(fx.standardEntries)
        let out = try Scratch.makeDir("copies")
        defer { Scratch.remove(out) }
        for (i, placed) in fx.standardLayout.enumerated() {
            let copy = out.appendingPathComponent("cp-\(i)").path
            let cp = Command.run(["cp", second.path(placed.path), copy], timeout: 120)
            if Check.succeeded(cp, "cp \(placed.path)", mount: second) {
                #expect(SHA256.of(copy).hash == placed.file.sha256, "cp of \(placed.path)")
            }
            let catCopy = out.appendingPathComponent("cat-\(i)").path
            let cat = Command.run(["sh", "-c", "cat \"$0\" > \"$1\"", second.path(placed.path), catCopy], timeout: 120)
            if Check.succeeded(cat, "cat \(placed.path)", mount: second) {
                #expect(SHA256.of(catCopy).hash == placed.file.sha256, "cat of \(placed.path)")
            }
            try? FileManager.default.removeItem(atPath: copy)
            try? FileManager.default.removeItem(atPath: catCopy)
        }
    }

    @Test("dd at 50 seeded random offsets and lengths (block edges, past EOF) returns the original bytes")
    func randomReadsMatch() throws {
        let mount = try fx.mount(fx.standardEntries)
        let seed: UInt64 = 0x5EED_0001
        var rng = SeededRandom(seed: seed)
        let candidates = fx.standardLayout.filter { $0.file.size > 0 }
        let block = TestData.blockSize
        var mismatches = 0
        for i in 0..<50 {
            let placed = candidates[Int.random(in: 0..<candidates.count, using: &rng)]
            let size = placed.file.size
            let (offset, length): (Int, Int)
            switch i % 5 {
            case 0, 1:   // crosses a block boundary (when the file has one)
                let boundaries = max(1, size / block)
                let edge = block * Int.random(in: 1...boundaries, using: &rng)
                offset = max(0, edge - Int.random(in: 1...5000, using: &rng))
                length = Int.random(in: 2...300_000, using: &rng)
            case 2:      // runs past EOF
                offset = max(0, size - Int.random(in: 0...2000, using: &rng))
                length = Int.random(in: 1...100_000, using: &rng)
            case 3:      // starts at or after EOF
                offset = size + Int.random(in: 0...3, using: &rng)
                length = Int.random(in: 1...4096, using: &rng)
            default:     // anywhere
                offset = Int.random(in: 0..<size, using: &rng)
                length = Int.random(in: 1...600_000, using: &rng)
            }
            let r = Check.ddRead(mount.path(placed.path), offset: offset, length: length)
            let what = "read #\(i) (seed \(seed)) of \(placed.path) at \(offset) length \(length)"
            guard Check.succeeded(r, what, mount: mount) else { mismatches += 1; continue }
            let want = try placed.file.bytes(offset: offset, length: length)
            if r.stdoutData != want {
                mismatches += 1
                let firstDiff = zip(r.stdoutData, want).enumerated().first { $0.element.0 != $0.element.1 }?.offset
                Issue.record("\(what): got \(r.stdoutData.count) bytes, want \(want.count); first difference at \(firstDiff.map(String.init) ?? "length")")
            }
        }
        #expect(mismatches == 0)
    }

    @Test("cp of the 100 MiB file after scattered partial reads is byte-identical")
    func bigCopyAfterPartialReads() throws {
        let big = fx.data.file("big.bin")
        let mount = try fx.mount([ManifestLine(path: "big.bin", url: fx.nginx.url("big.bin"))])
        var rng = SeededRandom(seed: 0x5EED_0002)
        for i in 0..<20 {
            let offset = Int.random(in: 0..<big.size, using: &rng)
            let length = Int.random(in: 1...1_500_000, using: &rng)
            let r = Check.ddRead(mount.path("big.bin"), offset: offset, length: length)
            if Check.succeeded(r, "partial read #\(i) at \(offset)+\(length)", mount: mount) {
                #expect(r.stdoutData == (try big.bytes(offset: offset, length: length)), "partial read #\(i) at \(offset)+\(length)")
            }
        }
        let out = try Scratch.makeDir("copy")
        defer { Scratch.remove(out) }
        let copy = out.appendingPathComponent("big.bin").path
        let cp = Command.run(["cp", mount.path("big.bin"), copy], timeout: 300)
        try #require(Check.succeeded(cp, "cp big.bin", mount: mount))
        let cmp = Command.run(["cmp", big.url.path, copy], timeout: 120)
        #expect(cmp.succeeded, "the copy differs from the original: \(cmp)")

        mount.unmount()
        fx.nginx.accessLog.waitUntilQuiet()
        let entries = fx.nginx.accessLog.entries(for: "/big.bin")
        let overlaps = ByteRanges.overlaps(entries.compactMap { $0.servedRange(fileSize: big.size) })
        #expect(overlaps.isEmpty, """
            bytes of big.bin served twice: \(overlaps.prefix(5))
            requests:
            \(entries.map(\.description).joined(separator: "\n"))\(Check.daemonLog(mount))
            """)
    }

    @Test("ffprobe reads the MP3 through the mount while fetching only part of it (--prefetch none)")
    func ffprobeReadsPartOfTheMP3() throws {
        let mp3 = fx.data.file(TestData.mp3Name)
        let mount = try fx.mount([ManifestLine(path: "podcast/episode-01.mp3", url: fx.nginx.url(mp3.name))],
                                 options: Fixture.readsOnly)
        let r = Command.run(["ffprobe", "-v", "error", "-show_entries", "format=duration:stream=codec_name",
                             "-of", "default=noprint_wrappers=1", mount.path("podcast/episode-01.mp3")], timeout: 120)
        try #require(Check.succeeded(r, "ffprobe", mount: mount))
        #expect(r.stdout.contains("codec_name=mp3"), "ffprobe output: \(r.stdout)")
        let duration = r.stdout.split(separator: "\n").first { $0.hasPrefix("duration=") }
            .flatMap { Double($0.dropFirst("duration=".count)) }
        #expect(duration.map { abs($0 - Double(TestData.mp3Seconds)) < 2 } == true,
                "ffprobe duration \(duration.map { "\($0)" } ?? "missing"), want about \(TestData.mp3Seconds)")

        fx.nginx.accessLog.waitUntilQuiet()
        let entries = fx.nginx.accessLog.entries(for: "/" + mp3.name)
        let fetched = ByteRanges.unionSize(entries.compactMap { $0.servedRange(fileSize: mp3.size) })
        print("ffprobe: \(mp3.name) is \(mp3.size) bytes; \(entries.count) requests fetched \(fetched) distinct bytes")
        #expect(fetched > 0, "ffprobe read nothing from the server?")
        #expect(fetched < mp3.size, "ffprobe made the mount fetch the whole file: \(entries)")
    }

    @Test("--block-size 64K: reads match, adjacent missing blocks are one request, requests are page-aligned and no byte is asked twice")
    func blockSizeOption() throws {
        let tail = fx.data.file("tail.bin")
        let blockSize = 65_536
        let mount = try fx.mount([ManifestLine(path: "tail.bin", url: fx.nginx.url("tail.bin"))],
                                 options: ["--block-size", "64K"] + Fixture.readsOnly)
        let r = Check.ddRead(mount.path("tail.bin"), offset: 200_000, length: 10)
        if Check.succeeded(r, "dd", mount: mount) {
            #expect(r.stdoutData == (try tail.bytes(offset: 200_000, length: 10)))
        }
        // One read spanning two missing blocks: adjacent missing blocks are one request.
        // O_DIRECT, so the kernel passes the 128 KiB read on whole instead of splitting
        // it into page-cache read-ahead of its own choosing.
        let log = fx.nginx.accessLog
        let mark = log.mark()
        let span = (4 * blockSize)..<(6 * blockSize)
        let pair = Command.run(["dd", "if=\(mount.path("tail.bin"))", "iflag=direct,skip_bytes", "bs=\(span.count)",
                                "skip=\(span.lowerBound)", "count=1", "status=none"], timeout: 60)
        if Check.succeeded(pair, "dd of blocks 4 and 5", mount: mount) {
            #expect(pair.stdoutData == (try tail.bytes(offset: span.lowerBound, length: span.count)))
        }
        log.waitUntilQuiet()
        let touching = log.entries(for: "/tail.bin", since: mark).filter { entry in
            entry.method == "GET" && entry.requestedRanges(fileSize: tail.size).contains { $0.overlaps(span) }
        }
        #expect(touching.count == 1, "two adjacent missing blocks read at once should be one request: \(touching.map(\.description))")

        #expect(SHA256.of(mount.path("tail.bin")).hash == tail.sha256)
        // The first small read took only its own page; the whole-file read then asked for the
        // rest of that block around it. Every request is page-aligned and no byte came twice.
        log.waitUntilQuiet()
        var served: [Range<Int>] = []
        for entry in fx.nginx.accessLog.entries(for: "/tail.bin") where entry.method == "GET" {
            guard entry.range != "bytes=0-0" else { continue }   // a size probe
            for range in entry.requestedRanges(fileSize: tail.size) {
                #expect(range.lowerBound % 4096 == 0, "range not page-aligned: \(entry)")
                #expect(range.upperBound % 4096 == 0 || range.upperBound == tail.size, "range does not end on a page: \(entry)")
                served.append(range)
            }
        }
        #expect(ByteRanges.overlaps(served).isEmpty, "bytes of tail.bin asked for twice: \(ByteRanges.overlaps(served))")
    }

    @Test("random 4 KiB reads fetch about what they ask for, and a later cp fetches only the rest (--prefetch none)")
    func sparseReadsFetchTheirOwnPages() throws {
        let big = fx.data.file("big.bin")
        let mount = try fx.mount([ManifestLine(path: "big.bin", url: fx.nginx.url("big.bin"))], options: Fixture.readsOnly)
        let log = fx.nginx.accessLog
        let mark = log.mark()
        // 40 reads of 4 KiB at random pages of random blocks, O_DIRECT so the kernel adds no read-ahead.
        var rng = SeededRandom(seed: 0x5EED_0004)
        let blockCount = big.size / TestData.blockSize
        // Three blocks are read twice: random reads that happen to meet in a block stay small too.
        let distinct = Array(Array(0..<blockCount).shuffled(using: &rng).prefix(37))
        let blocks = distinct + distinct.prefix(3)
        for block in blocks {
            let offset = block * TestData.blockSize + 4096 * Int.random(in: 1..<(TestData.blockSize / 4096), using: &rng)
            let r = Command.run(["dd", "if=\(mount.path("big.bin"))", "iflag=direct,skip_bytes", "bs=4096",
                                 "skip=\(offset)", "count=1", "status=none"], timeout: 60)
            if Check.succeeded(r, "4 KiB at \(offset)", mount: mount) {
                #expect(r.stdoutData == (try big.bytes(offset: offset, length: 4096)), "4 KiB at \(offset)")
            }
        }
        log.waitUntilQuiet()
        let sparse = log.entries(for: "/big.bin", since: mark).compactMap { $0.servedRange(fileSize: big.size) }
        let fetched = sparse.reduce(0) { $0 + $1.count }
        print("40 random 4 KiB reads: \(sparse.count) requests, \(fetched) bytes from the server for \(40 * 4096) asked")
        #expect(fetched <= 2 * 40 * 4096, "random 4 KiB reads fetched \(fetched) bytes for \(40 * 4096) asked: \(sparse)")

        let out = try Scratch.makeDir("sparse-copy")
        defer { Scratch.remove(out) }
        let copy = out.appendingPathComponent("big.bin").path
        try #require(Check.succeeded(Command.run(["cp", mount.path("big.bin"), copy], timeout: 300), "cp big.bin", mount: mount))
        #expect(SHA256.of(copy).hash == big.sha256, "the copy differs from the original")
        log.waitUntilQuiet()
        let all = log.entries(for: "/big.bin", since: mark).compactMap { $0.servedRange(fileSize: big.size) }
        #expect(ByteRanges.overlaps(all).isEmpty, "bytes of big.bin served twice: \(ByteRanges.overlaps(all).prefix(5))")
    }
}

/// `ls -la --time-style=+%s` output: `perms links owner group size epoch name`.
enum LsListing {
    struct Item: Equatable {
        let name: String
        let isDirectory: Bool
        let size: Int?
    }

    static func parse(_ text: String) -> [Item] {
        text.split(separator: "\n").compactMap { line in
            let f = line.split(separator: " ", maxSplits: 6, omittingEmptySubsequences: true)
            guard f.count == 7, let size = Int(f[4]) else { return nil }   // skips "total N"
            return Item(name: String(f[6]), isDirectory: f[0].hasPrefix("d"), size: size)
        }
    }
}
