import Foundation
import Testing

/// End-to-end tests: the real `rangefs` binary mounts manifests that point at a real
/// nginx on 127.0.0.1, and ordinary programs (`ls`, `stat`, `cat`, `cp`, `dd`,
/// `sha256sum`, `ffprobe`, `curl`) use the mount as child processes.
///
/// Every test gets its own nginx, work directory and cache directories (a `Fixture`),
/// and the suite runs one test at a time. `deinit` unmounts everything the test
/// mounted and stops nginx, also when the test failed.
///
/// Skipped only when /dev/fuse is missing. A missing nginx, ffmpeg or rangefs binary
/// fails the tests with a message saying what to install or build.
@Suite("RangeFS integration", .serialized,
       .enabled(if: Fixture.hasFuse, "/dev/fuse is missing: FUSE mounts are impossible on this machine"))
final class RangeFSIntegrationTests {
    let fx: Fixture

    init() throws {
        fx = try Fixture()
    }

    deinit {
        fx.teardown()
    }
}
