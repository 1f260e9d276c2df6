import Foundation
import Testing
@testable import RangeFSCore

/// What the cache database knows a file by.
struct CacheKeyTests {
    @Test func aURLWithoutSecretsIsItsOwnKey() {
        let url = URL(string: "http://files.test/dir/a.bin")!
        #expect(url.cacheKey == url.absoluteString)
        #expect(CacheKey.shown(url.cacheKey) == url.absoluteString)
    }

    @Test func aURLWithASecretIsKnownByItsRedactedTextAndADigest() {
        let one = URL(string: "http://u:pw-s3cret@files.test/a.bin?token=t-s3cret")!
        let two = URL(string: "http://u:pw-s3cret@files.test/a.bin?token=other")!
        #expect(!one.cacheKey.contains("s3cret"))
        #expect(one.cacheKey == URL(string: one.absoluteString)!.cacheKey, "the same URL gives the same key")
        #expect(one.cacheKey != two.cacheKey, "URLs redacted alike are told apart")
        #expect(CacheKey.shown(one.cacheKey) == "http://***@files.test/a.bin?token=***")
    }

    @Test func aLocationWithASecretIsNotStored() {
        #expect(CacheKey.storableLocation(URL(string: "http://m.test/a.bin")) == "http://m.test/a.bin")
        #expect(CacheKey.storableLocation(URL(string: "http://m.test/a.bin?X-Amz-Signature=abc")) == nil)
        #expect(CacheKey.storableLocation(nil) == nil)
    }
}
