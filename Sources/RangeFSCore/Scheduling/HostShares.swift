/// Background transfers and size probes running, by server (`URL.serverKey`): the prefetcher
/// gives every server with work one slot before any server gets a second, so a slow server
/// cannot hold every slot while a fast one waits, and one server alone still gets them all,
/// so no slot idles. (Counting transfers, not judging their speed, keeps the rule predictable,
/// and transfers at once are what servers limit.)
struct HostShares {
    private var running: [String: Int] = [:]

    /// The servers that run background work now.
    var busy: Set<String> { Set(running.keys) }

    mutating func started(on server: String) {
        running[server, default: 0] += 1
    }

    mutating func ended(on server: String) {
        running[server, default: 1] -= 1
        if running[server] == 0 { running[server] = nil }
    }
}
