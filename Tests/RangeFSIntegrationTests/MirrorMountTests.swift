import FaultServer
import Foundation
import RangeFSCore
import Testing

/// A Metalink whose mirrors go wrong in every way at once, mounted and read by ordinary tools.
extension RangeFSIntegrationTests {
    @Test("mirrors: a Metalink file whose first URL refuses connections, second mirror has another size and third serves corrupted pieces reads byte-exact with cat and sha256sum; status and user.rangefs.sources name each bad mirror and why")
    func metalinkMirrorsFailOverAndCheckPieces() throws {
        let data = RandomBytes.make(count: 3 << 20, seed: 0x5101)
        let pieceLength = 256 * 1024
        var corrupted = data
        // Every piece is corrupted: whichever the copy serves first (a file's requests spread
        // over its mirrors) is caught.
        for start in stride(from: 0, to: data.count, by: pieceLength) {
            for index in (start + 1000)..<(start + 1100) { corrupted[index] ^= 0x5A }
        }
        let refusing = try FaultServer()
        let refusingURL = refusing.url("big.bin")
        _ = refusing.stop()
        let servers = try (0..<3).map { _ in try FaultServer() }
        defer { for server in servers { _ = server.stop() } }
        servers[0].publish("big.bin", bytes: Array(data.prefix(2 << 20)))
        servers[1].publish("big.bin", bytes: corrupted)
        servers[2].publish("big.bin", bytes: data)

        let pieces = try stride(from: 0, to: data.count, by: pieceLength).map { start in
            try #require(Digest.sha256(Array(data[start..<min(data.count, start + pieceLength)])))
        }
        let whole = try #require(Digest.sha256(data))
        let urls = [refusingURL] + servers.map { $0.url("big.bin") }
        let manifest = """
        <?xml version="1.0" encoding="UTF-8"?>
        <metalink xmlns="urn:ietf:params:xml:ns:metalink">
          <file name="big.bin">
            <size>\(data.count)</size>
            <hash type="sha-256">\(whole)</hash>
            <pieces length="\(pieceLength)" type="sha-256">
        \(pieces.map { "      <hash>\($0)</hash>" }.joined(separator: "\n"))
            </pieces>
        \(urls.enumerated().map { "    <url priority=\"\($0.offset + 1)\">\($0.element.absoluteString)</url>" }.joined(separator: "\n"))
          </file>
        </metalink>
        """
        let mount = try fx.prepare(manifest: manifest, name: "mirrors.meta4", options: Fixture.readsOnly)
        try mount.mount()
        let path = mount.path("big.bin")

        let read = Reading.whole(path)
        #expect(read.succeeded && read.bytes == Data(data), "cat: \(read)\(Check.daemonLog(mount))")
        #expect(SHA256.of(path).hash == whole)
        #expect(!servers[1].requests(for: "big.bin").filter { $0.method == "GET" && $0.bodyBytesSent > 0 }.isEmpty,
                "the corrupted copy served bytes: it was caught, not avoided")

        // The refusing URL is asked a few times (a refusal may be brief) before it is dropped.
        func sourceLines() -> [String] {
            (XAttr.get(path, "user.rangefs.sources") ?? "").split(separator: "\n").map(String.init)
        }
        Poll.until(seconds: 20, every: 0.1) { sourceLines().first?.contains("dropped") == true }
        let lines = sourceLines()
        try #require(lines.count == 4, "user.rangefs.sources: \(lines)\(Check.daemonLog(mount))")
        #expect(lines[0].hasPrefix("\(urls[0].absoluteString) dropped:") && lines[0].contains("onnect"), "\(lines[0])")
        #expect(lines[1] == "\(urls[1].absoluteString) dropped: its size is \(2 << 20) bytes where the file has \(data.count)", "\(lines[1])")
        let caught = (0..<(data.count / pieceLength)).first {
            lines[2].hasPrefix("\(urls[2].absoluteString) dropped: piece \($0) (bytes \($0 * pieceLength)-\(($0 + 1) * pieceLength - 1)) does not match its sha-256")
        }
        #expect(caught != nil, "\(lines[2])")
        #expect(lines[3].hasPrefix("\(urls[3].absoluteString) ok"), "\(lines[3])")

        let status = try #require(mount.status().status)
        #expect(status.files.first?.sources?.map(\.state) == [.dropped, .dropped, .dropped, .ok], "\(status)")
        let text = mount.statusText().stdout
        #expect(text.contains("    \(urls[1].absoluteString) dropped: its size is"), "status: \(text)")
        #expect(!mount.logLines(containing: "dropped for this file", "piece \(caught ?? 0)").isEmpty, "the log says why\(Check.daemonLog(mount))")
    }
}
