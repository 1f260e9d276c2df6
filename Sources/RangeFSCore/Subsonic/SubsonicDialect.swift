import Crypto
import Foundation
import Synchronization

/// How a request signs in to a Subsonic server: the API takes its credentials in the query of
/// every call (`u`, then `t` and `s`, or `p`), so they are added as each request goes out
/// (`ServerDialect.sentURL`) and never kept in a URL the mount stores, logs or shows.
public struct SubsonicCredentials: Sendable {
    /// Which of the API's two forms the server takes.
    public enum Form: Sendable, Equatable {
        /// `t` = md5(password + salt) with a fresh salt `s` per request (API 1.13 and later).
        case token
        /// `p=enc:HEX`, the password hex-encoded, for servers older than 1.13 (Supysonic reports 1.12.0).
        case hexPassword
    }

    public let user: String
    let password: String
    public let form: Form

    public init(user: String, password: String, form: Form) {
        self.user = user
        self.password = password
        self.form = form
    }

    /// The API version a request states: the oldest that has what the mount calls for its form
    /// (the ID3 calls are 1.8.0; token sign-in is 1.13.0), so no server finds the client too new.
    var apiVersion: String {
        form == .token ? "1.13.0" : "1.8.0"
    }

    /// The query items that sign one request in; `salt` is fresh for each.
    func queryItems(salt: String) -> [(name: String, value: String)] {
        let proof: [(name: String, value: String)] = switch form {
        case .token: [("t", Self.token(password: password, salt: salt)), ("s", salt)]
        case .hexPassword: [("p", "enc:" + Self.hex(Data(password.utf8)))]
        }
        return [("u", user)] + proof + [("v", apiVersion), ("c", "rangefs")]
    }

    /// The API's token: the md5 of the password followed by the salt, in lower-case hex.
    public static func token(password: String, salt: String) -> String {
        hex(Data(Insecure.MD5.hash(data: Data((password + salt).utf8))))
    }

    /// A salt of 12 random hex digits (the API asks for at least six characters).
    static func freshSalt() -> String {
        var generator = SystemRandomNumberGenerator()
        return hex(Data((0..<6).map { _ in UInt8.random(in: .min ... .max, using: &generator) }))
    }

    static func hex(_ bytes: Data) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }
}

/// What a Subsonic server needs beyond plain HTTP: its credentials in the query of each API call
/// to its own base URL (a fresh salt each time), nothing for another URL (where a redirect
/// led). Ranges use `If-Range`, as on any web server.
///
/// The form of the credentials can change once the mount's client carries the dialect: the
/// sign-in pings through that client (`SubsonicSignIn.signIn(through:dialect:)`) and sets the
/// form each ping tries, so the connection its ping opened is the one the mount goes on with.
/// Copies share the form.
public struct SubsonicDialect: ServerDialect {
    public let address: SubsonicAddress
    private let user: String
    private let password: String
    private let chosenForm: ChosenForm

    public init(address: SubsonicAddress, credentials: SubsonicCredentials) {
        self.address = address
        user = credentials.user
        password = credentials.password
        chosenForm = ChosenForm(credentials.form)
    }

    /// The credentials each request is signed with now.
    public var credentials: SubsonicCredentials {
        SubsonicCredentials(user: user, password: password, form: chosenForm.form)
    }

    /// Signs the requests that go out from now on with `form`.
    public func sign(with form: SubsonicCredentials.Form) {
        chosenForm.form = form
    }

    /// The form every copy of one dialect signs with. Its one lock is taken alone: nothing is
    /// locked while it is held, and it is held only to read or set the form.
    private final class ChosenForm: Sendable {
        private let current: Mutex<SubsonicCredentials.Form>

        init(_ form: SubsonicCredentials.Form) {
            current = Mutex(form)
        }

        var form: SubsonicCredentials.Form {
            get { current.withLock { $0 } }
            set { current.withLock { $0 = newValue } }
        }
    }

    public func authorizationHeaders(method: String, url: URL, date: Date) -> [String: String] { [:] }

    public var rangeCondition: RangeCondition { .ifRange }

    /// A track's `download` answered with an error document instead of the file.
    public func isErrorReply(url: URL, status: Int, headers: [(name: String, value: String)]) -> Bool {
        address.isAPICall(url) && url.path(percentEncoded: true).hasSuffix("/download.view")
            && SubsonicErrorReply.isErrorDocument(contentType: headers.first { $0.name == "content-type" }?.value)
    }

    public func errorDetail(url: URL, status: Int, body: [UInt8], headers: [(name: String, value: String)]) -> ServerErrorDetail? {
        guard let error = SubsonicErrorReply.parse(body) else {
            // An error document that names no error, or a web server's own error page.
            return isErrorReply(url: url, status: status, headers: headers)
                ? ServerErrorDetail(code: "unknown", explanation: "the server answered with an error document instead of the track")
                : nil
        }
        let hint = error.code == 40 ? "; the password changed since the mount signed in? mount again" : ""
        return ServerErrorDetail(code: String(error.code), explanation: "\(error)\(hint)")
    }

    public func sentURL(for url: URL) -> URL {
        sentURL(for: url, salt: SubsonicCredentials.freshSalt())
    }

    /// `url` signed in with `salt`; itself when it is not one of the server's API calls.
    func sentURL(for url: URL, salt: String) -> URL {
        guard address.isAPICall(url), var parts = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url }
        let signed = SubsonicAddress.query(credentials.queryItems(salt: salt))
        parts.percentEncodedQuery = [parts.percentEncodedQuery, signed].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: "&")
        return parts.url ?? url
    }
}
