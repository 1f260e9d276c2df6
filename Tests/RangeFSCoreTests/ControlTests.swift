import Foundation
import Synchronization
import Testing
@testable import RangeFSCore

// MARK: - Fixtures

private let mebibyte: UInt64 = 1 << 20

private func file(_ path: String, _ state: CacheState, size: UInt64?, cached: UInt64 = 0,
                  rate: UInt64 = 0, failure: String? = nil) -> FileStatus {
    FileStatus(path: path, url: "https://example.com/\(path)", state: state, size: size,
               cachedBytes: cached, bytesPerSecond: rate, failure: failure)
}

private func mount(_ files: [FileStatus], paused: Bool = false) -> MountStatus {
    MountStatus(mountpoint: "/mnt/media", manifest: "/home/me/media.txt", paused: paused, prefetch: "all", files: files)
}

/// A mount as the control socket sees it: a status to give, and a record of pause requests.
private final class RecordingControl: MountControl {
    private let state: Mutex<(status: MountStatus, pauseRequests: [Bool])>

    init(_ status: MountStatus) {
        state = Mutex((status, []))
    }

    func status() -> MountStatus {
        state.withLock { $0.status }
    }

    func setPaused(_ paused: Bool) {
        state.withLock { state in
            state.pauseRequests.append(paused)
            state.status.paused = paused
        }
    }

    var pauseRequests: [Bool] {
        state.withLock { $0.pauseRequests }
    }
}

/// A fresh directory under /tmp, removed when the test is done with it.
private final class ScratchDirectory {
    let path: String

    init() {
        var template = Array("/tmp/rangefs-control-XXXXXX".utf8CString)
        let created = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!).map { String(cString: $0) } }
        guard let created else { preconditionFailure("mkdtemp failed") }
        path = created
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    func file(_ name: String) -> String {
        path + "/" + name
    }
}

private let sample = mount([
    file("music/a.mp3", .complete, size: 40 * mebibyte, cached: 40 * mebibyte),
    file("music/b.mp3", .partial, size: 40 * mebibyte, cached: 13_107_200, rate: 1_258_291),
])

/// Connects without the client, to misbehave in ways the client never would.
private func rawConnection(to path: String) throws -> UnixSocket {
    let socket = try UnixSocket.stream()
    let connected = try UnixSocketAddress.perform(path) { connect(socket.descriptor, $0, $1) == 0 ? 0 : errno }
    guard connected == 0 else { throw SystemErrno(code: connected) }
    return socket
}

// MARK: - Human units

@Test(arguments: [
    (UInt64(0), "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1536, "1.5 KiB"),
    (1_048_575, "1.0 MiB"), (13_107_200, "12.5 MiB"), (1 << 30, "1.0 GiB"),
    (5_368_709_120, "5.0 GiB"), (UInt64.max, "16.0 EiB"),
])
func humanBytes(bytes: UInt64, expected: String) {
    #expect(HumanBytes.format(bytes) == expected)
}

@Test func humanRates() {
    #expect(HumanBytes.rate(0) == "")
    #expect(HumanBytes.rate(512) == "512 B/s")
    #expect(HumanBytes.rate(1_258_291) == "1.2 MiB/s")
}

@Test func percentAndBarRoundDownAndNeverOverflow() {
    #expect(StatusReport.percent(0, of: 10) == 0)
    #expect(StatusReport.percent(9, of: 10) == 90)
    #expect(StatusReport.percent(UInt64.max - 1, of: UInt64.max) == 99)
    #expect(StatusReport.percent(UInt64.max, of: UInt64.max) == 100)
    #expect(StatusReport.percent(0, of: 0) == 100)
    #expect(StatusReport.percent(20, of: 10) == 100)
    #expect(StatusReport.bar(1, of: 2) == "[##########----------]")
    #expect(StatusReport.bar(0, of: nil) == "[--------------------]")
}

// MARK: - The status table

@Test func tableOfEveryState() {
    let status = mount([
        file("a.mp3", .complete, size: 40 * mebibyte, cached: 40 * mebibyte),
        file("b.mp3", .partial, size: 40 * mebibyte, cached: 13_107_200, rate: 1_258_291),
        file("c.mp3", .remote, size: nil),
        file("d.bin", .failed, size: 10 * mebibyte, failure: "HTTP 404 Not Found"),
        file("empty", .complete, size: 0),
        file("f.ogg", .remote, size: 3 * mebibyte),
    ], paused: true)
    #expect(StatusReport.lines(status, width: 100) == [
        "a.mp3  complete  40.0 MiB / 40.0 MiB  [####################] 100%",
        "b.mp3  partial   12.5 MiB / 40.0 MiB  [######--------------]  31%  1.2 MiB/s",
        "c.mp3  remote         0 B /        ?  [--------------------]    ?",
        "d.bin  failed         0 B / 10.0 MiB  [--------------------]   0%  HTTP 404 Not Found",
        "empty  complete       0 B /      0 B  [####################] 100%",
        "f.ogg  remote         0 B /  3.0 MiB  [--------------------]   0%",
        "total: 2/6 complete, 1 failed, 52.5 MiB / 93.0 MiB, 1 size unknown, 1.2 MiB/s, paused",
    ])
}

@Test func totalsWithEverySizeKnownShowAPercentage() {
    #expect(StatusReport.totalsLine(sample) == "total: 1/2 complete, 52.5 MiB / 80.0 MiB (65%), 1.2 MiB/s")
    #expect(StatusReport.totalsLine(mount([])) == "total: 0/0 complete, 0 B / 0 B")
    #expect(StatusReport.totalsLine(mount([file("x", .remote, size: nil), file("y", .remote, size: nil)]))
        == "total: 0/2 complete, 0 B / 0 B, 2 sizes unknown")
}

@Test func longPathsAreShortenedInTheMiddleToFitTheWidth() {
    let status = mount([
        file("podcasts/some-show/episode-0042-a-very-long-title.mp3", .partial, size: 40 * mebibyte,
             cached: 20 * mebibyte, rate: 2 * mebibyte),
        file("short.mp3", .failed, size: nil, failure: "connection refused by the origin server, retries exhausted"),
    ])
    let lines = StatusReport.lines(status, width: 90)
    #expect(lines == [
        // 90 columns leave 19 for paths: a third before the ellipsis, the rest after it.
        "podcas…ng-title.mp3  partial   20.0 MiB / 40.0 MiB  [##########----------]  50%  2.0 MiB/s",
        // Still too long: the failure reason is cut at the edge.
        "short.mp3            failed         0 B /        ?  [--------------------]    ?  connecti…",
        "total: 0/2 complete, 1 failed, 20.0 MiB / 40.0 MiB, 1 size unknown, 2.0 MiB/s",
    ])
    #expect(lines.map(\.count) == [90, 90, 77])
    // Without a width (not a terminal) nothing is cut.
    #expect(StatusReport.lines(status)[0].hasPrefix("podcasts/some-show/episode-0042-a-very-long-title.mp3  partial"))
}

@Test func controlCharactersInPathsCannotBreakTheTable() {
    let lines = StatusReport.lines(mount([file("bad\nname\u{1B}[2J", .remote, size: 1)]))
    #expect(lines[0].hasPrefix(#"bad\x0Aname\x1B[2J  remote"#))
}

@Test func fittedKeepsTheTotalsLineOnAShortScreen() {
    let lines = (1...10).map { "file \($0)" } + ["total"]
    #expect(StatusReport.fitted(lines, height: 20) == lines)
    #expect(StatusReport.fitted(lines, height: 5) == ["file 1", "file 2", "file 3", "… 7 more files", "total"])
    #expect(StatusReport.fitted(lines, height: 1) == ["total"])
}

@Test func jsonIsPrettyWithSortedKeysAndDecodesBack() throws {
    let text = StatusReport.json(sample)
    #expect(text.hasPrefix("{\n  \"files\" : ["))
    #expect(text.contains("\"url\" : \"https://example.com/music/a.mp3\""))
    #expect(try JSONDecoder().decode(MountStatus.self, from: Data(text.utf8)) == sample)
}

@Test func aFileWithMirrorsShowsEachSourceBelowItsRowInTheJSONAndInItsAttribute() throws {
    var mirrored = file("iso/debian.iso", .partial, size: 40 * mebibyte, cached: 10 * mebibyte, rate: 2 * mebibyte)
    mirrored.sources = [
        SourceStatus(url: "https://a.example/debian.iso", state: .ok, reason: nil, bytesPerSecond: 2 * mebibyte, requests: 2),
        SourceStatus(url: "https://b.example/debian.iso", state: .backingOff, reason: "HTTP status 503", bytesPerSecond: nil),
        SourceStatus(url: "https://c.example/debian.iso", state: .dropped,
                     reason: "its size is 1000 bytes where the file has 41943040", bytesPerSecond: nil),
        SourceStatus(url: "https://d.example/debian.iso", state: .unknown, reason: nil, bytesPerSecond: nil),
    ]
    let status = mount([mirrored, file("plain.bin", .remote, size: 1)])
    #expect(StatusReport.lines(status) == [
        "iso/debian.iso  partial   10.0 MiB / 40.0 MiB  [#####---------------]  25%  2.0 MiB/s",
        "    https://a.example/debian.iso ok 2.0 MiB/s, 2 requests",
        "    https://b.example/debian.iso backing off: HTTP status 503",
        "    https://c.example/debian.iso dropped: its size is 1000 bytes where the file has 41943040",
        "    https://d.example/debian.iso not asked yet",
        "plain.bin       remote         0 B /      1 B  [--------------------]   0%",
        "total: 0/2 complete, 10.0 MiB / 40.0 MiB (24%), 2.0 MiB/s",
    ])
    let json = StatusReport.json(status)
    #expect(json.contains("\"state\" : \"backing off\""), "\(json)")
    #expect(try JSONDecoder().decode(MountStatus.self, from: Data(json.utf8)) == status)
    let attributes = ExtendedAttributes.ofFile(mirrored)
    #expect(attributes["user.rangefs.sources"] == mirrored.sources!.map { $0.summary + "\n" }.joined())
    #expect(ExtendedAttributes.ofFile(status.files[1])["user.rangefs.sources"] == nil, "a file with one URL has none")
}

// MARK: - The control socket

@Test func statusRoundTrip() throws {
    let scratch = ScratchDirectory()
    let control = RecordingControl(sample)
    let server = try ControlServer(path: scratch.file("control.sock"), control: control)
    defer { server.stop() }
    let reply = try ControlClient.send(.status, to: server.path, timeout: .seconds(5))
    #expect(reply == .success(sample))
    #expect(try reply.requireStatus() == sample)
    #expect(control.pauseRequests.isEmpty)
}

@Test func pauseAndResumeReachTheMount() throws {
    let scratch = ScratchDirectory()
    let control = RecordingControl(sample)
    let server = try ControlServer(path: scratch.file("control.sock"), control: control)
    defer { server.stop() }
    let paused = try ControlClient.send(.pause, to: server.path, timeout: .seconds(5)).requireStatus()
    #expect(paused.paused)
    #expect(control.pauseRequests == [true])
    let resumed = try ControlClient.send(.resume, to: server.path, timeout: .seconds(5)).requireStatus()
    #expect(!resumed.paused)
    #expect(control.pauseRequests == [true, false])
}

@Test func socketIsPrivateToItsOwner() throws {
    let scratch = ScratchDirectory()
    let server = try ControlServer(path: scratch.file("control.sock"), control: RecordingControl(sample))
    defer { server.stop() }
    let attributes = try FileManager.default.attributesOfItem(atPath: server.path)
    #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
    #expect(attributes[.type] as? FileAttributeType == .typeSocket)
    #expect(ControlServer.mayControl(peer: 1000, owner: 1000))
    #expect(ControlServer.mayControl(peer: 0, owner: 1000))
    #expect(!ControlServer.mayControl(peer: 1001, owner: 1000))
}

@Test func badRequestsAreRefusedWithAReason() throws {
    let scratch = ScratchDirectory()
    let control = RecordingControl(sample)
    let server = try ControlServer(path: scratch.file("control.sock"), control: control)
    defer { server.stop() }

    let garbage = try ControlClient.exchange(Array("hello\n".utf8), with: server.path, timeout: .seconds(5))
    #expect(!garbage.ok)
    #expect(garbage.status == nil)
    #expect(garbage.error?.hasPrefix("malformed request") == true)
    #expect(throws: ControlError.refused(garbage.error!)) { try garbage.requireStatus() }

    let unknown = try ControlClient.exchange(Array(#"{"command":"format-disk"}"#.utf8) + [10], with: server.path, timeout: .seconds(5))
    let known = ControlCommand.allCases.map(\.rawValue).joined(separator: ", ")
    #expect(unknown == .failure("unknown command format-disk; expected one of \(known)"))
    #expect(known.hasPrefix("status, pause, resume"))

    let oversized = [UInt8](repeating: UInt8(ascii: "a"), count: 200 << 10) + [10]
    let refused = try ControlClient.exchange(oversized, with: server.path, timeout: .seconds(5))
    #expect(refused == .failure("request too large: the limit is 65536 bytes"))

    // None of that reached the mount, and the server still answers.
    #expect(control.pauseRequests.isEmpty)
    #expect(try ControlClient.send(.status, to: server.path, timeout: .seconds(5)).ok)
}

@Test func aSilentClientIsCutOffAndDoesNotWedgeTheServer() throws {
    let scratch = ScratchDirectory()
    let server = try ControlServer(path: scratch.file("control.sock"), control: RecordingControl(sample),
                                   requestTimeout: .milliseconds(300))
    defer { server.stop() }
    let silent = try rawConnection(to: server.path)
    defer { silent.close() }
    // Served after the silent one has been given up on.
    let started = ContinuousClock.now
    #expect(try ControlClient.send(.status, to: server.path, timeout: .seconds(5)).ok)
    #expect(ContinuousClock.now - started < .seconds(3))
    #expect(silent.receiveLine(limit: 1 << 16, until: .now + .seconds(2))
        == .line(Array(ControlWire.line(ControlReply.failure("no complete request line within 0.3 s")).dropLast())))
}

@Test func stopRemovesTheSocketFile() throws {
    let scratch = ScratchDirectory()
    let path = scratch.file("control.sock")
    let server = try ControlServer(path: path, control: RecordingControl(sample))
    #expect(FileManager.default.fileExists(atPath: path))
    let started = ContinuousClock.now
    server.stop()
    // Well inside stop()'s two-second wait: the serving thread ended as soon as it was woken.
    #expect(ContinuousClock.now - started < .seconds(1))
    #expect(!FileManager.default.fileExists(atPath: path))
    server.stop()  // a second stop is harmless
    #expect(throws: ControlError.notListening(path: path)) {
        try ControlClient.send(.status, to: path, timeout: .seconds(1))
    }
}

@Test func stopCutsOffAClientInTheMiddleOfItsRequest() throws {
    let scratch = ScratchDirectory()
    let server = try ControlServer(path: scratch.file("control.sock"), control: RecordingControl(sample))
    let silent = try rawConnection(to: server.path)
    defer { silent.close() }
    #expect(silent.sendAll(Array(#"{"command":"#.utf8), until: .now + .seconds(1)) == nil)
    // Once admitted, the connection is the one stop() must cut off, wherever its request stands.
    _ = FilesystemHarness.eventually(timeout: 5) { server.admittedConnections > 0 }
    try #require(server.admittedConnections == 1, "the server never took the connection")
    let started = ContinuousClock.now
    server.stop()
    #expect(ContinuousClock.now - started < .seconds(1))
    #expect(silent.receiveLine(limit: 1 << 16, until: .now + .seconds(1)) == .closed)
}

@Test func aClientOnAMissingPathSaysNoMountIsListening() throws {
    let scratch = ScratchDirectory()
    let path = scratch.file("nothing-here.sock")
    let error = #expect(throws: ControlError.self) { try ControlClient.send(.status, to: path, timeout: .seconds(1)) }
    #expect(error == .notListening(path: path))
    #expect(error?.description == "no rangefs mount is listening at \(path)")
}

@Test func aServerThatNeverAnswersTimesTheClientOut() throws {
    let scratch = ScratchDirectory()
    let path = scratch.file("mute.sock")
    // Listening, so connect succeeds, but nothing ever accepts.
    let mute = try UnixSocket.stream()
    defer { mute.close() }
    #expect(try UnixSocketAddress.perform(path) { bind(mute.descriptor, $0, $1) } == 0)
    #expect(listen(mute.descriptor, 4) == 0)
    let started = ContinuousClock.now
    #expect(throws: ControlError.timedOut(path: path, after: .milliseconds(300))) {
        try ControlClient.send(.status, to: path, timeout: .milliseconds(300))
    }
    #expect(ContinuousClock.now - started < .seconds(2))
}

@Test func aStaleSocketIsReplacedButNotALiveOneOrAnOrdinaryFile() throws {
    let scratch = ScratchDirectory()
    let path = scratch.file("control.sock")
    // A socket file whose server has gone: bound, never listening, closed.
    let gone = try UnixSocket.stream()
    #expect(try UnixSocketAddress.perform(path) { bind(gone.descriptor, $0, $1) } == 0)
    gone.close()
    let server = try ControlServer(path: path, control: RecordingControl(sample))
    defer { server.stop() }
    #expect(try ControlClient.send(.status, to: path, timeout: .seconds(5)).ok)

    #expect(throws: ControlError.alreadyServing(path: path)) {
        try ControlServer(path: path, control: RecordingControl(sample))
    }
    let ordinary = scratch.file("notes.txt")
    #expect(FileManager.default.createFile(atPath: ordinary, contents: Data("keep me".utf8)))
    #expect(throws: ControlError.notASocket(path: ordinary)) {
        try ControlServer(path: ordinary, control: RecordingControl(sample))
    }
    #expect(FileManager.default.contents(atPath: ordinary) == Data("keep me".utf8))
}

@Test func socketPathsLongerThanSunPathWorkThroughTheirDirectory() throws {
    let scratch = ScratchDirectory()
    let directory = scratch.file(String(repeating: "d", count: 60) + "/" + String(repeating: "e", count: 60))
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let path = directory + "/control.sock"
    #expect(path.utf8.count > UnixSocketAddress.capacity)
    let server = try ControlServer(path: path, control: RecordingControl(sample))
    #expect(try ControlClient.send(.status, to: path, timeout: .seconds(5)).requireStatus() == sample)
    server.stop()
    #expect(!FileManager.default.fileExists(atPath: path))

    let tooLong = directory + "/" + String(repeating: "n", count: UnixSocketAddress.maxIndirectNameBytes + 1)
    #expect(throws: ControlError.socketPathTooLong(path: tooLong)) {
        try ControlClient.send(.status, to: tooLong, timeout: .seconds(1))
    }
}
