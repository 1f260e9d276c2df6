import Foundation
import Testing
@testable import RangeFSCore

/// When a server is taken to ignore ranges, and for how long.
@Suite struct RangeIgnoringServersTests {
    static let server = "http://127.0.0.1:8080"
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func oneOrTwoFilesAnsweringWithTheWholeBodyMarkNothingTheThirdMarksTheServer() {
        var servers = RangeIgnoringServers()
        let markedByA = servers.rangesIgnored(by: Self.server, file: "a", now: Self.now)
        #expect(!markedByA)
        let markedByAAgain = servers.rangesIgnored(by: Self.server, file: "a", now: Self.now)
        #expect(!markedByAAgain, "the same file twice counted twice")
        let markedByB = servers.rangesIgnored(by: Self.server, file: "b", now: Self.now)
        #expect(!markedByB)
        #expect(!servers.ignoresRanges(Self.server, now: Self.now))
        let markedByC = servers.rangesIgnored(by: Self.server, file: "c", now: Self.now)
        #expect(markedByC)
        #expect(servers.ignoresRanges(Self.server, now: Self.now))
        #expect(!servers.ignoresRanges("http://127.0.0.1:8081", now: Self.now))
    }

    @Test func theMarkExpiresAndIsStoredWithItsEnd() {
        var servers = RangeIgnoringServers()
        for file in ["a", "b", "c"] { _ = servers.rangesIgnored(by: Self.server, file: file, now: Self.now) }
        let later = Self.now.addingTimeInterval(RangeIgnoringServers.markLifetime)
        #expect(servers.ignoresRanges(Self.server, now: later.addingTimeInterval(-1)))
        #expect(!servers.ignoresRanges(Self.server, now: later))

        let reread = RangeIgnoringServers(serialized: servers.serialized)
        #expect(reread.ignoresRanges(Self.server, now: Self.now))
        #expect(!reread.ignoresRanges(Self.server, now: later))
        var expired = reread
        let dropped = expired.dropExpired(now: later)
        #expect(dropped)
        #expect(expired.serialized.isEmpty)
    }

    @Test func aPartialReplyEndsTheMarkAndTheEvidence() {
        var servers = RangeIgnoringServers()
        for file in ["a", "b", "c"] { _ = servers.rangesIgnored(by: Self.server, file: file, now: Self.now) }
        let endedMark = servers.rangesServed(by: Self.server)
        #expect(endedMark)
        #expect(!servers.ignoresRanges(Self.server, now: Self.now))
        _ = servers.rangesIgnored(by: Self.server, file: "d", now: Self.now)
        _ = servers.rangesIgnored(by: Self.server, file: "e", now: Self.now)
        let endedEvidence = servers.rangesServed(by: Self.server)
        #expect(!endedEvidence, "evidence alone is not a stored mark")
        #expect(servers.knowsNothing(of: Self.server))
        let markedByF = servers.rangesIgnored(by: Self.server, file: "f", now: Self.now)
        #expect(!markedByF, "evidence from before the 206 still counted")
    }

    @Test func marksStoredWithoutAnEndAsEarlierMountsDidAreDropped() {
        let old = RangeIgnoringServers(serialized: "http://127.0.0.1:8080\nhttp://example.org:80")
        #expect(!old.ignoresRanges(Self.server, now: Self.now))
        #expect(old.serialized.isEmpty)
        #expect(RangeIgnoringServers(serialized: "\(Self.server)\tsoon").serialized.isEmpty)
    }
}
