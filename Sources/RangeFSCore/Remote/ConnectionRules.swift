import CCurl
import Foundation

/// How the mount's transfers use connections, over https as over http.
///
/// libcurl multiplexes every transfer to a server that speaks HTTP/2 as a stream of one
/// connection (its default once a connection speaks h2). That undoes what the engine is built
/// on: read-ahead that fans out over several connections (where a server, a CDN or a lossy path
/// limits each connection, each is another connection's worth of speed), and a reader's request
/// that never waits behind another transfer's bulk bytes (inside one TCP connection, a stream's
/// frames queue behind the others'). So every transfer has a connection of its own, as over
/// plain http: the per-host connection cap and the loop's count of a server's connections
/// (`CurlMultiLoop.connections(to:)`) then mean what they say. HTTP/2 is still spoken where the
/// server offers it, one stream per connection. (Multiplexing only probes and documents, with
/// ranges over HTTP/1.1 connections, measured no better on a distant link's cold read.)
///
/// New connections resume the TLS session of an earlier one (a share handle holding libcurl's
/// session cache: each transfer is an easy handle of its own, whose own cache would start empty).
///
/// Safe to share between threads as a value: the share handle is only used by the loop thread
/// (as each transfer is set up, and at cleanup), so libcurl needs no lock functions for it.
struct ConnectionRules: @unchecked Sendable {
    private let share: UnsafeMutableRawPointer?

    init() {
        share = curl_share_init()
        if let share { rangefs_share_data(share, CURL_LOCK_DATA_SSL_SESSION) }
    }

    /// The multi handle's side of the rules: no transfer is a stream of another's connection.
    func apply(toMulti multi: UnsafeMutableRawPointer) {
        rangefs_multi_setopt_long(multi, CURLMOPT_PIPELINING, CURLPIPE_NOTHING)
    }

    /// One transfer's side, before it is added to the multi handle.
    func apply(to easy: UnsafeMutableRawPointer) {
        if let share { rangefs_easy_setopt_pointer(easy, CURLOPT_SHARE, share) }
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
