import CCurl
import Foundation

/// What an `sftp://` transfer sets and checks where an HTTP one has headers and a status: the
/// sign-in and host key rules (`SSHSignIn`), the range with its end-of-file byte and the file's
/// time (`SFTPReadCheck`), and libcurl's SSH failures said as what they mean.
extension CurlTransfer {
    /// libcurl's buffer for an SFTP read. libssh2 keeps four of them of reads in flight, and
    /// those past the range's end are still read by the server and sent over the link before the
    /// handle closes: with HTTP's large buffer a range cost the link two and a half times its
    /// bytes. This keeps what a range wastes small and a distant connection still busy
    /// (docs/benchmarks.md, "SFTP reads: what a range costs the link").
    static let sftpReadBufferBytes = 32 * 1024

    /// The range, the file's time and the read buffer; no condition header (SFTP has none: the
    /// time is checked).
    static func setSFTPRange(of request: RangeRequest, on easy: UnsafeMutableRawPointer) {
        if !request.wholeBody {
            rangefs_easy_setopt_string(easy, CURLOPT_RANGE, SFTPReadCheck.rangeText(request))
        }
        rangefs_easy_setopt_long(easy, CURLOPT_FILETIME, 1)
        rangefs_easy_setopt_long(easy, CURLOPT_BUFFERSIZE, sftpReadBufferBytes)
    }

    /// The verdict on an SFTP read before its first byte is used (or, without one, at its end).
    func sftpVerdict(_ request: RangeRequest) -> RemoteError? {
        var filetime: curl_off_t = -1
        rangefs_easy_getinfo_off(easy, CURLINFO_FILETIME_T, &filetime)
        let modified = filetime >= 0 ? Int64(filetime) : nil
        return SFTPReadCheck.beforeBody(request, deliverable: contentLength, modified: modified)
            ?? request.versionCheck?(SFTPReadCheck.repliedVersion(request, modified: modified))
    }

    /// libcurl's SSH failures that say something of the file or the sign-in, or nil for the
    /// others (a reset, a timeout: `transport`, tried again).
    static func sftpFailure(_ code: CURLcode, message: String) -> RemoteError? {
        switch code {
        case CURLE_BAD_DOWNLOAD_RESUME, CURLE_RANGE_ERROR:
            return .changed("the file is shorter now (\(message))")
        case CURLE_REMOTE_FILE_NOT_FOUND:
            return .changed("the file is no longer on the server (\(message))")
        case CURLE_PEER_FAILED_VERIFICATION:
            return .refused("the server's host key is not in the known-hosts file for this host, or is another: nothing is read from it (\(message))")
        case CURLE_REMOTE_ACCESS_DENIED, CURLE_LOGIN_DENIED, CURLE_SSL_CERTPROBLEM:
            return .refused(message)
        default:
            return nil
        }
    }
}

extension SSHSignIn {
    /// Signs an `sftp://` transfer in as the listings sign in, and takes the host key only when
    /// the known-hosts file holds it. The key file is always named: libcurl's own default is
    /// `~/.ssh/id_rsa` alone.
    func apply(to easy: UnsafeMutableRawPointer) {
        var methods = 0
        if agentSocket != nil { methods |= Int(CURLSSH_AUTH_AGENT) }
        if let keyFile {
            methods |= Int(CURLSSH_AUTH_PUBLICKEY)
            rangefs_easy_setopt_string(easy, CURLOPT_SSH_PRIVATE_KEYFILE, keyFile)
            // Empty: libssh2 derives the public key from the private one.
            rangefs_easy_setopt_string(easy, CURLOPT_SSH_PUBLIC_KEYFILE, "")
            if let passphrase { rangefs_easy_setopt_string(easy, CURLOPT_KEYPASSWD, passphrase) }
        }
        if let password {
            methods |= Int(CURLSSH_AUTH_PASSWORD)
            rangefs_easy_setopt_string(easy, CURLOPT_PASSWORD, password)
        }
        rangefs_easy_setopt_string(easy, CURLOPT_USERNAME, user)
        rangefs_easy_setopt_long(easy, CURLOPT_SSH_AUTH_TYPES, methods)
        rangefs_easy_setopt_string(easy, CURLOPT_SSH_KNOWNHOSTS, knownHostsFile)
        rangefs_easy_require_known_host_key(easy)
    }
}
