import Foundation
import Synchronization

/// How fast a request to each host brought its bytes lately, from its first byte on: for a
/// reader that must choose between waiting for a running transfer of unknown speed and asking
/// for its bytes itself (`FilePlan.firstLateByte`), and for the size of a reader's requests
/// (`FilePlan.requestBytes`). Only transfers started for readers are measured: background
/// transfers stand still whenever a reader waits, so their pace says little about the link.
/// The fastest recent measure is kept: a small request says less of the link than a long one.
/// But a measure over a short span is only as good as its bytes' arrival is even: over TLS a
/// reply comes in records, and one that waited while the client's loop was busy (setting up
/// other connections, say) shows up beside the next, making a short reply look half as fast
/// again as its link. So a measure over `sustainedSpan` or more, once there is one, outranks
/// every shorter one; on a fast link, where every reply is short, the short ones decide.
final class HostRates: Sendable {
    /// A measurement older than this says nothing about the link now.
    static let lifetime: Duration = .seconds(30)
    /// A measure over at least this long (after a reply's first burst) is a sustained one.
    static let sustainedSpan: Duration = .milliseconds(100)

    private struct Measure {
        var bytesPerSecond: Double
        var at: ContinuousClock.Instant
    }

    /// A host's fastest recent measure of any span, and of a sustained span.
    private struct Fastest {
        var any: Measure?
        var sustained: Measure?
    }

    /// The fastest recent measures by host. A leaf lock: nothing is called while it is held, so
    /// it may be taken under a file's lock (`CachedFile.state`).
    private let rates = Mutex<[String: Fastest]>([:])

    // `host`: a `URL.serverKey`.

    /// A transfer from `host` moved at `bytesPerSecond`, measured over `span`: kept if it is the
    /// fastest recent measure of its kind.
    func record(_ bytesPerSecond: Double, over span: Duration, host: String, at now: ContinuousClock.Instant) {
        let measure = Measure(bytesPerSecond: bytesPerSecond, at: now)
        rates.withLock { rates in
            var fastest = rates[host] ?? Fastest()
            fastest.any = Self.faster(fastest.any, measure, at: now)
            if span >= Self.sustainedSpan {
                fastest.sustained = Self.faster(fastest.sustained, measure, at: now)
            }
            rates[host] = fastest
        }
    }

    /// The host's recent speed (its fastest sustained measure, else its fastest), or nil when
    /// none was measured lately.
    func bytesPerSecond(host: String, at now: ContinuousClock.Instant) -> Double? {
        rates.withLock { rates in
            guard let fastest = rates[host] else { return nil }
            return (Self.current(fastest.sustained, at: now) ?? Self.current(fastest.any, at: now))?.bytesPerSecond
        }
    }

    private static func current(_ measure: Measure?, at now: ContinuousClock.Instant) -> Measure? {
        guard let measure, now - measure.at <= lifetime else { return nil }
        return measure
    }

    private static func faster(_ kept: Measure?, _ new: Measure, at now: ContinuousClock.Instant) -> Measure {
        guard let kept = current(kept, at: now), kept.bytesPerSecond > new.bytesPerSecond else { return new }
        return kept
    }
}

extension URL {
    /// What tells servers apart, for their speeds and their shares of background work: scheme,
    /// host and port.
    var serverKey: String {
        "\(scheme ?? "")://\(host ?? ""):\(port.map(String.init) ?? "")"
    }
}
