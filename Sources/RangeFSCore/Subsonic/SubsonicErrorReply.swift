import Foundation

/// A Subsonic server answers a call that failed with `200 OK` and an error document, in XML
/// unless the call asked for JSON: a `download` whose user was refused (the password changed
/// since the mount signed in) or whose track is gone comes back as
/// `<subsonic-response status="failed"><error code="40" message="…"/></subsonic-response>`.
/// Such a reply must never become a track's bytes: `SubsonicDialect` tells it apart by its
/// type before its body is used, and this reads it for the error it names. Pure.
enum SubsonicErrorReply {
    /// Whether a `2xx` reply of `type` (its `Content-Type`) to a `download` is an error document:
    /// a library's tracks are audio and video, never XML or JSON.
    static func isErrorDocument(contentType type: String?) -> Bool {
        guard let type = type?.lowercased().split(separator: ";").first?.trimmingCharacters(in: .whitespaces) else { return false }
        return ["text/xml", "application/xml", "application/json", "text/json"].contains(type)
    }

    /// The error an error document names, or nil when it names none. The body is the first few
    /// KiB of the reply; each scan over it is linear.
    static func parse(_ body: [UInt8]) -> SubsonicAPIError? {
        if case .api(let error)? = Result(catching: { () throws(SubsonicReplyError) in try SubsonicReply.parse(Data(body)) }).failure {
            return error
        }
        guard let text = String(validating: body, as: UTF8.self), text.contains("status=\"failed\""),
              let start = text.range(of: "<error") else { return nil }
        let tag = text[start.upperBound...].prefix { $0 != ">" }
        let code = attribute("code", in: tag).flatMap { Int($0) } ?? 0
        let message = attribute("message", in: tag).map(unescaped) ?? ""
        let version = attribute("version", in: text.prefix { $0 != ">" }).flatMap(SubsonicVersion.init)
        return SubsonicAPIError(code: code, message: message, serverVersion: version)
    }

    /// `name="value"` in a tag's text.
    private static func attribute(_ name: String, in tag: Substring) -> String? {
        guard let start = tag.range(of: " \(name)=\"") else { return nil }
        return String(tag[start.upperBound...].prefix { $0 != "\"" })
    }

    private static func unescaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&apos;", with: "'")
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&amp;", with: "&")
    }
}

private extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
