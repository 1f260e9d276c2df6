import Foundation
import Testing
@testable import RangeFSCore

/// Drives the planner of one cached file without a data file, a server or a clock: each test
/// gives it events and compares the actions it returns, one line per action.
enum PlanFixture {
    static let block: UInt64 = 64 * 1024
    static let origin = URL(string: "http://127.0.0.1/data/file.bin")!
    static let mirror = URL(string: "http://127.0.0.1/mirror-a/file.bin")!
    static let otherMirror = URL(string: "http://127.0.0.1/mirror-b/file.bin")!
    static let validator = RemoteValidator(etag: "\"v1\"", lastModified: nil)
    /// The planner's clock: events say how long after this they happen.
    static let start = ContinuousClock.now
    static let noReply: ReadCompletion = { _ in }
    static let name = origin.redactedForDisplay

    /// The tests' policy: requests of at least four blocks, so that a read's blocks go out
    /// together unless a test asks for smaller requests (`FilePlanRequestPartsTests` splits
    /// blocks in parts, as the default policy does on a slow link).
    static var policy: FetchPolicy {
        var policy = FetchPolicy()
        policy.minRequestBytes = 4 * block
        return policy
    }

    /// Requests of up to 2 MiB whatever the host's speed, not 256 KiB while it is unknown: for
    /// tests of a reader joining the one transfer a read with read-ahead started.
    static var oneReadAheadRequest: FetchPolicy {
        var policy = PlanFixture.policy
        policy.minRequestBytes = policy.maxRequestBytes
        return policy
    }

    /// A plan of a file of `size` bytes in 64 KiB blocks, holding `blocks`.

    static func plan(size: UInt64, blocks: [Int] = [], streamOnly: Bool = false, location: URL? = nil,
                     policy: FetchPolicy = PlanFixture.policy) -> FilePlan {
        let layout = BlockLayout(fileSize: size, blockSize: block)
        var bitmap = BlockBitmap(blockCount: layout.blockCount)
        for index in blocks { bitmap.insert(index) }
        return FilePlan(url: origin, layout: layout, policy: policy, blocks: bitmap, complete: false,
                        streamOnly: streamOnly, expectedSHA256: nil,
                        source: FetchSource(location: location, validator: validator))
    }

    /// One line per action, in the words the tests compare.
    static func lines(_ actions: [FilePlan.Action]) -> [String] {
        actions.map { action in
            switch action {
            case .fetch(let id, let bytes, let control, let wholeBody, _):
                "fetch #\(id) \(bytes)" + (wholeBody ? " whole" : "") + (control.purpose == .background ? " background" : "")
            case .retry(let id, let bytes, _, let wholeBody, _):
                "retry #\(id) \(bytes)" + (wholeBody ? " whole" : "")
            case .raise: "raise"
            case .endEarly(_, let offset): "end early at \(offset)"
            case .notify(_, let succeeded): "notify \(succeeded)"
            case .awaitDeadline(let waiter): "wait #\(waiter)"
            case .invalidated: "invalidated"
            case .rejected: "rejected"
            case .rangesIgnored: "ranges ignored"
            case .findSource: "find source"
            case .saveSource(let source): "save source \(source.location?.absoluteString ?? "origin")"
            case .verifyPiece(let index, let bytes, _, let token): "verify piece \(index) \(bytes) #\(token)"
            case .probeSource(let index, _, let delay): "probe source \(index)" + (delay > .zero ? " later" : "")
            case .cachedBytes(let delta): "cached \(delta)"
            case .unreserve(let bytes): "unreserve \(bytes)"
            case .answer(_, let bytes): "answer \(bytes)"
            case .fail(_, let error): "fail \(error.description)"
            case .readThrough(let bytes, _): "read through \(bytes)"
            case .commit: "commit"
            case .commitLater(let delay): "commit in \(delay)"
            case .log(let level, _): "log \(level)"
            }
        }
    }
}

/// The events as the tests write them, answering with `PlanFixture.lines`.
extension FilePlan {
    mutating func read(_ bytes: Range<UInt64>, readAhead: UInt64 = 0, at elapsed: Duration = .zero,
                       hostBytesPerSecond: Double? = nil) -> [String] {
        PlanFixture.lines(read(bytes, readAhead: readAhead, now: PlanFixture.start + elapsed,
                               hostBytesPerSecond: hostBytesPerSecond, completion: PlanFixture.noReply))
    }

    /// Starts background work on `bytes`, as the prefetcher does.
    mutating func background(_ bytes: Range<UInt64>) -> [String] {
        PlanFixture.lines(startBackgroundTransfer(bytes, onFinish: { _ in }))
    }

    mutating func write(_ id: Int, _ bytes: Range<UInt64>, at elapsed: Duration = .zero) -> [String] {
        PlanFixture.lines(bytesWritten(by: id, at: bytes.lowerBound, count: UInt64(bytes.count), now: PlanFixture.start + elapsed) ?? [])
    }

    mutating func end(_ id: Int, _ result: Result<Void, RemoteError>, at elapsed: Duration = .zero) -> [String] {
        PlanFixture.lines(transferEnded(id, result, now: PlanFixture.start + elapsed))
    }
}
