#ifndef RANGEFS_CCURL_SHIM_H
#define RANGEFS_CCURL_SHIM_H

#include <curl/curl.h>
#include <sys/ioctl.h>

/* curl_easy_setopt / curl_easy_getinfo / curl_multi_setopt are variadic and do not
   import into Swift; these typed wrappers are the only way the Swift code calls them. */

static inline CURLcode rangefs_easy_setopt_long(CURL *h, CURLoption o, long v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode rangefs_easy_setopt_off(CURL *h, CURLoption o, curl_off_t v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode rangefs_easy_setopt_string(CURL *h, CURLoption o, const char *v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode rangefs_easy_setopt_pointer(CURL *h, CURLoption o, void *v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode rangefs_easy_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) {
    return curl_easy_setopt(h, o, v);
}

typedef size_t (*rangefs_data_callback)(char *ptr, size_t size, size_t nmemb, void *userdata);

static inline CURLcode rangefs_easy_setopt_write_callback(CURL *h, rangefs_data_callback cb) {
    return curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, cb);
}
static inline CURLcode rangefs_easy_setopt_header_callback(CURL *h, rangefs_data_callback cb) {
    return curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, cb);
}

static inline CURLcode rangefs_easy_getinfo_long(CURL *h, CURLINFO i, long *v) {
    return curl_easy_getinfo(h, i, v);
}
static inline CURLcode rangefs_easy_getinfo_off(CURL *h, CURLINFO i, curl_off_t *v) {
    return curl_easy_getinfo(h, i, v);
}
static inline CURLcode rangefs_easy_getinfo_string(CURL *h, CURLINFO i, char **v) {
    return curl_easy_getinfo(h, i, v);
}
static inline CURLcode rangefs_easy_getinfo_pointer(CURL *h, CURLINFO i, void **v) {
    return curl_easy_getinfo(h, i, v);
}
/* Bytes the kernel holds on the transfer's connection that libcurl has not read yet (0 when
   it has no connection or they cannot be counted). Only the thread that drives the handle asks. */
static inline int rangefs_easy_unread_socket_bytes(CURL *h) {
    curl_socket_t s = CURL_SOCKET_BAD;
    if (curl_easy_getinfo(h, CURLINFO_ACTIVESOCKET, &s) != CURLE_OK || s == CURL_SOCKET_BAD) return 0;
    int n = 0;
    return ioctl(s, FIONREAD, &n) == 0 ? n : 0;
}

static inline CURLMcode rangefs_multi_setopt_long(CURLM *m, CURLMoption o, long v) {
    return curl_multi_setopt(m, o, v);
}

/* curl_share_setopt is variadic too. */
static inline CURLSHcode rangefs_share_data(CURLSH *s, curl_lock_data d) {
    return curl_share_setopt(s, CURLSHOPT_SHARE, d);
}

/* CURLMsg carries a union; reading it from Swift is clumsy. */
static inline CURLcode rangefs_msg_result(const CURLMsg *msg) { return msg->data.result; }

/* An SFTP transfer's host key is taken only when the known-hosts file holds it for that host:
   an unknown or a changed key ends the transfer (libcurl would otherwise ask what to do). */
static inline int rangefs_ssh_key_only_known(CURL *h, const struct curl_khkey *known, const struct curl_khkey *found,
                                             enum curl_khmatch match, void *context) {
    (void)h; (void)known; (void)found; (void)context;
    return match == CURLKHMATCH_OK ? CURLKHSTAT_FINE : CURLKHSTAT_REJECT;
}
static inline CURLcode rangefs_easy_require_known_host_key(CURL *h) {
    return curl_easy_setopt(h, CURLOPT_SSH_KEYFUNCTION, rangefs_ssh_key_only_known);
}

#endif
