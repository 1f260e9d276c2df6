import Foundation

/// Finds which form of credentials a server takes, before anything is mounted: `ping` with a
/// token first; a server older than API 1.13 (it says its version in every reply, failed or
/// not) or one that answers error 41 is asked again with the hex password. A wrong password,
/// a user not allowed, a server too old or too new, is said then, as the server named it.
public struct SubsonicSignIn: Sendable {
    public let address: SubsonicAddress
    public let user: String
    let password: String

    public init(address: SubsonicAddress, user: String, password: String) {
        self.address = address
        self.user = user
        self.password = password
    }

    /// The dialect that signs requests with `form` until the sign-in chooses another.
    public func dialect(form: SubsonicCredentials.Form) -> SubsonicDialect {
        SubsonicDialect(address: address, credentials: SubsonicCredentials(user: user, password: password, form: form))
    }

    /// What one `ping` said.
    public enum PingAnswer: Sendable, Equatable {
        case ok
        case failed(SubsonicAPIError)
    }

    /// What to do after a `ping` in `form` answered `answer` (pure).
    public enum Next: Sendable, Equatable {
        case signedIn(SubsonicCredentials.Form)
        case retry(SubsonicCredentials.Form)
        case refused(SubsonicAPIError)
    }

    public static func next(after answer: PingAnswer, in form: SubsonicCredentials.Form) -> Next {
        switch answer {
        case .ok:
            return .signedIn(form)
        case .failed(let error):
            let tooOld = error.serverVersion.map { $0 < SubsonicVersion.tokenSignIn } ?? false
            if form == .token, tooOld || error.code == 41 { return .retry(.hexPassword) }
            return .refused(error)
        }
    }

    /// Signs in through `client`, the mount's own, whose requests `dialect` signs: each ping
    /// sets the dialect's form first, and the form the server took stays set. Through the
    /// mount's client, the connection the ping opened is the one the mount's first listing
    /// takes (over https a new connection costs two round trips). Bounded by the request's
    /// timeout and the policy's retries. The dialect's form is the one tried first: the one
    /// the server took last time saves a round trip.
    public func signIn(through client: any RemoteClient, dialect: SubsonicDialect, policy: FetchPolicy = FetchPolicy(),
                       timeout: Duration = .seconds(30)) throws(SubsonicSignInError) -> SubsonicCredentials.Form {
        var form = dialect.credentials.form
        // Two pings at most: the form tried first, then the hex password where the server wants it.
        for _ in 0..<2 {
            dialect.sign(with: form)
            let answer = try ping(through: client, policy: policy, timeout: timeout)
            switch Self.next(after: answer, in: form) {
            case .signedIn: return form
            case .retry(let other): form = other
            case .refused(let error): throw .refused(error)
            }
        }
        throw .unreadable("the server refused both forms of sign-in")
    }

    private func ping(through client: any RemoteClient, policy: FetchPolicy, timeout: Duration) throws(SubsonicSignInError) -> PingAnswer {
        // As a listing goes (`.stream`): the mount's first listing then finds this connection.
        let request = DocumentRequest(url: address.apiURL("ping", [:]), maxBytes: 64 << 10, timeout: timeout, connection: .stream)
        var download = DocumentDownload(request: request, client: client)
        download.policy = policy
        let document: FetchedDocument
        do throws(RemoteError) {
            document = try download.fetch()
        } catch {
            // A status is an answer: no Subsonic API there (a 404), or a web server's refusal.
            if case .status(let code, _, _) = error {
                throw .unreadable("\(address.apiURL("ping", [:]).redactedForDisplay) answered \(code)")
            }
            throw .unreachable(error)
        }
        do throws(SubsonicReplyError) {
            _ = try SubsonicReply.parse(document.bytes)
            return .ok
        } catch {
            switch error {
            case .api(let apiError): return .failed(apiError)
            case .unreadable(let reason): throw .unreadable(reason)
            }
        }
    }
}

/// Why a server could not be signed in to.
public enum SubsonicSignInError: Error, Sendable, CustomStringConvertible {
    /// The server said no.
    case refused(SubsonicAPIError)
    /// No answer (the network, the server down, a status that is not the API's).
    case unreachable(RemoteError)
    /// An answer that is not the API's.
    case unreadable(String)

    public var description: String {
        switch self {
        case .refused(let error): "\(error)"
        case .unreachable(let error): "\(error)"
        case .unreadable(let reason): "not a Subsonic server: \(reason)"
        }
    }
}
