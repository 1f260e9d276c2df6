import Foundation
import Testing

/// Listings as big as a server may make them, through a real mount of pages nginx serves: a
/// page on one line lists as fast as the same page on lines, and a directory with more names
/// than the mount may hold is refused, said in the log, while the mount lives on.
extension RangeFSIntegrationTests {
    /// An nginx autoindex page of `count` files with names `nameLength` long, each link on
    /// its own line as nginx writes it, or all on one line as a minifier leaves it.
    static func generatedListing(count: Int, nameLength: Int, oneLine: Bool) -> String {
        var page = "<html>\r\n<head><title>Index of /d/</title></head>\r\n<body>\r\n<h1>Index of /d/</h1><hr><pre><a href=\"../\">../</a>\r\n"
        let padding = String(repeating: "x", count: max(0, nameLength - 12))
        for index in 0..<count {
            let name = "\(padding)-\(String(format: "%07d", index)).bin"
            page += "<a href=\"\(name)\">\(name)</a> 24-Nov-2026 09:27 \(1000 + index)"
            page += oneLine ? " " : "\r\n"
        }
        return page + "</pre><hr></body>\r\n</html>\r\n"
    }

    /// A directory of the served tree whose listing is `page` (nginx serves `index.html` for it).
    static func writeListing(_ page: String, named name: String, in root: URL) throws {
        let directory = root.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data(page.utf8).write(to: directory.appendingPathComponent("index.html"))
    }

    @Test("listings: a 20 MB listing on one line lists within twice the CPU time of the same listing on lines")
    func aOneLineListingListsAsFastAsOneOnLines() throws {
        let root = try Scratch.makeDir("big-listings")
        let count = 42_000
        for (name, oneLine) in [("lines", false), ("one-line", true)] {
            let page = Self.generatedListing(count: count, nameLength: 230, oneLine: oneLine)
            #expect(page.utf8.count > 20_000_000, "\(page.utf8.count) bytes")
            try Self.writeListing(page, named: name, in: root)
        }
        let server = try NginxServer(serving: root)
        defer { server.stop() }
        var seconds: [String: Double] = [:]
        // Each in a mount of its own (a mount shows every listing it holds after each new one),
        // timed by the CPU the mount used, which other work on the machine does not lengthen.
        for name in ["lines", "one-line"] {
            let mount = try fx.prepare(source: server.url(name) + "/", options: ["--prefetch", "none"])
            try mount.mount(timeout: 300)
            defer { _ = mount.unmount() }
            // The mount lists the top before it returns; `ls` reads what it listed.
            let listed = Command.run(["ls", "-f", "--", mount.path(".")], timeout: 300)
            #expect(listed.succeeded, "\(listed)\(Check.daemonLog(mount))")
            #expect(listed.stdout.split(separator: "\n").count == count + 2, "every name and . and ..")
            let daemon = try #require(mount.daemonPids().first)
            let cpu = try #require(ProcessInfo.cpuSeconds(of: daemon))
            seconds[name] = cpu
        }
        let lines = seconds["lines"]!, oneLine = seconds["one-line"]!
        #expect(oneLine <= 2 * lines, "one line: \(oneLine) s of CPU, on lines: \(lines) s")
    }

    @Test("listings: a directory with more names than --max-listed-entries is refused and said in the log; the mount lives on")
    func aDirectoryPastTheListedEntriesLimitIsRefused() throws {
        let root = try Scratch.makeDir("limited-listings")
        try Self.writeListing(Self.generatedListing(count: 3, nameLength: 20, oneLine: false), named: "small", in: root)
        try Self.writeListing(Self.generatedListing(count: 2_000, nameLength: 20, oneLine: false), named: "huge", in: root)
        let top = "<html><head><title>Index of /</title></head><body><h1>Index of /</h1><hr><pre>"
            + "<a href=\"small/\">small/</a> 24-Nov-2026 09:27 -\r\n<a href=\"huge/\">huge/</a> 24-Nov-2026 09:27 -\r\n</pre></body></html>"
        try Data(top.utf8).write(to: root.appendingPathComponent("index.html"))
        let server = try NginxServer(serving: root)
        defer { server.stop() }
        let mount = try fx.prepare(source: server.baseURL + "/", options: ["--prefetch", "none", "--max-listed-entries", "1000"])
        try mount.mount()
        defer { _ = mount.unmount() }

        let huge = Command.run(["ls", "-f", "--", mount.path("huge")])
        #expect(!huge.succeeded && huge.stderr.contains("Input/output error"), "\(huge)\(Check.daemonLog(mount))")
        #expect(Poll.until(seconds: 10) { mount.log().contains("--max-listed-entries") },
                "the log says why\(Check.daemonLog(mount))")
        let small = Command.run(["ls", "-1", "--", mount.path("small")])
        #expect(small.succeeded && small.stdout.split(separator: "\n").count == 3, "\(small)\(Check.daemonLog(mount))")
        #expect(mount.isMounted)
    }
}
