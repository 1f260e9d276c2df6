import Foundation
import Testing

extension RangeFSIntegrationTests {
    /// Over HTTP/2 libcurl would carry every transfer to the server as a stream of one
    /// connection: read-ahead would run at one connection's pace and a reader's request would
    /// queue behind another's bulk bytes. Each transfer gets a connection of its own instead, as
    /// over plain http.
    @Test("https: a reader's requests spread over connections of their own (HTTP/2 not multiplexed onto one), byte-exact")
    func httpsRequestsHaveConnectionsOfTheirOwn() throws {
        let file = fx.data.file("big.bin")
        let server = try TLSNginx(serving: fx.data.dir)
        let mount = try fx.mount([ManifestLine(path: "big.bin", url: server.baseURL + "/big.bin")],
                                 options: Fixture.readsOnly + ["--ca-file", server.caFile])
        let length = 32 << 20
        let read = Reading.range(mount.path("big.bin"), offset: 0, length: length)
        let original = try file.bytes(offset: 0, length: length)
        #expect(read.bytes == original, "the first 32 MiB should read byte-exact: \(read)\(Check.daemonLog(mount))")

        let protocols = server.protocols()
        try #require(!protocols.isEmpty, "nginx logged no request")
        #expect(protocols.allSatisfy { $0 == "HTTP/2.0" }, "every request should speak HTTP/2 (the server offers it): \(protocols)")
        let ranges = server.accessLog.entries(for: "/big.bin").filter { $0.range != nil }
        let connections = Set(ranges.map(\.connection))
        #expect(ranges.count >= 4, "read-ahead should have sent several range requests: \(ranges)")
        #expect(connections.count >= 2, "the range requests should not share one connection: \(ranges)")
    }

    /// A listing's size probes are many small requests at once: over HTTP/2 they go as streams of
    /// one shared connection (one handshake, many at once), while reads keep connections of their own.
    @Test("https: ls -l of unsized files probes them on one shared HTTP/2 connection, which reads never use; reads byte-exact")
    func httpsListingProbesShareOneConnection() throws {
        let dir = try Scratch.makeDir("https-listing")
        defer { Scratch.remove(dir) }
        let count = 40
        let names = (0..<count).map { String(format: "f%02d.bin", $0) }
        for (index, name) in names.enumerated() {
            try Data(repeating: UInt8(index), count: 1000 + index).write(to: dir.appendingPathComponent(name))
        }
        let server = try TLSNginx(serving: dir)
        let mount = try fx.mount(names.map { ManifestLine(path: "d/\($0)", url: server.baseURL + "/" + $0) },
                                 options: ["--prefetch", "none", "--ca-file", server.caFile])
        let listing = Command.run(["ls", "-l", mount.path("d")], timeout: 120)
        Check.succeeded(listing, "ls -l")
        for (index, name) in names.enumerated() {
            #expect(listing.stdout.contains(" \(1000 + index) ") && listing.stdout.contains(name),
                    "ls -l should show \(name) with its size \(1000 + index): \(listing.stdout)\(Check.daemonLog(mount))")
        }
        let probes = server.accessLog.entries().filter { $0.method == "HEAD" }
        #expect(probes.count >= count, "each file's size should have been probed: \(probes)")
        let perConnection = Dictionary(grouping: probes, by: \.connection).mapValues(\.count)
        let busiest = perConnection.values.max() ?? 0
        #expect(busiest >= count / 2, "most probes should share one connection (\(perConnection))")
        #expect(server.protocols().allSatisfy { $0 == "HTTP/2.0" }, "the server offers HTTP/2: \(server.protocols())")

        let mark = server.accessLog.mark()
        let bytes = try Data(contentsOf: URL(fileURLWithPath: mount.path("d/f07.bin")))
        #expect(bytes == Data(repeating: 7, count: 1007), "f07.bin should read byte-exact\(Check.daemonLog(mount))")
        let reads = server.accessLog.entries(since: mark).filter { $0.method == "GET" }
        try #require(!reads.isEmpty, "the read should have asked the server: \(reads)")
        let shared = perConnection.filter { $0.value == busiest }.keys
        #expect(reads.allSatisfy { !shared.contains($0.connection) }, "a read never goes on the probes' shared connection: \(reads)")
    }

    /// A Subsonic mount signs in (`ping`) through its own client, as a listing goes: over https a
    /// new connection costs two round trips, and the mount's first listing finds the one the ping
    /// opened. The server is nginx serving Supysonic's captured replies as files (it answers
    /// every query of a path alike): the ping's, and the root listing the mount asks before it
    /// is mounted.
    @Test("https: a Subsonic mount's sign-in and its first listing go on one connection")
    func httpsSubsonicSignInAndFirstListingShareAConnection() throws {
        let root = try Scratch.makeDir("https-subsonic")
        defer { Scratch.remove(root) }
        let captured = RangeFSBinary.packageRoot.appendingPathComponent("Tests/Fixtures/subsonic")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("rest"), withIntermediateDirectories: true)
        for (file, call) in [("ping.json", "ping.view"), ("getArtists.json", "getArtists.view")] {
            try FileManager.default.copyItem(at: captured.appendingPathComponent(file), to: root.appendingPathComponent("rest/\(call)"))
        }
        let server = try TLSNginx(serving: root)
        let password = root.appendingPathComponent("password")
        try Data("sesame\n".utf8).write(to: password)
        let mount = try fx.prepare(source: "subsonic+https://alice@127.0.0.1:\(server.port)/",
                                   options: ["--prefetch", "none", "--password-file", password.path, "--ca-file", server.caFile])
        try mount.mount()
        defer { _ = mount.unmount() }
        let asked = server.accessLog.entries().filter { ["/rest/ping.view", "/rest/getArtists.view"].contains($0.path) }
        #expect(asked.map(\.path).first == "/rest/ping.view" && asked.map(\.path).contains("/rest/getArtists.view"),
                "the mount should ping, then list the artists: \(asked)\(Check.daemonLog(mount))")
        #expect(Set(asked.map(\.connection)).count == 1, "the ping and the listing should share one connection: \(asked)")
    }
}
