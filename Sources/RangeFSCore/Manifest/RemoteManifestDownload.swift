import Foundation
import Synchronization

/// Fetches a manifest over http(s) with the mount's own client, so its proxy, CA file and
/// headers apply. The whole body is kept in memory: manifests are small, and a cap keeps them so.
struct RemoteManifestDownload {
    /// Far more than a feed of thousands of episodes needs; a bigger reply is not a manifest.
    static let maxBytes: UInt64 = 32 << 20

    let url: URL
    let headers: [String: String]
    let client: any RemoteClient
    /// For each request, not the whole download.
    var timeout: Duration = .seconds(60)
    var attempts = 3

    /// The manifest's bytes, or a `ManifestError` that says why they could not be had.
    func data() throws(ManifestError) -> Data {
        var attempt = 1
        while true {
            do throws(RemoteError) {
                return try fetchOnce()
            } catch {
                // `.changed`: the manifest was replaced between the size request and the download.
                let retry = error.isTransient || { if case .changed = error { return true } else { return false } }()
                guard retry, attempt < attempts else { throw failure(error) }
                Thread.sleep(forTimeInterval: Double(attempt))
                attempt += 1
            }
        }
    }

    private func fetchOnce() throws(RemoteError) -> Data {
        let info = try wait { completion in client.probe(url: url, headers: headers, completion: completion) }
        guard info.size <= Self.maxBytes else {
            throw .protocolViolation("the reply is \(info.size) bytes, more than a manifest can be (\(Self.maxBytes >> 20) MiB)")
        }
        guard info.size > 0 else { return Data() }
        let body = Mutex(Data())
        let size = info.size
        // A plain GET: a manifest is read whole, and servers that ignore ranges serve it too.
        let request = RangeRequest(url: url, headers: headers, range: 0..<size, expectedSize: size,
                                   validator: info.validator, wholeBody: true)
        try wait { completion in
            client.fetch(request, sink: { bytes, offset in
                body.withLock { data in
                    guard offset == UInt64(data.count), UInt64(data.count + bytes.count) <= size else { return false }
                    data.append(contentsOf: bytes)
                    return true
                }
            }, completion: completion)
        }
        return body.withLock { $0 }
    }

    /// Runs one asynchronous client call and waits for its result, at most `timeout`.
    private func wait<Value: Sendable>(
        _ start: (@escaping @Sendable (Result<Value, RemoteError>) -> Void) -> Void
    ) throws(RemoteError) -> Value {
        let outcome = Mutex<Result<Value, RemoteError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        start { result in
            outcome.withLock { $0 = result }
            done.signal()
        }
        guard done.wait(timeout: .now() + timeout.timeInterval) == .success,
              let result = outcome.withLock({ $0 }) else {
            throw .transport("no answer within \(timeout)")
        }
        return try result.get()
    }

    private func failure(_ error: RemoteError) -> ManifestError {
        ManifestError(source: url.redactedForDisplay, line: 0, reason: "cannot fetch the manifest: \(error)")
    }
}
