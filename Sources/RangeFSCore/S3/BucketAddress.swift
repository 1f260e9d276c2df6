import Foundation

/// Why an `s3://` address or its endpoint cannot be used.
public struct BucketAddressError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
}

/// Where a bucket's objects are asked for: the bucket and the prefix mounted, and the URLs of
/// objects, "directories" (prefixes) and listing pages, in path style
/// (`http://127.0.0.1:9000/bucket/key`, what MinIO, Ceph and most S3-compatible servers want)
/// or virtual-hosted style (`https://bucket.s3.eu-west-1.amazonaws.com/key`, what AWS wants).
///
/// A prefix is a directory of the mount; its URL is the URL its objects' keys would have, with
/// a `/` at the end, so the listed tree's rules (children below their directory's URL) hold.
public struct BucketAddress: Sendable, Equatable {
    public var bucket: String
    /// The part of the bucket mounted: "" for all of it, else ending in `/`.
    public var prefix: String
    public var region: String
    /// Everything up to the first key: `http://host:port/bucket/` or `https://bucket.host/`.
    public let base: URL

    /// - Parameters:
    ///   - endpoint: scheme, host and port of an S3-compatible server; nil for AWS in `region`.
    ///   - pathStyle: the bucket in the path rather than the host name. A bucket whose name
    ///     has a dot cannot be a host name under AWS's certificate: it always goes in the path.
    public init(bucket: String, prefix: String, region: String, endpoint: URL? = nil, pathStyle: Bool = false) throws(BucketAddressError) {
        guard Self.isValidBucketName(bucket) else {
            throw BucketAddressError(description: "'\(bucket)' is not a bucket name (3 to 63 lowercase letters, digits, '.', '-' and '_')")
        }
        self.bucket = bucket
        self.prefix = prefix.isEmpty || prefix.hasSuffix("/") ? prefix : prefix + "/"
        self.region = region
        let server: URLComponents
        if let endpoint {
            guard let components = URLComponents(url: endpoint, resolvingAgainstBaseURL: false),
                  let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
                  let host = components.host, !host.isEmpty,
                  components.path.isEmpty || components.path == "/", components.query == nil else {
                throw BucketAddressError(description: "--endpoint must be an http(s) URL of a server, such as http://127.0.0.1:9000 (got '\(endpoint.absoluteString)')")
            }
            server = components
        } else {
            server = URLComponents(string: "https://s3.\(region).amazonaws.com")!
        }
        var components = URLComponents()
        components.scheme = server.scheme?.lowercased()
        components.port = server.port
        if pathStyle || bucket.contains(".") {
            components.host = server.host
            components.percentEncodedPath = "/" + Self.encodeKey(bucket) + "/"
        } else {
            components.host = "\(bucket).\(server.host!)"
            components.percentEncodedPath = "/"
        }
        guard let base = components.url else {
            throw BucketAddressError(description: "no URL can be made of bucket '\(bucket)' at \(server.string ?? "")")
        }
        self.base = base
    }

    /// Reads `s3://bucket/prefix/` into the bucket and the prefix.
    public static func parse(s3URL text: String) throws(BucketAddressError) -> (bucket: String, prefix: String) {
        guard text.lowercased().hasPrefix("s3://") else {
            throw BucketAddressError(description: "'\(text)' is not an s3:// address")
        }
        let rest = text.dropFirst(5)
        let bucket = String(rest.prefix { $0 != "/" })
        guard !bucket.isEmpty else { throw BucketAddressError(description: "'\(text)' names no bucket: write s3://BUCKET/ or s3://BUCKET/PREFIX/") }
        let prefix = String(rest.dropFirst(bucket.count).drop { $0 == "/" })
        return (bucket, prefix)
    }

    /// The mount's top directory: the prefix's URL.
    public var rootURL: URL { directoryURL(prefix: prefix) }

    /// For messages: `s3://bucket/prefix/`.
    public var displayName: String { "s3://\(bucket)/\(prefix)" }

    public func objectURL(key: String) -> URL {
        URL(string: base.absoluteString + Self.encodeKey(key))!
    }

    /// A prefix ending in `/` (or "" for the bucket's top).
    public func directoryURL(prefix: String) -> URL {
        objectURL(key: prefix)
    }

    /// The key (or prefix) a URL of this bucket stands for; nil for a URL elsewhere.
    public func key(of url: URL) -> String? {
        let text = url.absoluteString
        guard text.hasPrefix(base.absoluteString) else { return nil }
        var path = text.dropFirst(base.absoluteString.count)
        if let query = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = path[..<query] }
        return PercentDecoding.decode(path)
    }

    /// One page of ListObjectsV2 below `prefix`, one level deep (`delimiter=/`), keys
    /// URL-encoded in the reply (so any key survives XML), going on from `continuationToken`.
    public func listingURL(prefix: String, continuationToken: String?) -> URL {
        var query = [("list-type", "2"), ("delimiter", "/"), ("encoding-type", "url"), ("prefix", prefix)]
        if let continuationToken { query.append(("continuation-token", continuationToken)) }
        let text = query.map { "\($0)=\(S3URIEncoding.encode($1, keepingSlashes: false))" }.joined(separator: "&")
        return URL(string: base.absoluteString + "?" + text)!
    }

    /// A key in a URL path, in the form S3 signs (so the path sent is the path signed).
    static func encodeKey(_ key: String) -> String {
        S3URIEncoding.encode(key, keepingSlashes: true)
    }

    /// AWS's rules for new buckets, loosened as S3-compatible servers are: 3–63 of
    /// lowercase letters, digits, `.`, `-`, `_` (older buckets), starting and ending with a
    /// letter or digit.
    static func isValidBucketName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (3...63).contains(bytes.count) else { return false }
        func isLetterOrDigit(_ byte: UInt8) -> Bool {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        }
        guard isLetterOrDigit(bytes.first!), isLetterOrDigit(bytes.last!) else { return false }
        return bytes.allSatisfy { isLetterOrDigit($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }
    }
}
