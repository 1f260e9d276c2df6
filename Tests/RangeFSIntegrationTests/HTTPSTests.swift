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
}
