import Foundation

/// Which servers ignore ranges, learned from their files and forgotten again. Pure: the catalog
/// keeps one under its lock, hands in the time and stores `serialized` in the cache database.
///
/// One file answering a plain range request with the whole body condemns that file only (it
/// goes on as one stream). A server is marked once `filesToMark` of its files answered so:
/// its later files then start as streams, without a wasted request each, also after a remount.
/// The mark lasts `markLifetime`, and a `206` from the server ends it (and the evidence) at
/// once: a server that was misconfigured for a while, or one odd file, does not condemn the
/// server for ever.
struct RangeIgnoringServers: Equatable {
    static let filesToMark = 3
    static let markLifetime: TimeInterval = 3600

    /// Marked servers (`scheme://host:port`), each until when.
    private(set) var marked: [String: Date] = [:]
    /// Files of each server not marked yet that answered a plain range request with `200`
    /// (at most `filesToMark` kept per server); kept for this mount only.
    private var evidence: [String: Set<String>] = [:]

    init() {}

    /// Reads `serialized`: one `server<TAB>seconds since 1970` a line. Lines in another form
    /// (marks stored without an end, after one file each) are dropped.
    init(serialized: String) {
        for line in serialized.split(separator: "\n") {
            let fields = line.split(separator: "\t")
            guard fields.count == 2, let until = TimeInterval(fields[1]), until.isFinite else { continue }
            marked[String(fields[0])] = Date(timeIntervalSince1970: until)
        }
    }

    var serialized: String {
        marked.sorted { $0.key < $1.key }
            .map { "\($0.key)\t\(Int64($0.value.timeIntervalSince1970.rounded(.up)))" }
            .joined(separator: "\n")
    }

    /// Whether files of `server` made now start as one stream.
    func ignoresRanges(_ server: String, now: Date) -> Bool {
        guard let until = marked[server] else { return false }
        return now < until
    }

    /// `file` of `server` answered a plain range request (no `If-Range`) with the whole body.
    /// Returns true when this marks the server (the caller stores `serialized`).
    mutating func rangesIgnored(by server: String, file: String, now: Date) -> Bool {
        guard !ignoresRanges(server, now: now) else { return false }
        var files = evidence[server] ?? []
        files.insert(file)
        guard files.count >= Self.filesToMark else {
            evidence[server] = files
            return false
        }
        evidence[server] = nil
        marked[server] = now.addingTimeInterval(Self.markLifetime)
        return true
    }

    /// `server` answered a range request with `206`. Returns true when this ended a stored
    /// mark (the caller stores `serialized`).
    mutating func rangesServed(by server: String) -> Bool {
        evidence[server] = nil
        return marked.removeValue(forKey: server) != nil
    }

    /// Marks past their end are dropped. Returns true when one was (the caller stores `serialized`).
    mutating func dropExpired(now: Date) -> Bool {
        let before = marked.count
        marked = marked.filter { now < $0.value }
        return marked.count != before
    }

    /// Nothing is known of `server` (no mark, no evidence): a `206` from it changes nothing.
    func knowsNothing(of server: String) -> Bool {
        marked[server] == nil && evidence[server] == nil
    }
}
