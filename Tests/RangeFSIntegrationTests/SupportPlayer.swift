import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Reads a file the way an audio player without a big buffer does: fixed-size reads, each
/// one when the audio clock says the previous chunk has been played, and records how long
/// every read took. A read that takes longer than the audio it has left is a stall.
///
/// Self-contained (Foundation and Glibc only), so a benchmark can use it as it is:
///
///     let report = RealTimeReader.play(path: "/mnt/media/stream.mp3",
///                                      configuration: .init(seconds: 30, bytesPerSecond: 24_000))
///     print(report.summary)
///
/// The clock starts when the first read starts; read `i` is due at `i * chunkSize /
/// bytesPerSecond` seconds. A late read does not move the clock (the player catches up), so
/// one stall does not make every later read look late. Reads run on their own thread and the
/// call returns after at most `seconds + timeoutSlack` even when a read hangs.
struct RealTimeReader {
    struct Configuration: Sendable {
        /// Seconds of audio to play (reads stop earlier at the end of the file).
        var seconds: Double = 30
        /// The audio's byte rate: 192 kb/s is 24,000 bytes a second.
        var bytesPerSecond: Double = 24_000
        var chunkSize = 16 * 1024
        /// Where playback starts (a seek before the first read).
        var startOffset = 0
        /// Reads due within this many seconds of the start are the start-up, not playback:
        /// they are reported but not judged.
        var warmUp: Double = 1
        /// A judged read slower than this counts as a stall.
        var stallThreshold: Double = 0.050
        /// How much longer than `seconds` the whole run may take before it is abandoned.
        var timeoutSlack: Double = 60
        /// The original file: every chunk read is compared with it when given.
        var original: String?

        init(seconds: Double = 30, bytesPerSecond: Double = 24_000, chunkSize: Int = 16 * 1024,
             startOffset: Int = 0, warmUp: Double = 1, stallThreshold: Double = 0.050,
             timeoutSlack: Double = 60, original: String? = nil) {
            self.seconds = seconds
            self.bytesPerSecond = bytesPerSecond
            self.chunkSize = chunkSize
            self.startOffset = startOffset
            self.warmUp = warmUp
            self.stallThreshold = stallThreshold
            self.timeoutSlack = timeoutSlack
            self.original = original
        }
    }

    /// One read(2).
    struct Read: Sendable {
        let offset: Int
        let bytes: Int
        /// When it was due, in seconds after the first read started.
        let due: Double
        /// How long the read call took.
        let latency: Double
        /// False when it was due within the warm-up.
        let judged: Bool
    }

    struct Report: Sendable, CustomStringConvertible {
        let configuration: Configuration
        /// How long open(2) took (a cold open includes finding the file's size).
        var openLatency: Double = 0
        var reads: [Read] = []
        /// Set when the file could not be opened or read, or a chunk differed from the original.
        var failure: String?
        /// The run did not end within its bound (a read hung).
        var timedOut = false

        var judged: [Read] { reads.filter(\.judged) }
        /// The slowest judged read, nil when there was none.
        var worst: Read? { judged.max { $0.latency < $1.latency } }
        var stalls: [Read] { judged.filter { $0.latency > configuration.stallThreshold } }
        var bytesRead: Int { reads.reduce(0) { $0 + $1.bytes } }

        func percentile(_ p: Double) -> Double {
            let sorted = judged.map(\.latency).sorted()
            guard !sorted.isEmpty else { return 0 }
            return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
        }

        private static func ms(_ seconds: Double) -> String { String(format: "%.1f ms", seconds * 1000) }

        var summary: String {
            let c = configuration
            var text = "\(reads.count) reads of \(c.chunkSize) B at \(Int(c.bytesPerSecond)) B/s from offset \(c.startOffset)"
            text += " (\(bytesRead) B, \(String(format: "%.1f", Double(bytesRead) / c.bytesPerSecond)) s of audio)"
            text += "; open \(Self.ms(openLatency))"
            if let first = reads.first { text += ", first read \(Self.ms(first.latency))" }
            if let worst {
                text += ", after \(c.warmUp) s: worst \(Self.ms(worst.latency)) at offset \(worst.offset)"
                text += ", median \(Self.ms(percentile(0.5))), p90 \(Self.ms(percentile(0.9)))"
                text += ", \(stalls.count) over \(Self.ms(c.stallThreshold))"
            }
            if timedOut { text += "; TIMED OUT" }
            if let failure { text += "; FAILED: \(failure)" }
            return text
        }

        var description: String {
            summary + "\n" + reads.map { r in
                String(format: "  due %7.3f s  offset %9d  %6d B  %8.1f ms%@", r.due, r.offset, r.bytes,
                       r.latency * 1000, r.judged ? "" : "  (warm-up)")
            }.joined(separator: "\n")
        }
    }

    /// Plays `path` (opens it, reads on the audio clock, closes it) and reports every read.
    static func play(path: String, configuration: Configuration = Configuration()) -> Report {
        let box = ReportBox(Report(configuration: configuration))
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            run(path: path, configuration: configuration, box: box)
            done.signal()
        }
        thread.start()
        if done.wait(timeout: .now() + configuration.seconds + configuration.timeoutSlack) == .timedOut {
            box.update { $0.timedOut = true }
        }
        return box.value
    }

    private static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    private static func run(path: String, configuration c: Configuration, box: ReportBox) {
        let openStart = now()
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        let openLatency = now() - openStart
        box.update { $0.openLatency = openLatency }
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            box.update { $0.failure = "open \(path): \(reason)" }
            return
        }
        defer { close(fd) }
        let original = c.original.map { open($0, O_RDONLY | O_CLOEXEC) } ?? -1
        defer { if original >= 0 { close(original) } }

        var buffer = [UInt8](repeating: 0, count: c.chunkSize)
        var expected = [UInt8](repeating: 0, count: c.chunkSize)
        let totalBytes = Int(c.seconds * c.bytesPerSecond)
        let secondsPerChunk = Double(c.chunkSize) / c.bytesPerSecond
        var offset = c.startOffset
        var index = 0
        let clockStart = now()
        while offset - c.startOffset < totalBytes {
            let due = Double(index) * secondsPerChunk
            let wait = clockStart + due - now()
            if wait > 0 { usleep(UInt32(wait * 1_000_000)) }
            let started = now()
            let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, c.chunkSize, off_t(offset)) }
            let latency = now() - started
            if n < 0 {
                let reason = String(cString: strerror(errno))
                box.update { $0.failure = "read of \(c.chunkSize) B at \(offset): \(reason) after \(formatSeconds(latency))" }
                return
            }
            box.update { $0.reads.append(Read(offset: offset, bytes: n, due: due, latency: latency, judged: due >= c.warmUp)) }
            if original >= 0 {
                let m = expected.withUnsafeMutableBytes { pread(original, $0.baseAddress, c.chunkSize, off_t(offset)) }
                if m != n || buffer.prefix(n) != expected.prefix(max(0, m)) {
                    box.update { $0.failure = "the \(n) B read at offset \(offset) differ from the original (\(m) B there)" }
                    return
                }
            }
            if n == 0 { return }   // end of file
            offset += n
            index += 1
        }
    }

    private static func formatSeconds(_ s: Double) -> String { String(format: "%.3f s", s) }

    /// The report, shared between the reading thread and the caller.
    private final class ReportBox: @unchecked Sendable {
        // @unchecked: every access holds `lock`.
        private let lock = NSLock()
        private var report: Report

        init(_ report: Report) { self.report = report }

        func update(_ change: (inout Report) -> Void) {
            lock.lock()
            change(&report)
            lock.unlock()
        }

        var value: Report {
            lock.lock()
            defer { lock.unlock() }
            return report
        }
    }
}
