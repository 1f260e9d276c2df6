import FaultServer
import Foundation
import Testing

/// Streaming read-ahead: a player reading in real time over a link a few times faster than
/// its bitrate must not wait for the network once it has started.
extension RangeFSIntegrationTests {
    @Test("a real-time reader of a 192 kb/s MP3 served by nginx at 4x its bitrate sees at most 2 reads over 50 ms after the first second (--prefetch none: read-ahead alone)")
    func streamingReadAheadKeepsAPlayerFed() throws {
        let stream = try StreamData.shared
        // 96 KiB/s per request, about 4x the 24,000 B/s of the audio.
        let server = try NginxServer(serving: stream.dir, slowRate: "96k")
        defer { server.stop() }
        try playStream(url: server.slowURL(StreamData.name), label: "nginx 96 KiB/s")
        server.accessLog.waitUntilQuiet(timeout: 10)
        let requests = server.accessLog.entries()
        print("streaming (nginx 96 KiB/s): \(requests.count) requests:\n  " + requests.map(\.description).joined(separator: "\n  "))
    }

    @Test("the same real-time reader over a distant link (40 ms before every response, 96 KiB/s) sees at most 2 reads over 50 ms after the first second")
    func streamingReadAheadOverDistantLink() throws {
        let stream = try StreamData.shared
        let server = try FaultServer()
        let bytes = try [UInt8](Data(contentsOf: stream.file.url))
        server.publish(StreamData.name, bytes: bytes)
        server.configure(StreamData.name, PathOptions(bytesPerSecond: 96 * 1024, latency: .milliseconds(40)))
        try playStream(url: server.url(StreamData.name).absoluteString, label: "40 ms, 96 KiB/s")
        print("streaming (40 ms, 96 KiB/s): \(server.requests.count) requests")
    }

    /// Mounts `url` with `--prefetch none` (so only read-ahead helps), plays 30 s of it in
    /// real time from a cold cache (44 reads of 16 KiB, one every 0.68 s), unmounts, prints
    /// and judges the read latencies.
    @discardableResult
    func playStream(url: String, label: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> RealTimeReader.Report {
        let stream = try StreamData.shared
        let mount = try fx.mount([ManifestLine(path: "stream.mp3", url: url)], options: Fixture.readsOnly)
        let config = RealTimeReader.Configuration(seconds: 30, bytesPerSecond: StreamData.bytesPerSecond,
                                                  original: stream.file.url.path)
        let report = RealTimeReader.play(path: mount.path("stream.mp3"), configuration: config)
        print("streaming (\(label)): \(report.summary)")
        let log = mount.logTail()
        mount.unmount()

        #expect(report.failure == nil, "\(report)\n--- daemon log ---\n\(log)", sourceLocation: sourceLocation)
        #expect(!report.timedOut, "the reader did not finish in time:\n\(report)", sourceLocation: sourceLocation)
        #expect(report.judged.count >= 40, "too few reads were judged:\n\(report)", sourceLocation: sourceLocation)
        #expect(report.stalls.count <= 2,
                "reads over 50 ms after the first second: \(report.stalls.count) (bound 2; the target is 0)\n\(report)",
                sourceLocation: sourceLocation)
        if let worst = report.worst {
            print("streaming (\(label)): worst read after the first second \(formatMillis(worst.latency)), \(report.stalls.count) over 50 ms")
        }
        return report
    }
}
