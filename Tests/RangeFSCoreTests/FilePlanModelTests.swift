import Foundation
import Synchronization
import Testing
@testable import RangeFSCore

/// A reference-model test of `FilePlan`: random sequences of reads, background work, bytes
/// arriving, transfers that end, fail or are cut, commits (some rolled back) and deadlines, with the plan's actions performed by a
/// simulated network and checked after every step against what a simple model knows:
/// - no read is answered with a byte that was not written;
/// - no byte is asked for while another live request still brings it, and no byte of a block
///   already whole is asked for again (a block written in part may be asked again after a
///   failure or a cut: requests are whole blocks);
/// - every read is answered or failed once, and by its deadline;
/// - every durable block is available;
/// - once the file changed on the server, nothing more of its old version is asked for (what
///   is cached of it still reads: a handle holding its bytes gets the rest of them).
/// A failing case prints its seed; `RANGEFS_MODEL_SEED=N` replays that one case alone.
@Suite struct FilePlanModelTests {
    @Test func randomEventSequencesKeepThePlannersPromises() {
        if let text = ProcessInfo.processInfo.environment["RANGEFS_MODEL_SEED"], let seed = UInt64(text) {
            return run(seed: seed)
        }
        for seed in UInt64(1)...150 { run(seed: seed) }
    }

    private func run(seed: UInt64) {
        var simulation = PlanSimulation(seed: seed)
        for _ in 0..<250 where simulation.violations.isEmpty { simulation.step() }
        if simulation.violations.isEmpty { simulation.quiesce() }
        #expect(simulation.violations.isEmpty,
                "seed \(seed) (replay with RANGEFS_MODEL_SEED=\(seed)):\n\(simulation.violations.joined(separator: "\n"))\nlast events:\n\(simulation.history.suffix(12).joined(separator: "\n"))")
    }
}

/// SplitMix64: the same seed gives the same case on every machine.
private struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// What the reads' completions were told, by read number. The plan hands completions back in
/// its actions; the simulation calls each to learn whose it is.
private final class ReadOutcomes: Sendable {
    let calls = Mutex<[(read: Int, answered: Bool)]>([])
    func take() -> [(read: Int, answered: Bool)] {
        calls.withLock { calls in
            defer { calls.removeAll() }
            return calls
        }
    }
}

/// The plan of one file, a network that performs its actions, and the model it is checked against.
private struct PlanSimulation {
    var random: SeededGenerator
    var plan: FilePlan
    let size: UInt64
    let block = PlanFixture.block
    var now = PlanFixture.start
    /// Byte ranges the network has written into the data file.
    var written: [Range<UInt64>] = []
    /// Live requests: what each still brings (from its frontier to its end, a cut's end once cut).
    var live: [Int: Range<UInt64>] = [:]
    /// The transfer each control belongs to (a cut names the control).
    var transferOf: [ObjectIdentifier: Int] = [:]
    /// Reads not answered yet, with their bytes and deadline.
    var pending: [Int: (bytes: Range<UInt64>, deadline: ContinuousClock.Instant)] = [:]
    var resolved: Set<Int> = []
    var nextRead = 0
    let outcomes = ReadOutcomes()
    /// The server's file changed: what was written is of a version no reader may get.
    var changed = false
    var violations: [String] = []
    var history: [String] = []

    init(seed: UInt64) {
        random = SeededGenerator(state: seed)
        size = UInt64.random(in: (64 << 10)...(3 << 20), using: &random)
        plan = PlanFixture.plan(size: size)
    }

    mutating func step() {
        switch Int.random(in: 0..<100, using: &random) {
        case 0..<22: read()
        case 22..<28: background()
        case 28..<70: writeSome()
        case 70..<82: endOne(failing: false)
        case 82..<88: endOne(failing: true)
        case 88..<93: commit()
        case 93: rollBackACommit()
        case 94: remoteChange()
        default: advance(by: .milliseconds(Int.random(in: 1...40_000, using: &random)))
        }
        checkDurable()
    }

    /// Brings every live transfer to its end and lets every deadline pass.
    mutating func quiesce() {
        for _ in 0..<10_000 where !live.isEmpty && violations.isEmpty {
            guard let id = live.keys.min() else { break }
            if let range = live[id], !range.isEmpty {
                write(id, count: UInt64(range.count))
            } else {
                end(id, .success(()))
            }
        }
        advance(by: plan.policy.readDeadline + .seconds(1))
        for (read, info) in pending.sorted(by: { $0.key < $1.key }) {
            violations.append("read #\(read) of \(info.bytes) was neither answered nor failed")
        }
    }

    // MARK: Events

    mutating func read() {
        let offset = UInt64.random(in: 0..<size, using: &random)
        let length = min(size - offset, UInt64.random(in: 1...(256 << 10), using: &random))
        let bytes = offset..<(offset + length)
        let readAhead: UInt64 = Bool.random(using: &random) ? 1 << 20 : 0
        let id = nextRead
        nextRead += 1
        history.append("read #\(id) \(bytes) read-ahead \(readAhead)")
        pending[id] = (bytes, now + plan.policy.readDeadline)
        let outcomes = self.outcomes
        let actions = plan.read(bytes, readAhead: readAhead, now: now) { result in
            outcomes.calls.withLock { $0.append((id, (try? result.get()) != nil)) }
        }
        perform(actions)
    }

    /// The prefetcher's next piece of the file, when the plan has one for it.
    mutating func background() {
        guard plan.wantsBackgroundWork,
              let piece = plan.nextBackgroundPiece(maxBytes: 1 << 20, now: now) else { return }
        history.append("background \(piece)")
        perform(plan.startBackgroundTransfer(piece, onFinish: { _ in }))
    }

    mutating func writeSome() {
        guard let id = live.filter({ !$0.value.isEmpty }).keys.sorted().randomElement(using: &random) else { return }
        write(id, count: UInt64.random(in: 1...(192 << 10), using: &random))
    }

    mutating func endOne(failing: Bool) {
        guard let id = live.keys.sorted().randomElement(using: &random) else { return }
        // A transfer ends once it has brought all it asked for; before, only by failing.
        if failing {
            end(id, .failure(.transport("connection reset")))
        } else if live[id]?.isEmpty == true {
            end(id, .success(()))
        }
    }

    mutating func commit() {
        history.append("commit")
        let started = plan.commitStarting()
        _ = plan.committed(started.available, complete: !started.invalidated && started.available.isComplete)
    }

    /// The commit failed (the disk): only durable blocks are trusted; the rest is a hole again.
    mutating func rollBackACommit() {
        history.append("a commit fails")
        _ = plan.commitStarting()
        let durable = plan.durable
        let rolledBack = plan.commitRolledBack(outOfSpace: false, error: "I/O error")
        written = (0..<plan.layout.blockCount).filter(durable.contains).map(plan.layout.byteRange(ofBlock:)).merged()
        perform(rolledBack.actions)
    }

    mutating func remoteChange() {
        history.append("the file changes on the server")
        changed = true
        perform(plan.remoteChanged(because: "size was \(size), now \(size + 1)"))
    }

    mutating func advance(by duration: Duration) {
        now += duration
        history.append("time +\(duration)")
        perform(plan.expireWaiters(now: now))
        for (read, info) in pending where info.deadline < now {
            violations.append("read #\(read) of \(info.bytes) still waits past its deadline")
        }
    }

    private mutating func write(_ id: Int, count: UInt64) {
        guard let range = live[id], !range.isEmpty else { return }
        let bytes = range.lowerBound..<(range.lowerBound + min(count, UInt64(range.count)))
        history.append("write #\(id) \(bytes)")
        live[id] = bytes.upperBound..<range.upperBound
        written = (written + [bytes]).merged()
        guard let actions = plan.bytesWritten(by: id, at: bytes.lowerBound, count: UInt64(bytes.count), now: now) else {
            violations.append("transfer #\(id) was refused bytes at its own frontier \(bytes.lowerBound)")
            return
        }
        perform(actions)
    }

    private mutating func end(_ id: Int, _ result: Result<Void, RemoteError>) {
        history.append("end #\(id) \(result.isSuccess ? "done" : "failed")")
        live[id] = nil
        perform(plan.transferEnded(id, result, now: now))
    }

    // MARK: Performing the plan's actions, and the checks

    private mutating func perform(_ actions: [FilePlan.Action]) {
        for action in actions {
            switch action {
            case .fetch(let id, let bytes, let control, _, _):
                asked(id, bytes, control: control, what: "fetch")
            case .retry(let id, let bytes, let control, _, _):
                asked(id, bytes, control: control, what: "retry")
            case .endEarly(let control, let offset):
                guard let id = transferOf[ObjectIdentifier(control)], let range = live[id] else { continue }
                live[id] = range.lowerBound..<max(range.lowerBound, min(range.upperBound, offset))
                history.append("cut #\(id) at \(offset)")
            case .answer(let completion, let bytes):
                if let missing = bytes.subtracting(written).first {
                    violations.append("a read was answered with \(bytes), of which \(missing) was never written")
                }
                completion(.failure(FetchError(PlanFixture.origin, .unmounting)))
                resolve(answered: true)
            case .fail(let completion, _), .readThrough(_, let completion):
                completion(.failure(FetchError(PlanFixture.origin, .unmounting)))
                resolve(answered: false)
            case .notify(let observer, let succeeded):
                observer(succeeded)
            case .raise, .awaitDeadline, .cachedBytes, .unreserve, .commit, .commitLater, .log:
                continue
            case .invalidated where changed:
                continue
            case .invalidated, .rejected, .rangesIgnored, .findSource, .saveSource, .verifyPiece, .probeSource:
                violations.append("unexpected action for a plain file with one source: \(PlanFixture.lines([action]))")
            }
        }
    }

    private mutating func asked(_ id: Int, _ bytes: Range<UInt64>, control: TransferControl, what: String) {
        history.append("\(what) #\(id) \(bytes)")
        if changed { violations.append("\(what) #\(id) asks for \(bytes) of a version that changed") }
        for (other, range) in live where other != id && range.overlaps(bytes) {
            violations.append("\(what) #\(id) asks for \(bytes), which #\(other) still brings (\(range))")
        }
        let blocks = plan.layout.blocks(covering: bytes)
        for index in blocks {
            let blockBytes = plan.layout.byteRange(ofBlock: index)
            if blockBytes.subtracting(written).isEmpty, !blockBytes.isEmpty {
                violations.append("\(what) #\(id) asks for \(bytes) again, though block \(index) is written whole")
                break
            }
        }
        live[id] = bytes
        transferOf[ObjectIdentifier(control)] = id
    }

    /// Matches each completion the plan had called with the read it belongs to.
    private mutating func resolve(answered: Bool) {
        for (read, _) in outcomes.take() {
            if resolved.contains(read) {
                violations.append("read #\(read) was answered or failed twice")
            }
            resolved.insert(read)
            pending[read] = nil
            history.append("read #\(read) \(answered ? "answered" : "failed")")
        }
    }

    private mutating func checkDurable() {
        for index in 0..<plan.layout.blockCount where plan.durable.contains(index) && !plan.available.contains(index) {
            violations.append("block \(index) is durable but not available")
        }
    }
}
