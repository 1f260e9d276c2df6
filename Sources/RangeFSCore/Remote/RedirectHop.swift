import Foundation

/// One request of a transfer that follows redirects itself, hop by hop, rather than leaving
/// them to libcurl: libcurl sends a transfer's custom headers (an `X-Api-Key`, a signature's
/// session token) to wherever a redirect leads. Here the caller's headers go only to the origin
/// of the URL the caller asked for, as curl's `--location` leaves credentials behind when a
/// redirect leaves their origin; a redirect back to that origin gets them again. Pure: the
/// transfer reads the response, this says where it leads.
struct RedirectHop: Sendable, Equatable {
    /// The URL the caller asked for; its origin is the one the caller's headers were given for.
    let asked: URL
    /// Where this request goes.
    let url: URL
    /// Redirects followed to get here (0: the URL asked for).
    let count: Int

    init(asked: URL) {
        self.init(asked: asked, url: asked, count: 0)
    }

    private init(asked: URL, url: URL, count: Int) {
        self.asked = asked
        self.url = url
        self.count = count
    }

    /// The caller's headers for this hop: all of them on the asked URL's origin, none elsewhere.
    func headers(_ given: [String: String]) -> [String: String] {
        FetchSource.headers(given, sentTo: url, origin: asked)
    }

    /// The statuses that send the same request elsewhere (RFC 9110 §15.4), as libcurl follows them.
    static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]

    /// What a response of `status` with the `Location` header `locationHeader` means: the next
    /// hop (a relative location resolved against this hop's URL), nil when it is no redirect
    /// to follow (its status is then judged as any other), or why it cannot be followed.
    func next(status: Int, locationHeader: String?, maxRedirects: Int) -> Result<RedirectHop?, RemoteError> {
        guard Self.redirectStatuses.contains(status), let locationHeader,
              let location = URL(string: locationHeader, relativeTo: url)?.absoluteURL else { return .success(nil) }
        let scheme = location.scheme?.lowercased()
        guard scheme == "http" || scheme == "https" else {
            return .failure(.refused("redirect to \(location.redactedForDisplay): only http and https are followed"))
        }
        guard count < maxRedirects else {
            return .failure(.refused("more than \(maxRedirects) redirects, the last to \(location.redactedForDisplay)"))
        }
        return .success(RedirectHop(asked: asked, url: withAskedCredentials(location), count: count + 1))
    }

    /// `location` with the asked URL's `user:password` when it is on the same origin and names
    /// none of its own: like the headers, the URL's credentials go back to their origin.
    private func withAskedCredentials(_ location: URL) -> URL {
        guard location.user == nil, location.isSameOrigin(as: asked),
              let given = URLComponents(url: asked, resolvingAgainstBaseURL: false), given.percentEncodedUser != nil,
              var parts = URLComponents(url: location, resolvingAgainstBaseURL: false) else { return location }
        parts.percentEncodedUser = given.percentEncodedUser
        parts.percentEncodedPassword = given.percentEncodedPassword
        return parts.url ?? location
    }
}
