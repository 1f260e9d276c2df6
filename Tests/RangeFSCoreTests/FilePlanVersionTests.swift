import Foundation
import Testing
@testable import RangeFSCore

/// A file made from a listing's stated size learns its version from its first reply
/// (`FilePlan+Version`): the rules, without a server.
@Suite("File plan: the version a first reply names")
struct FilePlanVersionTests {
    static let size: UInt64 = 1 << 20
    static let first = RemoteValidator(etag: "\"v1\"", lastModified: nil)
    static let other = RemoteValidator(etag: "\"v2\"", lastModified: nil)

    static func unprobed(blocks: [Int] = []) -> FilePlan {
        let layout = BlockLayout(fileSize: size, blockSize: PlanFixture.block)
        var bitmap = BlockBitmap(blockCount: layout.blockCount)
        for index in blocks { bitmap.insert(index) }
        return FilePlan(url: PlanFixture.origin, layout: layout, policy: PlanFixture.policy, blocks: bitmap, complete: false,
                        streamOnly: false, expectedSHA256: nil,
                        source: FetchSource(location: nil, validator: RemoteValidator(etag: nil, lastModified: nil)))
    }

    static func reply(_ validator: RemoteValidator, from finalURL: URL? = nil) -> RemoteFileInfo {
        RemoteFileInfo(size: size, validator: validator, modified: nil, finalURL: finalURL)
    }

    @Test func theFirstReplysVersionBecomesTheFilesAndIsSaved() {
        var plan = Self.unprobed()
        #expect(plan.learnsVersion)
        let (refused, actions) = plan.versionReplied(Self.reply(Self.first), asked: PlanFixture.origin)
        #expect(refused == nil)
        #expect(PlanFixture.lines(actions) == ["save source origin"])
        #expect(plan.source.validator == Self.first)
        #expect(!plan.learnsVersion, "later requests send it as If-Range")
    }

    @Test func aLaterReplyNamingTheSameVersionIsTakenAndAnotherIsAChange() {
        var plan = Self.unprobed()
        _ = plan.versionReplied(Self.reply(Self.first), asked: PlanFixture.origin)
        let (same, sameActions) = plan.versionReplied(Self.reply(Self.first), asked: PlanFixture.origin)
        #expect(same == nil && sameActions.isEmpty)
        let (changed, _) = plan.versionReplied(Self.reply(Self.other), asked: PlanFixture.origin)
        #expect(changed == .changed("ETag was \"v1\", now \"v2\""))
        #expect(plan.source.validator == Self.first, "the version named first stays the file's")
    }

    @Test func aRedirectedFirstReplyMakesItsPlaceTheSourceAndAnotherPlaceIsServedElsewhere() {
        var plan = Self.unprobed()
        let (refused, actions) = plan.versionReplied(Self.reply(Self.first, from: PlanFixture.mirror), asked: PlanFixture.origin)
        #expect(refused == nil)
        #expect(PlanFixture.lines(actions) == ["save source \(PlanFixture.mirror.absoluteString)"])
        #expect(plan.source.requestURL(origin: PlanFixture.origin) == PlanFixture.mirror)

        let (elsewhere, _) = plan.versionReplied(Self.reply(Self.other, from: PlanFixture.otherMirror), asked: PlanFixture.origin)
        guard case .servedElsewhere = elsewhere else {
            Issue.record("another mirror's reply is not this version's: \(String(describing: elsewhere))")
            return
        }
    }

    @Test func aServerThatNamesNoVersionLeavesNothingToLearnOrCompare() {
        var plan = Self.unprobed()
        let none = RemoteValidator(etag: nil, lastModified: nil)
        let (refused, actions) = plan.versionReplied(Self.reply(none), asked: PlanFixture.origin)
        #expect(refused == nil && actions.isEmpty)
        #expect(plan.learnsVersion)
    }

    @Test func aFileWithCachedBytesLearnsNoVersionFromAReply() {
        var plan = Self.unprobed(blocks: [0])
        #expect(!plan.learnsVersion, "bytes of an unknown version are not vouched for by a later reply")
        let (refused, actions) = plan.versionReplied(Self.reply(Self.first), asked: PlanFixture.origin)
        #expect(refused == nil && actions.isEmpty)
        #expect(plan.source.validator.isEmpty)
    }
}
