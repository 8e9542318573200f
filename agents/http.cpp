// libcurl's easy interface behind RAII owners and one checking macro.
//
// Every option call goes through KF_CURL_CHECK, which names the call, the file and line, and
// libcurl's own error text. curl_easy_perform's result is not an error here but the transport
// outcome, sorted into the few kinds the retry logic needs (timeout / connection / fatal). The body
// is collected with a size cap, and the progress callback lets Ctrl-C abort a transfer at once.
#include "agents/http.hpp"

#include <ctime>
#include <mutex>

#include <curl/curl.h>

#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/text.hpp"

#define KF_CURL_CHECK(call)                                                                          \
    do {                                                                                             \
        CURLcode kf_curl_rc = (call);                                                                \
        if (kf_curl_rc != CURLE_OK)                                                                  \
            ::kforge::fail_runtime("{}:{}: {} failed: {}", __FILE__, __LINE__, #call,                \
                                   curl_easy_strerror(kf_curl_rc));                                  \
    } while (0)

namespace kforge {
namespace {

void init_curl_once()
{
    static std::once_flag once;
    std::call_once(once, [] {
        CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
        if (rc != CURLE_OK)
            fail_runtime("curl_global_init failed: {}", curl_easy_strerror(rc));
    });
}

class CurlHandle
{
public:
    CurlHandle() : m_handle(curl_easy_init())
    {
        if (!m_handle)
            fail_runtime("curl_easy_init failed (out of memory?)");
    }
    ~CurlHandle() { curl_easy_cleanup(m_handle); }
    CurlHandle(const CurlHandle&) = delete;
    CurlHandle& operator=(const CurlHandle&) = delete;
    CURL* get() const { return m_handle; }

private:
    CURL* m_handle;
};

class CurlHeaderList
{
public:
    CurlHeaderList() = default;
    ~CurlHeaderList() { curl_slist_free_all(m_list); }
    CurlHeaderList(const CurlHeaderList&) = delete;
    CurlHeaderList& operator=(const CurlHeaderList&) = delete;
    void append(const std::string& header)
    {
        curl_slist* grown = curl_slist_append(m_list, header.c_str());
        if (!grown)
            fail_runtime("curl_slist_append failed (out of memory?)");
        m_list = grown;
    }
    curl_slist* get() const { return m_list; }

private:
    curl_slist* m_list = nullptr;
};

struct Transfer {
    HttpResponse* response;
    size_t max_body_bytes;
    bool too_large = false;
};

size_t on_body(char* data, size_t size, size_t count, void* user)
{
    auto* transfer = static_cast<Transfer*>(user);
    size_t bytes = size * count;
    if (transfer->response->body.size() + bytes > transfer->max_body_bytes) {
        transfer->too_large = true;
        return 0; // makes libcurl stop with CURLE_WRITE_ERROR
    }
    transfer->response->body.append(data, bytes);
    return bytes;
}

size_t on_header(char* data, size_t size, size_t count, void* user)
{
    auto* transfer = static_cast<Transfer*>(user);
    size_t bytes = size * count;
    std::string_view line(data, bytes);
    // A new status line starts a new response (after a 100 Continue, say): forget older headers.
    if (line.substr(0, 5) == "HTTP/")
        transfer->response->retry_after.clear();
    size_t colon = line.find(':');
    if (colon != std::string_view::npos && to_lower(trim(line.substr(0, colon))) == "retry-after")
        transfer->response->retry_after = trim(line.substr(colon + 1));
    return bytes;
}

int on_progress(void*, curl_off_t, curl_off_t, curl_off_t, curl_off_t)
{
    return interrupt_requested() ? 1 : 0;
}

TransportFailure classify(CURLcode code, bool too_large)
{
    switch (code) {
    case CURLE_OK: return TransportFailure::none;
    case CURLE_OPERATION_TIMEDOUT: return TransportFailure::timeout;
    case CURLE_ABORTED_BY_CALLBACK: return TransportFailure::interrupted;
    case CURLE_WRITE_ERROR: return too_large ? TransportFailure::too_large : TransportFailure::connection;
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_NOT_BUILT_IN:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_OUT_OF_MEMORY: return TransportFailure::fatal;
    default: return TransportFailure::connection; // refused, reset, partial file, got nothing, ...
    }
}

} // namespace

HttpResponse http_post(const HttpRequest& request, const HttpTimeouts& timeouts, size_t max_body_bytes)
{
    init_curl_once();
    HttpResponse response;
    Transfer transfer{&response, max_body_bytes};
    CurlHandle curl;
    CurlHeaderList headers;
    for (const auto& header : request.headers)
        headers.append(header);
    headers.append("Expect:"); // no 100-continue round trip for large prompts
    char error_text[CURL_ERROR_SIZE] = {};

    CURL* h = curl.get();
    KF_CURL_CHECK(curl_easy_setopt(h, CURLOPT_URL, request.url.c_str()));
    KF_CURL_CHECK(curl_easy_setopt(h, CURLOPT_POST, 1L));
    KF_CURL_CHECK(curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.body.data()));
    KF_CURL_CHECK(curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size())));
    KF_CURL_CHECK(curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get()));
    KF_CURL_CHECK(curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(timeouts.connect.count())));
    KF_CURL_CHECK(curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(timeouts.total.count())));
    KF_CURL_CHECK(curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L));
    KF_CURL_CHECK(curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L));
    KF_CURL_CHECK(curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L));
    KF_CURL_CHECK(curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L));
    KF_CURL_CHECK(curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, ""));
    KF_CURL_CHECK(curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_text));
    KF_CURL_CHECK(curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body));
    KF_CURL_CHECK(curl_easy_setopt(h, CURLOPT_WRITEDATA, &transfer));
    KF_CURL_CHECK(curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header));
    KF_CURL_CHECK(curl_easy_setopt(h, CURLOPT_HEADERDATA, &transfer));
    KF_CURL_CHECK(curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress));
    KF_CURL_CHECK(curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L));

    CURLcode rc = curl_easy_perform(h);
    response.failure = classify(rc, transfer.too_large);
    if (response.failure != TransportFailure::none) {
        response.error = error_text[0] ? error_text : curl_easy_strerror(rc);
        if (response.failure == TransportFailure::too_large)
            response.error = fmt::format("the reply exceeded {} bytes", max_body_bytes);
        response.status = 0;
        return response;
    }
    KF_CURL_CHECK(curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &response.status));
    return response;
}

std::optional<double> seconds_until_http_date(const std::string& date)
{
    init_curl_once();
    time_t when = curl_getdate(date.c_str(), nullptr);
    if (when == -1)
        return std::nullopt;
    return std::difftime(when, std::time(nullptr));
}

} // namespace kforge
