import CSSH2
import Foundation

/// Signs a handshaken session in, in OpenSSH's order: each key the ssh-agent holds, then the
/// key file, then the password; only the methods the server takes are tried. A refusal names
/// every method tried and what became of it, and what the server takes.
struct SSHAuthentication {
    let session: OpaquePointer
    let signIn: SSHSignIn
    /// `user@host` for messages.
    let server: String

    func authenticate() throws(RemoteError) {
        let offered = rangefs_ssh_auth_list(session, signIn.user)
        // A server that let the user in with no credentials at all ("none" succeeded).
        if offered == nil, libssh2_userauth_authenticated(session) != 0 { return }
        guard let offered else {
            throw .transport("\(server): no answer to the sign-in (\(SSHSession.lastError(session)))")
        }
        let methods = String(cString: offered).split(separator: ",").map(String.init)
        var tried: [String] = []
        if methods.contains("publickey") {
            if let socket = signIn.agentSocket {
                if let outcome = agent(socket: socket) { tried.append(outcome) } else { return }
            }
            if let keyFile = signIn.keyFile {
                if let outcome = key(keyFile) { tried.append(outcome) } else { return }
            }
        }
        if methods.contains("password"), let password = signIn.password {
            if rangefs_ssh_auth_password(session, signIn.user, password) == 0 { return }
            tried.append("the password was refused")
        }
        let what = tried.isEmpty ? "nothing this mount may sign in with is taken" : tried.joined(separator: "; ")
        throw .refused("\(server): authentication failed: \(what) (the server takes: \(methods.joined(separator: ", ")); "
                       + "give a key with --identity FILE, run ssh-agent, or --password-file FILE)")
    }

    /// Nil once a key of the agent was taken; else what became of the agent.
    private func agent(socket: String) -> String? {
        guard let agent = libssh2_agent_init(session) else { return "ssh-agent: libssh2 cannot use it" }
        defer { libssh2_agent_free(agent) }
        libssh2_agent_set_identity_path(agent, socket)
        guard libssh2_agent_connect(agent) == 0 else { return "ssh-agent: cannot connect to \(socket)" }
        defer { libssh2_agent_disconnect(agent) }
        guard libssh2_agent_list_identities(agent) == 0 else { return "ssh-agent: it lists no keys" }
        var previous: UnsafeMutablePointer<libssh2_agent_publickey>?
        var offered = 0
        while true {
            var identity: UnsafeMutablePointer<libssh2_agent_publickey>?
            guard libssh2_agent_get_identity(agent, &identity, previous) == 0, let identity else { break }
            offered += 1
            if libssh2_agent_userauth(agent, signIn.user, identity) == 0 { return nil }
            previous = identity
        }
        return offered == 0 ? "ssh-agent: it holds no key" : "ssh-agent: none of its \(offered) keys was taken"
    }

    /// Nil once the key was taken; else why not.
    private func key(_ path: String) -> String? {
        let result = rangefs_ssh_auth_key_file(session, signIn.user, path, signIn.passphrase ?? "")
        switch result {
        case 0:
            return nil
        case LIBSSH2_ERROR_FILE:
            let hint = signIn.passphrase == nil ? " (is it encrypted? give its passphrase with --passphrase-file)" : " (a wrong passphrase?)"
            return "the key \(path) cannot be read or decrypted\(hint)"
        default:
            return "the key \(path) was refused"
        }
    }
}
