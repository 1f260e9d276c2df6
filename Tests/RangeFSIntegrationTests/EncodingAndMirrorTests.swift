import FaultServer
import Foundation
import RangeFSCore
import Testing

/// Replies whose bodies are not the file's bytes (a content or transfer coding, a length that
/// disagrees with `Content-Range`) never reach the cache; a URL that redirects to mirrors with
/// validators of their own is read from one mirror, and a real change behind it is still seen.
extension RangeFSIntegrationTests {
    // MARK: Encoded and mis-sized replies

    @Test("encoding: a range answered gzip-encoded (Content-Encoding) is not stored; the retry gives the right bytes")
    func encodingGzipRangeRetried() throws {
        let server = try FaultServer()
        let data = RandomBytes.make(count: Self.faultFileSize, seed: 0x6219)
        server.publish("gzip.bin", bytes: data)
        let mount = try fx.mount(server: server, names: ["gzip.bin"])
        server.inject(.gzipContentEncoding, times: 2, for: "gzip.bin", method: "GET")

        let offset = 1 << 20
        let out = Reading.range(mount.path("gzip.bin"), offset: offset, length: 65536)
        #expect(out.succeeded && out.bytes == Data(data[offset..<(offset + 65536)]),
                "read after two gzip-encoded replies: \(out)\(Check.daemonLog(mount))")
        #expect(server.pendingFaults == 0, "the encoded replies were never sent")
        #expect(!mount.logLines(containing: "Content-Encoding: gzip").isEmpty,
                "the refusal of the encoded reply is not in the log\(Check.daemonLog(mount))")
    }

    @Test("encoding: ranges always answered gzip-encoded give EIO with the reason logged; no byte of them is cached or served")
    func encodingGzipAlwaysFails() throws {
        let server = try FaultServer()
        let data = RandomBytes.make(count: Self.faultFileSize, seed: 0x621A)
        server.publish("gzip.bin", bytes: data)
        let mount = try fx.mount(server: server, names: ["gzip.bin"])
        let path = mount.path("gzip.bin")
        server.inject(.gzipContentEncoding, times: 10_000, for: "gzip.bin", method: "GET")

        let out = Reading.range(path, offset: 0, length: 65536)
        #expect(out.failedWithEIO, "a read that only meets encoded replies should fail with EIO: \(out)\(Check.daemonLog(mount))")
        #expect(out.bytes.isEmpty, "served \(out.bytes.count) bytes (starting \(Array(out.bytes.prefix(3)))) from encoded replies")
        #expect(XAttr.get(path, "user.rangefs.cached") == "0", "bytes of encoded replies were cached")
        #expect(!mount.logLines(containing: "Content-Encoding: gzip").isEmpty, "the reason is not in the log\(Check.daemonLog(mount))")
        server.waitUntilQuiet()
        #expect(server.gets("gzip.bin").count >= 2, "the encoded reply was not retried")
    }

    @Test("encoding: Transfer-Encoding: gzip, chunked is not stored; the retry gives the right bytes")
    func encodingGzipTransferCodingRetried() throws {
        let server = try FaultServer()
        let data = RandomBytes.make(count: Self.faultFileSize, seed: 0x621B)
        server.publish("te.bin", bytes: data)
        let mount = try fx.mount(server: server, names: ["te.bin"])
        server.inject(.gzipTransferCoding, for: "te.bin", method: "GET")

        let out = Reading.range(mount.path("te.bin"), offset: 0, length: 65536)
        #expect(out.succeeded && out.bytes == Data(data[0..<65536]),
                "read after a gzip transfer-coded reply: \(out)\(Check.daemonLog(mount))")
        #expect(server.pendingFaults == 0, "the transfer-coded reply was never sent")
    }

    @Test("encoding: bodies longer or shorter than their Content-Range are not stored; the retries give the right bytes")
    func encodingBodyLengthDisagrees() throws {
        let server = try FaultServer()
        let data = RandomBytes.make(count: Self.faultFileSize, seed: 0x621C)
        server.publish("length.bin", bytes: data)
        let mount = try fx.mount(server: server, names: ["length.bin"])
        server.inject(.bodyLengthOff(by: 1000), for: "length.bin", method: "GET")
        server.inject(.bodyLengthOff(by: -1000), for: "length.bin", method: "GET")

        let offset = 2 << 20
        let out = Reading.range(mount.path("length.bin"), offset: offset, length: 65536)
        #expect(out.succeeded && out.bytes == Data(data[offset..<(offset + 65536)]),
                "read after a long and a short body: \(out)\(Check.daemonLog(mount))")
        #expect(server.pendingFaults == 0, "the mis-sized replies were never sent")
        #expect(mount.logLines(containing: "disagrees with Content-Range").count >= 2,
                "both refusals should be logged\(Check.daemonLog(mount))")
    }

    // MARK: Mirrors behind a redirect

    /// `mirrored.bin` redirects to `a/mirrored.bin` and `b/mirrored.bin` in turn; each mirror has
    /// the same bytes and an ETag of its own.
    private func publishMirrors(on server: FaultServer, _ bytes: [UInt8]) {
        server.publish("a/mirrored.bin", bytes: bytes)
        server.publish("b/mirrored.bin", bytes: bytes)
        server.configure("mirrored.bin", PathOptions(redirectsInTurn: [
            server.url("a/mirrored.bin").absoluteString, server.url("b/mirrored.bin").absoluteString,
        ]))
    }

    /// The mirror whose ranges the mount asks for (the one with ranged GETs).
    private func mirrorInUse(_ server: FaultServer) -> String? {
        server.waitUntilQuiet()
        return ["a/mirrored.bin", "b/mirrored.bin"].first { !server.gets($0).filter { $0.range != nil }.isEmpty }
    }

    /// Publishes `bytes` on two mirrors behind `mirrored.bin`, mounts it and reads its first
    /// 64 KiB; returns the mount and which mirror its ranges went to (and the other one).
    private func mountMirrorsAndReadHead(on server: FaultServer, _ bytes: [UInt8]) throws
        -> (mount: Mount, path: String, mirror: String, other: String) {
        publishMirrors(on: server, bytes)
        let mount = try fx.mount(server: server, names: ["mirrored.bin"])
        let path = mount.path("mirrored.bin")
        let head = Reading.range(path, offset: 0, length: 65536)
        #expect(head.succeeded && head.bytes == Data(bytes[0..<65536]), "first read: \(head)")
        let mirror = try #require(mirrorInUse(server), "no ranged GET reached a mirror: \(server.requests)")
        // The read's read-ahead went out in requests of its own: they end before a test changes
        // the mirrors (one sent after a change would find it before the test's reader does).
        #expect(mount.transfersEnded(), "the head read's transfers never ended\(Check.daemonLog(mount))")
        return (mount, path, mirror, mirror == "a/mirrored.bin" ? "b/mirrored.bin" : "a/mirrored.bin")
    }

    /// `mirror` is gone, and the URL now leads only to `other`.
    private func dropMirror(_ mirror: String, keeping other: String, on server: FaultServer) {
        server.remove(mirror)
        server.configure("mirrored.bin", PathOptions(redirectsInTurn: [server.url(other).absoluteString]))
    }

    @Test("mirrors: a URL redirecting to two mirrors with their own ETags reads byte-exact; ranges go to one mirror with its If-Range")
    func mirrorsBehindRedirectReadable() throws {
        let server = try FaultServer()
        let data = RandomBytes.make(count: Self.faultFileSize, seed: 0x3021)
        publishMirrors(on: server, data)
        #expect(server.etag(of: "a/mirrored.bin") != server.etag(of: "b/mirrored.bin"))
        let mount = try fx.mount(server: server, names: ["mirrored.bin"])
        let path = mount.path("mirrored.bin")

        for offset in [3 << 20, 12_345, 1 << 20] {
            let out = Reading.range(path, offset: offset, length: 100_000)
            #expect(out.succeeded && out.bytes == Data(data[offset..<min(data.count, offset + 100_000)]),
                    "read at \(offset): \(out)\(Check.daemonLog(mount))")
        }
        let whole = Reading.whole(path)
        #expect(whole.succeeded && whole.bytes == Data(data), "cat: \(whole)\(Check.daemonLog(mount))")

        let mirror = try #require(mirrorInUse(server), "no ranged GET reached a mirror: \(server.requests)")
        let other = mirror == "a/mirrored.bin" ? "b/mirrored.bin" : "a/mirrored.bin"
        let ranged = server.gets(mirror).filter { $0.range != nil }
        #expect(ranged.allSatisfy { $0.ifRange == server.etag(of: mirror) },
                "ranged GETs of \(mirror) without its ETag in If-Range: \(ranged)")
        #expect(server.gets(other).filter { $0.range != nil && $0.status == 200 }.isEmpty,
                "a ranged GET got a whole body from the other mirror: \(server.gets(other))")
        #expect(mount.logLines(containing: "changed on the server").isEmpty,
                "mirrors of the same bytes were taken for a change\(Check.daemonLog(mount))")
    }

    @Test("mirrors: the mirror in use disappears; reads go on from the other mirror without fetching cached bytes again")
    func mirrorsFailOver() throws {
        let server = try FaultServer()
        let data = RandomBytes.make(count: Self.faultFileSize, seed: 0x3022)
        let (mount, path, mirror, other) = try mountMirrorsAndReadHead(on: server, data)
        dropMirror(mirror, keeping: other, on: server)
        server.resetLog()
        let offset = 3 << 20
        let later = Reading.range(path, offset: offset, length: 65536)
        #expect(later.succeeded && later.bytes == Data(data[offset..<(offset + 65536)]),
                "read after the mirror in use went away: \(later)\(Check.daemonLog(mount))")
        let again = Reading.range(path, offset: 0, length: 65536)
        #expect(again.succeeded && again.bytes == Data(data[0..<65536]), "cached head after the switch: \(again)")
        server.waitUntilQuiet()
        let refetched = server.requests.filter { $0.method == "GET" && $0.requestedRange(size: data.count)?.lowerBound == 0 }
        #expect(refetched.isEmpty, "cached bytes were fetched again after the switch: \(refetched)")
        #expect(mount.logLines(containing: "changed on the server").isEmpty,
                "the switch to another mirror was taken for a change\(Check.daemonLog(mount))")
        let counters = try mount.metricsCounters()
        #expect((counters["rangefs_sources_marked_bad_total"] ?? 0) >= 1, "the metrics count the lost mirror: \(counters)")
    }

    @Test("mirrors: a real change behind the redirect (same size, new ETag at the mirror in use) is seen: a new reader, given nothing of the file yet, reads the new version")
    func mirrorsRealChangeDetected() throws {
        let server = try FaultServer()
        let v1 = RandomBytes.make(count: Self.faultFileSize, seed: 0x3023)
        let v2 = RandomBytes.make(count: Self.faultFileSize, seed: 0x3024)
        let (mount, path, _, _) = try mountMirrorsAndReadHead(on: server, v1)

        server.publish("a/mirrored.bin", bytes: v2)
        server.publish("b/mirrored.bin", bytes: v2)
        let offset = 3 << 20
        // A new open that has read nothing: it has no old bytes to mix with the new ones.
        let changed = Reading.range(path, offset: offset, length: 65536)
        #expect(changed.succeeded && changed.bytes == Data(v2[offset..<(offset + 65536)]),
                "a new reader that meets the changed mirror reads the new version: \(changed)\(Check.daemonLog(mount))")
        #expect(mount.logLines(containing: "changed on the server").count == 1, "the change is seen and logged\(Check.daemonLog(mount))")
        let reopened = Reading.whole(path)
        #expect(reopened.succeeded && reopened.bytes == Data(v2), "reopened after the change: \(reopened)\(Check.daemonLog(mount))")
    }

    @Test("mirrors: the mirror in use goes away and the file behind the redirect has a new size: a new reader, given nothing of the file yet, reads the new version")
    func mirrorsSizeChangeDetected() throws {
        let server = try FaultServer()
        let v1 = RandomBytes.make(count: Self.faultFileSize, seed: 0x3025)
        let v2 = RandomBytes.make(count: Self.faultFileSize + 4096, seed: 0x3026)
        let (mount, path, mirror, other) = try mountMirrorsAndReadHead(on: server, v1)
        server.publish(other, bytes: v2)
        dropMirror(mirror, keeping: other, on: server)
        let changed = Reading.range(path, offset: 3 << 20, length: 65536)
        #expect(changed.succeeded && changed.bytes == Data(v2[(3 << 20)..<((3 << 20) + 65536)]),
                "a new reader of a file that changed size behind the redirect reads the new version: \(changed)\(Check.daemonLog(mount))")
        #expect(mount.logLines(containing: "changed on the server").count == 1, "the change is seen and logged\(Check.daemonLog(mount))")
        let reopened = Reading.whole(path)
        #expect(reopened.succeeded && reopened.bytes == Data(v2), "reopened after the change: \(reopened)\(Check.daemonLog(mount))")
    }
}
