import ArgumentParser
import Foundation
import RangeFSCore

/// How an `s3://bucket/prefix/` address is reached and signed: shared by `mount` and `manifest`.
struct BucketOptions: ParsableArguments {
    @Option(help: "An S3-compatible server for s3:// addresses, e.g. http://127.0.0.1:9000 (MinIO, Ceph, R2, B2, Wasabi); default: AWS in --region.")
    var endpoint: String?

    @Flag(help: "Put the bucket in the URL's path (http://host/bucket/key), as MinIO and most S3-compatible servers want; without it, in the host name (https://bucket.host/key), as AWS wants.")
    var pathStyle = false

    @Option(help: "The bucket's region (default: $AWS_REGION, $AWS_DEFAULT_REGION, the profile's region, else us-east-1).")
    var region: String?

    @Option(help: "The profile of ~/.aws/credentials and ~/.aws/config to take keys and region from (default: the keys in $AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY, else $AWS_PROFILE, else default).")
    var profile: String?

    @Flag(help: "Send requests to the bucket unsigned, for a public bucket (no credentials are looked for).")
    var noSignRequest = false

    /// Whether any of these was given: they mean nothing without an s3:// address.
    var anyGiven: Bool {
        endpoint != nil || pathStyle || region != nil || profile != nil || noSignRequest
    }

    func validate() throws {
        if let endpoint, URL(string: endpoint)?.host == nil {
            throw ValidationError("--endpoint must be a URL such as http://127.0.0.1:9000 (got '\(endpoint)')")
        }
        if noSignRequest, profile != nil {
            throw ValidationError("--no-sign-request sends no credentials: --profile cannot be given with it")
        }
    }

    /// The bucket of an `s3://` address, with the region, endpoint and credentials resolved
    /// the way the AWS CLI resolves them; nil when `address` is not an s3:// address.
    func bucket(for address: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> BucketSource? {
        guard address.lowercased().hasPrefix("s3://") else {
            if anyGiven {
                throw ValidationError("--endpoint, --path-style, --region, --profile and --no-sign-request are for s3:// addresses (got '\(address)')")
            }
            return nil
        }
        do {
            let (bucket, prefix) = try BucketAddress.parse(s3URL: address)
            let home = URL(fileURLWithPath: environment["HOME"] ?? NSHomeDirectory())
            let settings = noSignRequest
                ? AWSSettings(credentials: nil, region: region ?? environment["AWS_REGION"] ?? environment["AWS_DEFAULT_REGION"], profile: nil)
                : try AWSSettings.resolve(profile: profile, region: region, environment: environment, home: home)
            let region = settings.region ?? "us-east-1"
            let location = try BucketAddress(bucket: bucket, prefix: prefix, region: region,
                                             endpoint: endpoint.flatMap(URL.init(string:)), pathStyle: pathStyle)
            if !noSignRequest, settings.credentials == nil {
                throw CommandFailure("""
                    no AWS credentials for \(location.displayName): set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, \
                    or give --profile of ~/.aws/credentials; for a public bucket, --no-sign-request
                    """)
            }
            let signer = settings.credentials.map { SigV4Signer(credentials: $0, region: region) }
            return BucketSource(address: location, dialect: S3Dialect(signer: signer, address: location))
        } catch let error as CommandFailure {
            throw error
        } catch {
            throw CommandFailure("\(address): \(error)")
        }
    }
}

/// A bucket to list and read: where it is and how its server is spoken to.
struct BucketSource {
    var address: BucketAddress
    var dialect: S3Dialect
}
