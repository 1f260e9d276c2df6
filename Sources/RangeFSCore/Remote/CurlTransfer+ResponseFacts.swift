import CCurl
import Foundation

/// What libcurl knows of a transfer's final response: its status, length, timings and where
/// it came from after redirects.
extension CurlTransfer {
    var responseCode: Int {
        var code = 0
        rangefs_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &code)
        return code
    }

    /// The response came over HTTP/2 (or later): a connection that carries streams side by side.
    var spokeHTTP2: Bool {
        var version = 0
        rangefs_easy_getinfo_long(easy, CURLINFO_HTTP_VERSION, &version)
        return version >= Int(CURL_HTTP_VERSION_2_0)
    }

    /// From the request sent to the reply's first byte (libcurl's timings, of this hop).
    var serverTime: Duration {
        var sent: curl_off_t = 0, firstByte: curl_off_t = 0
        rangefs_easy_getinfo_off(easy, CURLINFO_PRETRANSFER_TIME_T, &sent)
        rangefs_easy_getinfo_off(easy, CURLINFO_STARTTRANSFER_TIME_T, &firstByte)
        return .microseconds(max(0, firstByte - sent))
    }

    var contentLength: UInt64? {
        var length: curl_off_t = -1
        rangefs_easy_getinfo_off(easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length)
        return length >= 0 ? UInt64(length) : nil
    }

    /// `redirected`: the transfer followed redirects to get here (`RedirectHop`).
    func responseFacts(redirected: Bool) -> ResponseFacts {
        ResponseFacts(status: responseCode, headers: responseHeaders.lines, contentLength: contentLength,
                      redirected: redirected)
    }

    /// The URL the final response came from. This hop's URL as asked when the dialect sent
    /// another (`ServerDialect.sentURL`): that one holds credentials.
    var effectiveURL: URL? {
        if sentURLDiffers { return requestURL }
        var text: UnsafeMutablePointer<CChar>?
        guard rangefs_easy_getinfo_string(easy, CURLINFO_EFFECTIVE_URL, &text) == CURLE_OK, let text else { return nil }
        return URL(string: String(cString: text))
    }
}
