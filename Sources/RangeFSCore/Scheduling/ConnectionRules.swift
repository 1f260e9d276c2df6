import CCurl
import Foundation

/// How a request reaches its server (`ConnectionRules`).
public enum ConnectionUse: Sendable, Equatable {
    /// A connection of its own, reused only once idle: every range, and a probe a reader waits on
    /// (the read that follows then finds that probe's connection idle).
    case own
    /// One of many small requests at once (a listing's size probes): where the server speaks
    /// HTTP/2 over https, a stream of one connection they all share.
    case stream
}

/// How the mount's transfers use connections, over https as over http.
///
/// Every transfer has a connection of its own, in the client's main pool. libcurl would
/// multiplex every transfer to a server that speaks HTTP/2 as a stream of one connection (its
/// default once a connection speaks h2). That undoes what the engine is built on: read-ahead
/// that fans out over several connections (where a server, a CDN or a lossy path limits each
/// connection, each is another connection's worth of speed), and a reader's request that never
/// waits behind another transfer's bulk bytes (inside one TCP connection, a stream's frames queue
/// behind the others'). So the main pool multiplexes nothing: the per-host connection cap and
/// the loop's count of a server's connections (`CurlMultiLoop.connections(to:)`) then mean
/// what they say. HTTP/2 is still spoken where the server offers it, one stream per connection.
///
/// The one exception is what a listing asks, many small requests at once: its pages and its
/// size probes (`ConnectionUse.stream`) to an https server. They go to a pool of their own (a
/// second multi handle, on a thread of its own), where they are streams of one connection per
/// server when it speaks HTTP/2: one handshake, and many probes at once, where each would
/// otherwise wait its turn for one of a few connections, and a connection the heads walk's
/// ranges never take from the next page (that pool holds at most half the per-host cap more,
/// and only where the server does not speak HTTP/2). Bulk bytes never share it. It is
/// a pool apart because libcurl chooses connections itself: in one pool, a range would reuse
/// the shared connection while its probes run, and a probe would reuse a connection a range
/// left (`PIPEWAIT` makes the first probes wait until that connection says whether it
/// multiplexes, rather than each opening its own). Probes to a server that answers over
/// HTTP/1.1 go back to the main pool (`ProbeQueue` learns which from their answers).
///
/// New connections resume the TLS session of an earlier one (a share handle holding libcurl's
/// session cache: each transfer is an easy handle of its own, whose own cache would start empty).
///
/// Safe to share between threads as a value: the share handle is only used by its pool's loop
/// thread (as each transfer is set up, and at cleanup), so libcurl needs no lock functions for it.
struct ConnectionRules: @unchecked Sendable {
    enum Pool: Sendable {
        /// A connection for each transfer.
        case connectionEach
        /// Streams of one connection per server.
        case sharedStreams
    }

    let pool: Pool
    private let share: UnsafeMutableRawPointer?

    init(pool: Pool) {
        self.pool = pool
        share = curl_share_init()
        if let share { rangefs_share_data(share, CURL_LOCK_DATA_SSL_SESSION) }
    }

    /// Whether `spec` goes to the shared pool: a listing's probe or page, to an https server
    /// (over http there are no streams).
    static func goesAsStream(_ spec: TransferSpec) -> Bool {
        let url: URL
        switch spec {
        case .probe(let probed, _, _, .stream, _): url = probed
        case .document(let request, _, _) where request.connection == .stream: url = request.url
        default: return false
        }
        return url.scheme?.lowercased() == "https"
    }

    /// The multi handle's side of the rules.
    func apply(toMulti multi: UnsafeMutableRawPointer, maxConnectionsPerHost: Int) {
        switch pool {
        case .connectionEach:
            rangefs_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, maxConnectionsPerHost)
            rangefs_multi_setopt_long(multi, CURLMOPT_PIPELINING, CURLPIPE_NOTHING)
        case .sharedStreams:
            // One connection where the server speaks HTTP/2 (`PIPEWAIT`); where it does not, a
            // listing's pages (a few at once) still go side by side.
            rangefs_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, max(1, maxConnectionsPerHost / 2))
            rangefs_multi_setopt_long(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX)
        }
    }

    /// One transfer's side, before it is added to the multi handle.
    func apply(to easy: UnsafeMutableRawPointer) {
        if let share { rangefs_easy_setopt_pointer(easy, CURLOPT_SHARE, share) }
        if pool == .sharedStreams { rangefs_easy_setopt_long(easy, CURLOPT_PIPEWAIT, 1) }
    }

    /// A transfer that ends before its reply does closes its connection. Over HTTP/1.1 libcurl
    /// does so anyway; over HTTP/2 it would only reset the stream and hand the connection to the
    /// next request, whose bytes would then queue behind the rest of the abandoned reply already
    /// on its way (the server's buffers, the link, any proxy's).
    static func closeConnectionWhenDone(_ easy: UnsafeMutableRawPointer) {
        rangefs_easy_setopt_long(easy, CURLOPT_FORBID_REUSE, 1)
    }

    /// After every easy handle using the share is gone.
    func cleanup() {
        if let share { curl_share_cleanup(share) }
    }
}
