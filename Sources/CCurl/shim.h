#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H
#include <stddef.h>
#include <curl/curl.h>

/* curl_easy_setopt and curl_easy_getinfo are C-variadic; Swift cannot call them. These
   fixed-arity wrappers set what HTTPPoster (the HTTP target, the one owner of libcurl) uses. */

/* CURL_GLOBAL_ALL is a macro expression Swift does not import. */
static inline CURLcode CCURL_global_init(void) { return curl_global_init(CURL_GLOBAL_ALL); }

/* One POST on a (possibly reused) easy handle: the body is copied, redirects are not followed,
   the whole transfer ends within timeout_ms, no signals (a multi-threaded process). */
static inline CURLcode CCURL_prepare_post(
    CURL *easy, const char *url, const void *body, long body_length, struct curl_slist *headers,
    long timeout_ms, curl_write_callback on_data, void *userdata)
{
    CURLcode code = CURLE_OK;
    if ((code = curl_easy_setopt(easy, CURLOPT_URL, url)) != CURLE_OK) return code;
    if ((code = curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L)) != CURLE_OK) return code;
    if ((code = curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L)) != CURLE_OK) return code;
    if ((code = curl_easy_setopt(easy, CURLOPT_POST, 1L)) != CURLE_OK) return code;
    if ((code = curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE, body_length)) != CURLE_OK) return code;
    if ((code = curl_easy_setopt(easy, CURLOPT_COPYPOSTFIELDS, body)) != CURLE_OK) return code;
    if ((code = curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers)) != CURLE_OK) return code;
    if ((code = curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, timeout_ms)) != CURLE_OK) return code;
    if ((code = curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_data)) != CURLE_OK) return code;
    if ((code = curl_easy_setopt(easy, CURLOPT_WRITEDATA, userdata)) != CURLE_OK) return code;
    return curl_easy_setopt(easy, CURLOPT_PRIVATE, userdata);
}

/* The HTTP status of the last response, 0 if none arrived. */
static inline long CCURL_response_code(CURL *easy) {
    long code = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
    return code;
}

/* What CCURL_prepare_post stored as the transfer's userdata. */
static inline void *CCURL_private(CURL *easy) {
    char *pointer = NULL;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, &pointer);
    return pointer;
}

/* CURLMsg's data is a union Swift reads awkwardly. */
static inline CURLcode CCURL_message_result(const CURLMsg *message) { return message->data.result; }
static inline int CCURL_message_done(const CURLMsg *message) { return message->msg == CURLMSG_DONE; }

/* The kinds of failure HTTPPoster names (0: another one, 1 timed out, 2 refused, 3 lost,
   4 unresolved host, 5 TLS). */
static inline int CCURL_failure_kind(CURLcode code) {
    switch (code) {
    case CURLE_OPERATION_TIMEDOUT: return 1;
    case CURLE_COULDNT_CONNECT: return 2;
    case CURLE_GOT_NOTHING: case CURLE_RECV_ERROR: case CURLE_SEND_ERROR: case CURLE_PARTIAL_FILE: return 3;
    case CURLE_COULDNT_RESOLVE_HOST: return 4;
    case CURLE_SSL_CONNECT_ERROR: case CURLE_PEER_FAILED_VERIFICATION: case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER: case CURLE_SSL_CACERT_BADFILE: case CURLE_SSL_ISSUER_ERROR: return 5;
    default: return 0;
    }
}

#endif
