import Foundation
import Synchronization

/// A whole document and how the server answered for it.
public struct FetchedDocument: Sendable {
    /// Empty when the server answered `304` (the held copy is current).
    public var bytes: Data
    public var reply: DocumentReply
}

/// Downloads one whole document (a manifest, a feed, a directory listing) with a client, so
/// the mount's proxy, CA file and headers apply, trying again after transient failures by
/// the one retry rule every request follows (`FetchPolicy.retryDelay(after:attempts:)`). The
/// body is kept in memory: documents are small, and the request's cap keeps them so.
public struct DocumentDownload: Sendable {
    public var request: DocumentRequest
    public var client: any RemoteClient
    public var policy = FetchPolicy()

    public init(request: DocumentRequest, client: any RemoteClient) {
        self.request = request
        self.client = client
    }

    /// Starts the download; `completion` runs once, on a client or timer thread.
    public func start(completion: @escaping @Sendable (Result<FetchedDocument, RemoteError>) -> Void) {
        attempt(1, completion: completion)
    }

    /// Waits for the document. Bounded: every attempt has the request's timeout, and the
    /// delays between them are bounded by the policy.
    public func fetch() throws(RemoteError) -> FetchedDocument {
        let outcome = Mutex<Result<FetchedDocument, RemoteError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        start { result in
            outcome.withLock { $0 = result }
            done.signal()
        }
        let attempts = Double(max(1, policy.maxAttempts))
        let bound = attempts * (request.timeout.timeInterval + policy.maxRetryAfter.timeInterval) + 5
        guard done.wait(timeout: .now() + bound) == .success, let result = outcome.withLock({ $0 }) else {
            throw .transport("no answer within \(Int(bound)) s")
        }
        return try result.get()
    }

    /// The same, for a task: the task's thread is not held while the transfer runs.
    public func fetch() async throws(RemoteError) -> FetchedDocument {
        let result = await withCheckedContinuation { continuation in
            start { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    private func attempt(_ number: Int, completion: @escaping @Sendable (Result<FetchedDocument, RemoteError>) -> Void) {
        // Each attempt starts from an empty body: a failed one may have delivered part of it.
        let body = Mutex(Data())
        client.fetchDocument(request, sink: { bytes in
            body.withLock { $0.append(contentsOf: bytes) }
            return true
        }, completion: { result in
            switch result {
            case .success(let reply):
                completion(.success(FetchedDocument(bytes: body.withLock { $0 }, reply: reply)))
            case .failure(let error):
                guard let delay = policy.retryDelay(after: error, attempts: number) else {
                    completion(.failure(error))
                    return
                }
                DispatchQueue.global().asyncAfter(deadline: .now() + delay.timeInterval) {
                    attempt(number + 1, completion: completion)
                }
            }
        })
    }
}
