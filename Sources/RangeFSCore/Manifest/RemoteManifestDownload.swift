import Foundation

/// Fetches a manifest over http(s) with the mount's own client, so its proxy, CA file and
/// headers apply. Any length up to the cap works, a chunked reply (no `Content-Length`) too.
struct RemoteManifestDownload {
    /// Far more than a feed of thousands of episodes needs; a bigger reply is not a manifest.
    static let maxBytes: UInt64 = 32 << 20

    let url: URL
    let headers: [String: String]
    let client: any RemoteClient
    /// For each attempt, not the whole download.
    var timeout: Duration = .seconds(60)

    /// The manifest's bytes, or a `ManifestError` that says why they could not be had.
    func data() throws(ManifestError) -> Data {
        let request = DocumentRequest(url: url, headers: headers, maxBytes: Self.maxBytes, timeout: timeout)
        do throws(RemoteError) {
            return try DocumentDownload(request: request, client: client).fetch().bytes
        } catch {
            throw ManifestError(source: url.redactedForDisplay, line: 0, reason: "cannot fetch the manifest: \(error)")
        }
    }
}
