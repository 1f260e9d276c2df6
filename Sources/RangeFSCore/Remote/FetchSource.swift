import Foundation

/// Where a file's ranges are asked for, and which version they must be. A manifest URL that
/// redirects to mirrors (each with its own ETag, as nginx computes ETags from mtime and size)
/// is read from the place its redirect led to, with `If-Range` of that place's validator;
/// asking the manifest URL each time would meet another mirror's validator every other
/// request and take it for a change.
public struct FetchSource: Sendable, Equatable {
    /// Where a redirect of the manifest URL led; nil when the manifest URL answers itself.
    public var location: URL?
    /// The validator of the version cached, as sent by `location` (or the manifest URL).
    public var validator: RemoteValidator

    public init(location: URL?, validator: RemoteValidator) {
        self.location = location
        self.validator = validator
    }

    /// What a fresh answer about the file means for the version cached.
    public enum Verdict: Sendable, Equatable {
        /// Same place, same version.
        case same
        /// Another place (another mirror) answers now, with the same size: its bytes are
        /// taken as the same file's, and later ranges go there.
        case moved(FetchSource)
        /// The content really changed: another size, or another validator at the same place.
        case changed(String)
    }

    /// Compares the cached version (of `size` bytes, fetched from `origin` or its redirect
    /// target) with a probe of `probedURL` that answered `info`.
    public func verdict(on info: RemoteFileInfo, probedURL: URL, origin: URL, size: UInt64) -> Verdict {
        if info.size != size {
            return .changed("size was \(size), now \(info.size)")
        }
        let answeredFrom = info.finalURL ?? probedURL
        guard Self.samePlace(answeredFrom, location ?? origin) else {
            let moved = FetchSource(location: Self.samePlace(answeredFrom, origin) ? nil : answeredFrom,
                                    validator: info.validator)
            return .moved(moved)
        }
        if let why = ResponseCheck.versionChange(from: validator, to: info.validator) {
            return .changed(why)
        }
        return .same
    }

    /// The URL to send a range request to.
    public func requestURL(origin: URL) -> URL {
        location ?? origin
    }

    /// The headers for a request to `requestURL`: the manifest's where that is the manifest
    /// URL's origin, none where a redirect led to another (`headers(_:sentTo:origin:)`).
    public func requestHeaders(_ headers: [String: String], origin: URL) -> [String: String] {
        Self.headers(headers, sentTo: location ?? origin, origin: origin)
    }

    /// The manifest's `headers` (with the `--header`s) for a request to `target`: all of them
    /// on the origin of the manifest URL `origin` they were given for, none on another (a
    /// redirect's target, a mirror), as curl's `--location` leaves them behind.
    public static func headers(_ headers: [String: String], sentTo target: URL, origin: URL) -> [String: String] {
        target.isSameOrigin(as: origin) ? headers : [:]
    }

    private static func samePlace(_ a: URL, _ b: URL) -> Bool {
        a.absoluteString == b.absoluteString
    }
}
