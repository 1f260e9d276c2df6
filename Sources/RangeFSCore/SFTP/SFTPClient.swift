import Foundation

// Design note: an SSH server's directory mounted from its listings, as a web directory is.
//
// - `SFTPAddress`: `sftp://USER@HOST[:PORT]/PATH/` and its children's URLs.
// - `SFTPConnection`: one libssh2 session (`SSHSession`: the host key checked against
//   known_hosts, `HostKeyVerdict`; `SSHAuthentication`: the agent, a key, a password,
//   `SSHSignIn`) on a queue of its own, every wait bounded. `SFTPLister` reads a directory with
//   `readdir` (exact sizes, mtimes, types; links followed only inside the tree).
// - Reads are libcurl `sftp://` transfers with `CURLOPT_RANGE` on the client's loop, judged by
//   `SFTPReadCheck` (pure: length and mtime, where HTTP has status and headers); a file's version
//   is its size and mtime (`SFTPVersion`); `SFTPClient` (this file) answers probes with a `stat`.

/// The `RemoteClient` of an SFTP mount: range reads and everything else go to libcurl
/// (`sftp://` transfers on the one loop every source's transfers run on, signed in with the
/// same `SSHSignIn`, `CurlClient.Configuration.ssh`); a size probe is a `stat` on the mount's
/// SSH session, which states the exact size and time (libcurl's SFTP transfers tell neither
/// without reading).
public final class SFTPClient: RemoteClient {
    private let transfers: CurlClient
    private let connection: SFTPConnection

    public init(transfers: CurlClient, connection: SFTPConnection) {
        self.transfers = transfers
        self.connection = connection
    }

    /// One session: a listing's probes as any other (there are no streams to share).
    public func probe(url: URL, headers: [String: String], connection use: ConnectionUse,
                      completion: @escaping @Sendable (Result<RemoteFileInfo, RemoteError>) -> Void) {
        connection.stat(url, completion: completion)
    }

    public func fetch(_ request: RangeRequest, sink: @escaping RangeBodySink,
                      completion: @escaping @Sendable (Result<Void, RemoteError>) -> Void) {
        transfers.fetch(request, sink: sink, completion: completion)
    }

    public func fetchDocument(_ request: DocumentRequest, sink: @escaping DocumentBodySink,
                              completion: @escaping @Sendable (Result<DocumentReply, RemoteError>) -> Void) {
        transfers.fetchDocument(request, sink: sink, completion: completion)
    }

    public func setBackgroundPaused(_ paused: Bool) {
        transfers.setBackgroundPaused(paused)
    }

    public func quietBackground(_ reason: BackgroundQuiet, for duration: Duration) {
        transfers.quietBackground(reason, for: duration)
    }

    public func shutdown() {
        transfers.shutdown()
    }
}
