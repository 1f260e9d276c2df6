/// The server times of a mount's latest listings. A server's distance is its quickest answer:
/// a slower one waited on something else (on a near server, for the CPU that background
/// transfers took; over https, behind other streams of its connection). Judged by the latest
/// alone, one slow answer on loopback would call the server distant, the background would go on
/// during the walk, and take the CPU the next listings wait for (`FileCatalog.treeWalked`).
struct RecentListingTimes {
    /// Listings remembered: enough to outlast a burst of slow answers, few enough that a server
    /// that became distant (a mount kept across networks) is seen as such after a few listings.
    static let kept = 8
    private var times: [Duration] = []

    mutating func record(_ time: Duration) {
        times.append(time)
        if times.count > Self.kept { times.removeFirst() }
    }

    /// The quickest of the times kept (zero before any).
    var shortest: Duration { times.min() ?? .zero }
}
