#ifndef MAPLOADER_CCURL_SHIM_H
#define MAPLOADER_CCURL_SHIM_H
#include <curl/curl.h>

/* curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: one typed
   wrapper per argument kind MapLoader passes. */
typedef size_t (*maploader_curl_data_callback)(char *, size_t, size_t, void *);
typedef int (*maploader_curl_progress_callback)(void *, curl_off_t, curl_off_t, curl_off_t, curl_off_t);

static inline CURLcode maploader_curl_set_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode maploader_curl_set_offset(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode maploader_curl_set_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode maploader_curl_set_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode maploader_curl_set_list(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode maploader_curl_set_data_callback(CURL *handle, CURLoption option, maploader_curl_data_callback value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode maploader_curl_set_progress_callback(CURL *handle, maploader_curl_progress_callback value) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, value);
}
static inline long maploader_curl_response_code(CURL *handle) {
    long code = 0;
    curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &code);
    return code;
}
static inline long maploader_curl_os_errno(CURL *handle) {
    long code = 0;
    curl_easy_getinfo(handle, CURLINFO_OS_ERRNO, &code);
    return code;
}
#endif
