// One HTTP POST through libcurl, with the failure modes a caller must tell apart.
//
// This is the only code that touches libcurl. A request is sent once; retrying is the caller's
// business (retry.hpp), because only the caller knows whether a reply is usable. Transport failures
// are data (HttpResponse::failure), never exceptions: a timeout or a reset connection is an
// ordinary event on the way to a model. TLS verification is always on; proxies come from the
// standard environment variables (http_proxy, https_proxy, no_proxy), which libcurl reads itself.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace kforge {

struct HttpRequest {
    std::string url;
    std::vector<std::string> headers; // "Name: value"; may hold secrets, so never logged
    std::string body;
};

struct HttpTimeouts {
    std::chrono::milliseconds connect{10'000}; // TCP + TLS handshake
    std::chrono::milliseconds total{600'000};  // the whole exchange, reply included
};

// Why no usable HTTP response arrived.
enum class TransportFailure {
    none,        // a complete HTTP response arrived (any status)
    timeout,     // connect or total timeout
    connection,  // refused, reset, dropped mid-reply, truncated body: worth retrying
    fatal,       // bad URL, unsupported scheme, TLS certificate rejected: retrying cannot help
    too_large,   // the reply exceeded the size cap
    interrupted, // the user pressed Ctrl-C
};

struct HttpResponse {
    TransportFailure failure = TransportFailure::none;
    std::string error;        // libcurl's description when failure != none
    long status = 0;          // HTTP status of the final response; 0 when none arrived
    std::string body;
    std::string retry_after;  // the Retry-After header of the final response, "" when absent
};

// Sends `request` as a POST and waits for the reply. Thread-safe: each call uses its own curl
// handle. Throws Error(runtime) only when libcurl itself cannot be set up.
HttpResponse http_post(const HttpRequest& request, const HttpTimeouts& timeouts, size_t max_body_bytes);

// Seconds from now until an HTTP-date ("Wed, 21 Oct 2015 07:28:00 GMT"), negative when it is
// past; nullopt when the text is not a date libcurl understands.
std::optional<double> seconds_until_http_date(const std::string& date);

} // namespace kforge
