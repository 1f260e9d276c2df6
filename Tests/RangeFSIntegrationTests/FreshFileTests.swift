import Foundation
import Testing

/// Files a real Apache names with weak validators because they were written within the last
/// second: a weak ETag, and a date it will not honour in `If-Range`; a second later the same
/// file has strong ones. The test controls Apache's view through the files' mtimes (ahead of
/// the clock: fresh; an hour back: strong), never by waiting.
extension RangeFSIntegrationTests {
    /// One request as `ListingServer.accessLog` records it.
    struct ApacheRequest {
        var method: String
        var path: String
        var status: Int
        var bodyBytes: Int
        var range: String?
        var ifRange: String?

        init?(_ line: Substring) {
            let quoted = line.split(separator: "\"", omittingEmptySubsequences: false)
            let fields = (quoted.first ?? "").split(separator: " ")
            guard fields.count == 4, quoted.count >= 5, let status = Int(fields[2]), let bytes = Int(fields[3]) else { return nil }
            method = String(fields[0])
            path = String(fields[1])
            self.status = status
            bodyBytes = bytes
            range = quoted[1] == "-" ? nil : String(quoted[1])
            ifRange = quoted[3] == "-" ? nil : String(quoted[3])
        }

        static func all(in log: URL) -> [ApacheRequest] {
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap(ApacheRequest.init)
        }
    }

    @Test("Apache: files written a moment ago read byte-exact through their W/ → strong step, and a 4 KiB read of another 20 MB file fetches a little of it, also after a remount")
    func apacheFreshFilesCondemnNeitherThemselvesNorTheServer() throws {
        let tree = try Scratch.makeDir("fresh-tree")
        let freshNames = ["fresh-1.bin", "fresh-2.bin", "fresh-3.bin"]
        var contents: [String: [UInt8]] = [:]
        for (index, name) in freshNames.enumerated() {
            contents[name] = RandomBytes.make(count: 1 << 20, seed: UInt64(0xF5E5 + index))
        }
        for (index, name) in ["big-a.bin", "big-b.bin"].enumerated() {
            contents[name] = RandomBytes.make(count: 20_000_000, seed: UInt64(0xB16 + index))
        }
        for (name, bytes) in contents { try Data(bytes).write(to: tree.appendingPathComponent(name)) }
        // Modified after the moment of every request: Apache sends a weak ETag and, as
        // Last-Modified, the request's own time, a date it refuses in If-Range.
        let setModified = { (date: Date) in
            for name in freshNames {
                try FileManager.default.setAttributes([.modificationDate: date], ofItemAtPath: tree.appendingPathComponent(name).path)
            }
        }
        try setModified(Date().addingTimeInterval(3600))
        // The big files are an hour old, to the second: strong ETags, which If-Range carries.
        let hourAgo = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - 3600).rounded(.down))
        for name in ["big-a.bin", "big-b.bin"] {
            try FileManager.default.setAttributes([.modificationDate: hourAgo], ofItemAtPath: tree.appendingPathComponent(name).path)
        }
        let server = try ListingServer(.apache, serving: tree)
        defer { server.stop() }
        let log = try #require(server.accessLog)
        let base = server.baseURL + "/sized/"
        let head = Command.run(["curl", "-sI", base + "fresh-1.bin"])
        #expect(head.stdout.contains("ETag: W/\""), "the premise: Apache names a fresh file weakly\n\(head)")

        let cache = try fx.makeCacheDir()
        let mount = try fx.prepare(source: base, cacheDir: cache, options: Fixture.readsOnly)
        try mount.mount()
        for name in freshNames {
            let bytes = try #require(contents[name])
            for offset in [0, 600_000] {
                let out = Reading.range(mount.path(name), offset: offset, length: 65_536)
                #expect(out.succeeded && out.bytes == Data(bytes[offset..<(offset + 65_536)]),
                        "\(name) at \(offset) while fresh: \(out)\(Check.daemonLog(mount))")
            }
        }
        // A second later, as far as Apache can tell: the same ETag, strong now.
        try setModified(Date().addingTimeInterval(-3600))
        let strong = Command.run(["curl", "-sI", base + "fresh-1.bin"])
        #expect(strong.stdout.contains("ETag: \"") && !strong.stdout.contains("ETag: W/"), "the premise: now strong\n\(strong)")
        for name in freshNames {
            let bytes = try #require(contents[name])
            let out = Reading.whole(mount.path(name))
            #expect(out.succeeded && out.bytes == Data(bytes),
                    "\(name) through its W/ → strong step: \(out)\(Check.daemonLog(mount))")
        }

        let bigBytes = { (name: String) in
            ApacheRequest.all(in: log).filter { $0.method == "GET" && $0.path == "/sized/" + name }.reduce(0) { $0 + $1.bodyBytes }
        }
        let readAndCount = { (mount: Mount, name: String) -> Int in
            let offset = 10_000_000
            let out = Reading.range(mount.path(name), offset: offset, length: 4096)
            #expect(out.succeeded && out.bytes == Data(contents[name]![offset..<(offset + 4096)]),
                    "4 KiB of \(name): \(out)\(Check.daemonLog(mount))")
            // Apache logs a request once it has ended.
            #expect(Poll.until(seconds: 10) { bigBytes(name) > 0 }, "\(name) in the access log")
            return bigBytes(name)
        }
        let before = readAndCount(mount, "big-a.bin")
        #expect(before < 4_000_000, "a 4 KiB read of a 20 MB file fetched \(before) bytes\(Check.daemonLog(mount))")
        #expect(mount.unmount().succeeded)

        let again = try fx.prepare(source: base, cacheDir: cache, options: Fixture.readsOnly)
        try again.mount()
        let after = readAndCount(again, "big-b.bin")
        #expect(after < 4_000_000, "after a remount, a 4 KiB read of a 20 MB file fetched \(after) bytes\(Check.daemonLog(again))")
        let whole = ApacheRequest.all(in: log).filter { $0.method == "GET" && $0.status == 200 && $0.path.hasSuffix(".bin") }
        #expect(whole.isEmpty, "no file was fetched as one stream: \(whole.map { "\($0.path) \($0.range ?? "-") \($0.ifRange ?? "-")" })")
        let weakInIfRange = ApacheRequest.all(in: log).filter { $0.ifRange?.hasPrefix("W/") == true }
        #expect(weakInIfRange.isEmpty, "a weak ETag went into If-Range")
        print("Apache fresh files: \(before) bytes fetched for 4 KiB of big-a.bin, \(after) for big-b.bin after the remount; "
              + "\(ApacheRequest.all(in: log).count) requests logged")
        #expect(again.unmount().succeeded)
    }
}
