import Foundation
import Logging
import RangeFSCore

extension MountRunner {
    /// The dialect of a Subsonic mount before its user signs in: it signs with the form of
    /// credentials the server took last time (kept in the cache database, the form alone), else
    /// with a token; `kept` says whether a form was kept.
    static func subsonicDialect(_ signIn: SubsonicSignIn, store: MetadataStore) -> (dialect: SubsonicDialect, kept: Bool) {
        let kept: SubsonicCredentials.Form? = switch (try? store.setting(signInKey(signIn))) ?? nil {
        case "token": .token
        case "hex-password": .hexPassword
        default: nil
        }
        return (signIn.dialect(form: kept ?? .token), kept != nil)
    }

    /// Signs a Subsonic server's user in through the mount's own `client`, whose requests
    /// `dialect` signs: a wrong password or a server that refuses says so before anything is
    /// mounted. A server that cannot be reached is signed in to later with the form it took last
    /// time, so a mount offline shows the library kept at once.
    static func signIn(_ signIn: SubsonicSignIn, dialect: SubsonicDialect, kept: Bool, client: any RemoteClient,
                       store: MetadataStore, logger: Logger) throws {
        let server = signIn.address.displayName
        // With a form kept, an unreachable server is not waited for: the library kept shows at once.
        var policy = FetchPolicy()
        if kept { policy.maxAttempts = 1 }
        do throws(SubsonicSignInError) {
            let form = try signIn.signIn(through: client, dialect: dialect, policy: policy)
            try? store.setSetting(signInKey(signIn), to: form == .token ? "token" : "hex-password")
        } catch {
            switch error {
            case .unreachable(let reason):
                logger.warning("\(server): cannot sign in now (\(reason)); the library kept is shown, and \(signIn.user) signs in as last time when the server answers")
            case .refused, .unreadable:
                throw CommandFailure("cannot sign in to \(server) as \(signIn.user): \(error)")
            }
        }
    }

    private static func signInKey(_ signIn: SubsonicSignIn) -> String {
        "subsonic-sign-in " + signIn.address.base.absoluteString
    }
}
