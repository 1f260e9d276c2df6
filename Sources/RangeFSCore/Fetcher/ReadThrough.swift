import Foundation
import Logging

/// A read the cache has no room for: its bytes come from the network into memory and go to
/// the reader without being stored. Only what the read asked for is fetched (no read-ahead),
/// and it is held only until the reply is sent, so memory stays bounded by the reads in flight.
/// Where the manifest gives piece hashes, the whole pieces the read falls in are fetched and
/// must match before any of their bytes is given.
struct ReadThrough: Sendable {
    let url: URL
    let headers: [String: String]
    let fileSize: UInt64
    let validator: RemoteValidator
    var pieces: PieceHashes? = nil
    /// Names the version in the request (`RangeRequest.conditional`), as the file's own transfers do.
    var conditional = true
    let environment: FetchEnvironment
    let budget: CacheBudget

    /// Fetches `bytes` and answers `completion`, retrying transient errors as the cache's own
    /// transfers do; `changed` hears why when the server has another version of the file.
    func fetch(_ bytes: Range<UInt64>, attempt: Int = 1, changed: @escaping @Sendable (String) -> Void,
               completion: @escaping ReadCompletion) {
        let fetched = pieces?.aligned(bytes, fileSize: fileSize) ?? bytes
        let memory: DataFile
        do {
            memory = try DataFile.inMemory(size: fetched.upperBound)
        } catch {
            return completion(.failure(FetchError(url, .cache(.from(error)))))
        }
        guard !bytes.isEmpty else { return completion(.success(ReadyBytes(file: memory, range: bytes))) }
        var request = RangeRequest(url: url, headers: headers, range: fetched, expectedSize: fileSize, validator: validator)
        request.readThrough = true
        request.conditional = conditional
        environment.client.fetch(request, sink: { data, offset in
            (try? memory.write(data, at: offset)) != nil
        }, completion: { result in
            switch result {
            case .success:
                if let mismatch = pieceMismatch(in: memory, fetched) {
                    environment.logger.error("GET \(url.redactedForDisplay) (not stored): \(mismatch)")
                    return completion(.failure(FetchError(url, .rejected(mismatch))))
                }
                environment.metrics.fetched(fetched.count, at: fetched.lowerBound, readAheadFrom: nil, background: false)
                if budget.readThrough(UInt64(fetched.count)) {
                    environment.logger.warning("the cache has no room (its disk is down to the free-space floor or it is at its size limit) and nothing can be evicted: reads are served from the network without being stored")
                }
                completion(.success(ReadyBytes(file: memory, range: bytes)))
            case .failure(let error):
                if error == .conditionNotHonoured, conditional {
                    // The whole body of the same version: asked again without the condition.
                    var unconditional = self
                    unconditional.conditional = false
                    return unconditional.fetch(bytes, attempt: attempt, changed: changed, completion: completion)
                }
                if case .changed(let why) = error { changed(why) }
                if let delay = environment.policy.retryDelay(after: error, attempts: attempt) {
                    environment.metrics.retried()
                    DispatchQueue.global().asyncAfter(deadline: .now() + delay.timeInterval) {
                        fetch(bytes, attempt: attempt + 1, changed: changed, completion: completion)
                    }
                    return
                }
                environment.logger.error("GET \(url.redactedForDisplay) bytes \(bytes.lowerBound)-\(bytes.upperBound - 1) (not stored) failed: \(error)")
                completion(.failure(FetchError(url, .remote(error))))
            }
        })
    }

    /// Why the pieces at `fetched` in `memory` are not what the manifest says, or nil when
    /// they match (or no piece hashes are given).
    private func pieceMismatch(in memory: DataFile, _ fetched: Range<UInt64>) -> String? {
        guard let pieces else { return nil }
        for index in pieces.indices(covering: fetched, fileSize: fileSize) {
            let range = pieces.range(ofPiece: index, fileSize: fileSize)
            guard let digest = try? memory.sha256Digest(of: range) else { return "piece \(index) cannot be read back" }
            if digest != Array(pieces.digest(ofPiece: index)) {
                return "piece \(index) (bytes \(range.lowerBound)-\(range.upperBound - 1)) does not match its sha-256"
            }
        }
        return nil
    }
}
