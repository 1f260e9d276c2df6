import FaultServer
import Foundation
import Logging
@testable import RangeFSCore

/// A FaultServer on 127.0.0.1 and a libcurl client that logs nothing, for the tests of whole
/// documents and listings. Both stop when this goes away, also when a test failed.
final class LoopbackHTTP {
    let server: FaultServer
    let client: CurlClient
    let logger: Logger

    init() throws {
        server = try FaultServer()
        var logger = Logger(label: "rangefs-test")
        logger.logLevel = .critical
        self.logger = logger
        client = CurlClient(logger: logger)
    }

    deinit {
        client.shutdown()
        server.stop()
    }
}
