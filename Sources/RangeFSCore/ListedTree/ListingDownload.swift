import Foundation
import Logging

/// What a lister that fetches one document per directory (a web server's page, a WebDAV
/// multistatus) asks it with: the client, the mount's `--header`s and the origin they were given
/// for, the retry policy, the caps on a reply, and the log for what a listing leaves out.
public struct ListingDownload: Sendable {
    let client: any RemoteClient
    /// An `Authorization` for a protected server, sent to the directories on `headersOrigin`'s
    /// origin alone: a root that redirected to another server has its tree there, and that
    /// server gets none of them.
    let headers: [String: String]
    let headersOrigin: URL?
    let policy: FetchPolicy
    /// A bigger reply is not a listing anyone means to mount.
    let maxBytes: UInt64
    /// A directory of more entries is refused as its reply is read (`ListedDirectories.Settings.maxEntries`).
    let maxEntries: Int
    let timeout: Duration
    let logger: Logger

    /// `headersOrigin`: the URL (the mount's root) whose origin `headers` were given for.
    public init(client: any RemoteClient, headers: [String: String] = [:], headersOrigin: URL? = nil,
                policy: FetchPolicy = FetchPolicy(), maxBytes: UInt64 = 32 << 20,
                maxEntries: Int = ListedDirectories.Settings.defaultMaxEntries, timeout: Duration = .seconds(60),
                logger: Logger) {
        precondition(headers.isEmpty || headersOrigin != nil, "headers are given for an origin")
        self.client = client
        self.headers = headers
        self.headersOrigin = headersOrigin
        self.policy = policy
        self.maxBytes = maxBytes
        self.maxEntries = maxEntries
        self.timeout = timeout
        self.logger = logger
    }

    /// Fetches `url`'s document (retried by the policy); `completion` runs once, on a client
    /// or timer thread.
    func fetch(_ url: URL, method: DocumentRequest.Method = .get, heldVersion: RemoteValidator? = nil,
               completion: @escaping @Sendable (Result<FetchedDocument, RemoteError>) -> Void) {
        let sent = headersOrigin.map { FetchSource.headers(headers, sentTo: url, origin: $0) } ?? [:]
        let request = DocumentRequest(url: url, method: method, headers: sent, maxBytes: maxBytes,
                                      heldVersion: heldVersion, timeout: timeout, connection: .stream)
        var download = DocumentDownload(request: request, client: client)
        download.policy = policy
        download.start(completion: completion)
    }
}
