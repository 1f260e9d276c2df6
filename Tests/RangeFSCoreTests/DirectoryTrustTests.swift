import Foundation
import Testing
@testable import RangeFSCore

/// Which directories may hold the cache.
@Suite struct DirectoryTrustTests {
    static let user: uid_t = 1000

    static func facts(owner: uid_t = user, mode: mode_t, directory: Bool = true) -> DirectoryTrust.Facts {
        DirectoryTrust.Facts(owner: owner, mode: S_IFDIR | mode, isDirectory: directory)
    }

    @Test func theCacheMustBeTheUsersOwnAndWritableByNobodyElse() {
        #expect(DirectoryTrust.problem(withCache: Self.facts(mode: 0o700), user: Self.user) == nil)
        #expect(DirectoryTrust.problem(withCache: Self.facts(mode: 0o755), user: Self.user) == nil)
        #expect(DirectoryTrust.problem(withCache: Self.facts(owner: 65534, mode: 0o700), user: Self.user)?
            .contains("belongs to user 65534") == true)
        #expect(DirectoryTrust.problem(withCache: Self.facts(mode: 0o777), user: Self.user)?
            .contains("writable by its group and others (mode 777)") == true)
        #expect(DirectoryTrust.problem(withCache: Self.facts(mode: 0o1777), user: Self.user) != nil, "sticky is no excuse for the cache itself")
        #expect(DirectoryTrust.problem(withCache: Self.facts(mode: 0o770), user: Self.user)?.contains("its group") == true)
        #expect(DirectoryTrust.problem(withCache: Self.facts(mode: 0o777, directory: false), user: Self.user)?
            .contains("not a directory") == true)
    }

    @Test func aDirectoryAboveBelongsToRootOrTheUserAndOthersWriteOnlyWhereSticky() {
        #expect(DirectoryTrust.problem(withAncestor: Self.facts(owner: 0, mode: 0o755), user: Self.user) == nil)
        #expect(DirectoryTrust.problem(withAncestor: Self.facts(owner: 0, mode: 0o1777), user: Self.user) == nil)
        #expect(DirectoryTrust.problem(withAncestor: Self.facts(mode: 0o755), user: Self.user) == nil)
        #expect(DirectoryTrust.problem(withAncestor: Self.facts(owner: 0, mode: 0o777), user: Self.user) != nil)
        #expect(DirectoryTrust.problem(withAncestor: Self.facts(owner: 65534, mode: 0o755), user: Self.user) != nil)
    }
}
