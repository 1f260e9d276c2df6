import Foundation
import Synchronization

/// How fast a request to each host brought its bytes lately, from its first byte on: for a
/// reader that must choose between waiting for a running transfer of unknown speed and asking
/// for its bytes itself (`FilePlan.firstLateByte`), and for the size of a reader's requests
/// (`FilePlan.requestBytes`). Only transfers started for readers are measured: background
/// transfers stand still whenever a reader waits, so their pace says little about the link.
/// The fastest recent measure is kept: a small request says less of the link than a long one.
final class HostRates: Sendable {
    /// A measurement older than this says nothing about the link now.
    static let lifetime: Duration = .seconds(30)

    /// Bytes per second by host, and when measured. A leaf lock: nothing is called while it is
    /// held, so it may be taken under a file's lock (`CachedFile.state`).
    private let rates = Mutex<[String: (bytesPerSecond: Double, at: ContinuousClock.Instant)]>([:])

    // `host`: a `URL.serverKey`.

    /// A transfer from `host` moved at `bytesPerSecond`: kept if it is the fastest recent measure.
    func record(_ bytesPerSecond: Double, host: String, at now: ContinuousClock.Instant) {
        rates.withLock { rates in
            if let last = rates[host], now - last.at <= Self.lifetime, last.bytesPerSecond > bytesPerSecond { return }
            rates[host] = (bytesPerSecond, now)
        }
    }

    /// The host's recent speed, or nil when none was measured lately.
    func bytesPerSecond(host: String, at now: ContinuousClock.Instant) -> Double? {
        rates.withLock { rates in
            guard let rate = rates[host], now - rate.at <= Self.lifetime else { return nil }
            return rate.bytesPerSecond
        }
    }
}

extension URL {
    /// What tells servers apart, for their speeds and their shares of background work: scheme,
    /// host and port.
    var serverKey: String {
        "\(scheme ?? "")://\(host ?? ""):\(port.map(String.init) ?? "")"
    }
}
