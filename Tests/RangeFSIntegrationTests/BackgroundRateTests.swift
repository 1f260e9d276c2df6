import Foundation
import Testing

/// `--max-rate`: the background keeps to it on a link much faster than the cap.
extension RangeFSIntegrationTests {
    @Test("--max-rate 1M: on loopback the background takes at least 3 s for its first 6 MiB of a 100 MiB file, and keeps going")
    func maxRateHoldsOnAFastLink() throws {
        let (file, mount) = try mountBigFile(maxRate: "1M")
        defer { mount.teardown() }
        let started = Date()
        let wanted = 6 << 20
        let (status, met) = try mount.waitForStatus(timeout: 120, interval: 0.05) { $0.cachedBytes >= wanted }
        let seconds = Date().timeIntervalSince(started)
        print("--max-rate 1M: \(status.cachedBytes) bytes cached after \(String(format: "%.2f", seconds)) s")
        try #require(met, "the background did not fetch 6 MiB within 120 s:\n\(status)\n\(mount.logTail())")
        // At 1 MiB/s, 6 MiB take about 6 s; a slow machine only makes it longer. Uncapped,
        // loopback brings the whole file in well under a second.
        #expect(seconds >= 3, "6 MiB came in \(seconds) s at --max-rate 1M:\n\(status)")
        #expect(status.cachedBytes < file.size, "the whole file came at once:\n\(status)")
    }

    @Test("--max-rate 256K: a program reading the file the capped background is fetching is not held to the cap (100 MiB, byte-exact, long before the cap would allow)")
    func aReadOfTheFileTheCappedBackgroundFetchesIsNotCapped() throws {
        let (file, mount) = try mountBigFile(maxRate: "256K")
        defer { mount.teardown() }
        let (status, met) = try mount.waitForStatus(timeout: 60, interval: 0.05) { $0.cachedBytes > 0 }
        try #require(met, "the background fetched nothing within 60 s:\n\(status)\n\(mount.logTail())")
        // At the cap the file would take 400 s; through the reader's own uncapped requests (and
        // background transfers it raises, whose cap is lifted) seconds on loopback.
        let (hash, result) = SHA256.of(mount.path("rate/\(file.name)"), timeout: 100)
        #expect(hash == file.sha256, "sha256sum through the mount: \(result)\n\(mount.logTail())")
    }

    @Test("--max-rate 1M: the heads and tails of 40 files, each a short transfer of its own, together keep to the cap (8 MiB in at least 7 s)")
    func maxRateHoldsForManyShortTransfers() throws {
        let source = fx.nginx.url("big.bin")
        let entries = (1...40).map { ManifestLine(path: "rate/copy-\($0).bin", url: source + "?copy=\($0)") }
        let mount = try fx.mount(entries, options: ["--max-rate", "1M"])
        defer { mount.teardown() }
        // Timed from the first MiB on, when the background is under way.
        let (begun, going) = try mount.waitForStatus(timeout: 120, interval: 0.05) { $0.cachedBytes >= 1 << 20 }
        try #require(going, "the background did not fetch 1 MiB within 120 s:\n\(begun)\n\(mount.logTail())")
        let started = Date()
        let wanted = begun.cachedBytes + 8 << 20
        let (status, met) = try mount.waitForStatus(timeout: 120, interval: 0.05) { $0.cachedBytes >= wanted }
        let seconds = Date().timeIntervalSince(started)
        let rate = Double(status.cachedBytes - begun.cachedBytes) / seconds
        print("--max-rate 1M, 40 files: \(status.cachedBytes - begun.cachedBytes) bytes in \(String(format: "%.2f", seconds)) s, \(Int(rate)) B/s")
        try #require(met, "the background did not fetch 8 MiB more within 120 s:\n\(status)\n\(mount.logTail())")
        // Each head or tail is a transfer of its own, and libcurl checks its own cap only between
        // runs of reads: without a budget all transfers share, they went a fifth or more over it.
        // At 1 MiB/s, 8 MiB take 8 s; a slow machine only makes it longer.
        #expect(seconds >= 7, "8 MiB came in \(seconds) s at --max-rate 1M:\n\(status)")
    }

    /// big.bin (100 MiB) alone, mounted with the defaults and `--max-rate maxRate`.
    private func mountBigFile(maxRate: String) throws -> (TestFile, Mount) {
        let file = fx.data.file("big.bin")
        let mount = try fx.mount([ManifestLine(path: "rate/\(file.name)", url: fx.nginx.url(file.name))],
                                 options: ["--max-rate", maxRate])
        return (file, mount)
    }
}
