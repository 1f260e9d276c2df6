import Foundation

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
