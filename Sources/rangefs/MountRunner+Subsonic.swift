import Foundation
import Logging
import RangeFSCore

extension MountRunner {
    /// The dialect that signs a Subsonic server's requests in, once its user has signed in: a
    /// wrong password or a server that refuses says so before anything is mounted. A server that
    /// cannot be reached is signed in to later with the form it took last time (kept in the cache
    /// database, the form alone), so a mount offline shows the library kept at once.
    static func signedIn(_ signIn: SubsonicSignIn, configuration: CurlClient.Configuration, store: MetadataStore,
                         logger: Logger) throws -> SubsonicDialect {
        let key = "subsonic-sign-in " + signIn.address.base.absoluteString
        let server = signIn.address.displayName
        let kept: SubsonicCredentials.Form? = switch (try? store.setting(key)) ?? nil {
        case "token": .token
        case "hex-password": .hexPassword
        default: nil
        }
        // With a form kept, it is tried first, and an unreachable server is not waited for: the
        // library kept shows at once.
        var policy = FetchPolicy()
        if kept != nil { policy.maxAttempts = 1 }
        do throws(SubsonicSignInError) {
            let credentials = try signIn.credentials(configuration: configuration, policy: policy, trying: kept ?? .token)
            try? store.setSetting(key, to: credentials.form == .token ? "token" : "hex-password")
            return SubsonicDialect(address: signIn.address, credentials: credentials)
        } catch {
            switch error {
            case .unreachable(let reason):
                let form = kept ?? .token
                logger.warning("\(server): cannot sign in now (\(reason)); the library kept is shown, and \(signIn.user) signs in as last time when the server answers")
                return SubsonicDialect(address: signIn.address, credentials: signIn.credentials(form: form))
            case .refused, .unreadable:
                throw CommandFailure("cannot sign in to \(server) as \(signIn.user): \(error)")
            }
        }
    }
}
