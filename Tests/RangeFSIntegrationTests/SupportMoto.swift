import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// An S3 server on 127.0.0.1: moto's server mode (`pip install 'moto[server]'`), a real
/// implementation of the S3 protocol, signatures included: once `enable-auth` ran, every
/// request must carry a SigV4 signature of a key its IAM knows, checked by botocore's own
/// signer, and is allowed or denied by that key's policy. It runs through
/// `Tests/Fixtures/moto-server.py`, which has moto check the request as it was sent (see
/// there why). Buckets, objects and users are made with boto3 through
/// `Tests/Fixtures/s3-bucket.py`. `stop()` (also `deinit`) always stops it.
final class MotoServer {
    let port: UInt16
    private var child: BackgroundCommand?

    var endpoint: String { "http://127.0.0.1:\(port)" }

    /// Keys made by a `user` or `role` step.
    struct Keys: Decodable, Sendable {
        let AccessKeyId: String
        let SecretAccessKey: String
        let SessionToken: String?
    }

    struct Made: Decodable, Sendable {
        let users: [String: Keys]
        let roles: [String: Keys]
    }

    init(startTimeout: Double = 30) throws {
        guard Command.run(["python3", "-c", "import moto.server, boto3"], timeout: 60).succeeded else {
            throw HarnessError("moto's server is not installed: run scripts/install-deps.sh (pip install 'moto[server]' boto3)")
        }
        let launcher = RangeFSBinary.packageRoot.appendingPathComponent("Tests/Fixtures/moto-server.py").path
        (port, child) = try BackgroundCommand.listening("moto's server", timeout: startTimeout) { port in
            ["python3", launcher, "-H", "127.0.0.1", "-p", String(port)]
        }
    }

    func stop() {
        _ = child?.kill()
        child = nil
    }

    deinit { stop() }

    /// Runs the steps (see `Tests/Fixtures/s3-bucket.py`) and returns the keys they made.
    @discardableResult
    func setUp(_ steps: [[String: Any]], timeout: Double = 300) throws -> Made {
        let stepsFile = try Scratch.makeDir("s3-steps").appendingPathComponent("steps.json")
        defer { Scratch.remove(stepsFile.deletingLastPathComponent()) }
        try JSONSerialization.data(withJSONObject: steps).write(to: stepsFile)
        let script = RangeFSBinary.packageRoot.appendingPathComponent("Tests/Fixtures/s3-bucket.py").path
        let result = Command.run(["/bin/sh", "-c", "exec python3 \"$0\" \"$1\" < \"$2\"", script, endpoint, stepsFile.path],
                                 timeout: timeout)
        guard result.succeeded else { throw HarnessError("setting up the bucket failed:\n\(result)") }
        return try JSONDecoder().decode(Made.self, from: result.stdoutData)
    }

    /// A policy document allowing (or denying) `actions` on `resources`.
    static func policy(_ effect: String = "Allow", actions: [String], resources: [String]) -> [String: Any] {
        ["Version": "2012-10-17", "Statement": [["Effect": effect, "Action": actions, "Resource": resources]]]
    }
}
