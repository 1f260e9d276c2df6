import CCurl
import Foundation

/// How a transfer's easy handle is set up before it goes out: what the request asks (method,
/// range, conditions, body) and the rules every request is reached by (protocols, timeouts,
/// trust, proxy, sign-in). The headers are the transfer's to merge and send.
extension CurlTransfer {
    /// What `setRequest` set, and what is left for the transfer: where the request goes, its
    /// method (for a signature), the caller's headers (they go to the asked URL's origin alone)
    /// and the request's own (conditions, encoding), which go to every hop.
    struct AskedRequest {
        var url: URL
        var method: String
        var callerHeaders: [String: String]
        var ownHeaders: [String: String]
    }

    static func setRequest(of spec: TransferSpec, on easy: UnsafeMutableRawPointer,
                           configuration: CurlClient.Configuration) -> AskedRequest {
        switch spec {
        case .probe(let url, let headers, let probeMethod, _, _):
            if probeMethod == .head {
                rangefs_easy_setopt_long(easy, CURLOPT_NOBODY, 1)
                return AskedRequest(url: url, method: "HEAD", callerHeaders: headers, ownHeaders: [:])
            }
            rangefs_easy_setopt_string(easy, CURLOPT_RANGE, "0-0")
            return AskedRequest(url: url, method: "GET", callerHeaders: headers, ownHeaders: [:])
        case .range(let request, _, _):
            var own: [String: String] = [:]
            // Large socket reads, small ones under a cap; probes keep libcurl's default buffer (an
            // SFTP read sets its own).
            rangefs_easy_setopt_long(easy, CURLOPT_BUFFERSIZE, receiveBufferBytes(cappedAt: request.maxBytesPerSecond))
            if SFTPVersion.isSFTP(request.url) {
                setSFTPRange(of: request, on: easy)
            } else if !request.wholeBody {
                rangefs_easy_setopt_string(easy, CURLOPT_RANGE, "\(request.range.lowerBound)-\(request.range.upperBound - 1)")
                if let condition = request.conditionHeader(configuration.dialect?.rangeCondition ?? .ifRange) {
                    own[condition.name] = condition.value
                }
            }
            if let rate = request.maxBytesPerSecond {
                rangefs_easy_setopt_off(easy, CURLOPT_MAX_RECV_SPEED_LARGE, curl_off_t(rate))
            }
            return AskedRequest(url: request.url, method: "GET", callerHeaders: request.headers, ownHeaders: own)
        case .document(let request, _, _):
            var own = request.conditionalHeaders
            if case .propfind(let body) = request.method {
                rangefs_easy_setopt_string(easy, CURLOPT_CUSTOMREQUEST, request.method.name)
                // Copied: libcurl reads the body while the transfer runs, after this returns.
                rangefs_easy_setopt_string(easy, CURLOPT_COPYPOSTFIELDS, body)
                own["Content-Type"] = "application/xml; charset=utf-8"
                own["Depth"] = "1"
            }
            rangefs_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, max(1, Int(request.timeout.timeInterval * 1000)))
            return AskedRequest(url: request.url, method: request.method.name, callerHeaders: request.headers, ownHeaders: own)
        }
    }

    static func setConnectionRules(on easy: UnsafeMutableRawPointer, configuration: CurlClient.Configuration) {
        // An SFTP mount's transfers go to its SSH server alone, signed in as its listings are.
        rangefs_easy_setopt_string(easy, CURLOPT_PROTOCOLS_STR, configuration.ssh == nil ? "http,https" : "sftp")
        configuration.ssh?.apply(to: easy)
        // libcurl would send custom headers to wherever a redirect leads: redirects are
        // followed here instead, one hop at a time (`RedirectHop`).
        rangefs_easy_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 0)
        rangefs_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        rangefs_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT, configuration.connectTimeoutSeconds)
        rangefs_easy_setopt_long(easy, CURLOPT_LOW_SPEED_LIMIT, 1)
        rangefs_easy_setopt_long(easy, CURLOPT_LOW_SPEED_TIME, configuration.stallTimeoutSeconds)
        rangefs_easy_setopt_long(easy, CURLOPT_TCP_KEEPALIVE, 1)
        rangefs_easy_setopt_string(easy, CURLOPT_USERAGENT, configuration.userAgent)
        if let caFile = configuration.caFile {
            rangefs_easy_setopt_string(easy, CURLOPT_CAINFO, caFile)
        }
        if let proxy = configuration.proxy {
            rangefs_easy_setopt_string(easy, CURLOPT_PROXY, proxy)
        }
        // Matched against each hop's own host: an entry signs in to its host alone.
        if let netrcFile = configuration.netrcFile {
            rangefs_easy_setopt_long(easy, CURLOPT_NETRC, Int(CURL_NETRC_OPTIONAL.rawValue))
            rangefs_easy_setopt_string(easy, CURLOPT_NETRC_FILE, netrcFile)
        }
    }
}
