// The retry loop and its arithmetic; see retry.hpp for the policy and why jitter has its own Rng.
#include "agents/retry.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <thread>

#include <fmt/format.h>

#include "agents/http.hpp"
#include "util/interrupt.hpp"
#include "util/log.hpp"
#include "util/text.hpp"

namespace kforge {

std::optional<double> parse_retry_after(std::string_view value)
{
    std::string text = trim(value);
    if (text.empty())
        return std::nullopt;
    double seconds = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
    if (ec == std::errc() && end == text.data() + text.size())
        return seconds >= 0 && std::isfinite(seconds) ? std::optional<double>(seconds) : std::nullopt;
    if (auto until = seconds_until_http_date(text))
        return std::max(0.0, *until);
    return std::nullopt;
}

double backoff_delay(const RetryPolicy& policy, int retry, double unit)
{
    double full = policy.base_delay_s * std::pow(2.0, std::max(0, retry - 1));
    full = std::min(full, policy.max_delay_s);
    return full / 2 + unit * full / 2;
}

bool sleep_interruptibly(double seconds)
{
    using namespace std::chrono;
    auto until = steady_clock::now() + duration_cast<steady_clock::duration>(duration<double>(seconds));
    while (steady_clock::now() < until) {
        if (interrupt_requested())
            return false;
        auto left = until - steady_clock::now();
        std::this_thread::sleep_for(std::min<steady_clock::duration>(left, milliseconds(50)));
    }
    return !interrupt_requested();
}

RetryReport run_with_retries(const RetryPolicy& policy, Rng& jitter,
                             const std::function<AttemptJudgement(int attempt)>& attempt)
{
    RetryReport report;
    for (int number = 0;; ++number) {
        report.last = attempt(number);
        if (report.last.kind == AttemptKind::done)
            return report;
        report.reasons.push_back(report.last.reason);
        if (report.last.kind == AttemptKind::stop)
            return report;
        if (report.retries >= policy.max_retries) {
            report.gave_up = true;
            return report;
        }
        double wait = 0;
        if (report.last.retry_after) {
            if (*report.last.retry_after > policy.max_retry_after_s) {
                report.gave_up = true;
                report.last.reason += fmt::format(" (the server asked to wait {:.0f} s, more than the {:.0f} s "
                                                  "kforge waits)",
                                                  *report.last.retry_after, policy.max_retry_after_s);
                return report;
            }
            wait = *report.last.retry_after;
        } else {
            wait = backoff_delay(policy, report.retries + 1, jitter.uniform());
        }
        log_info("{}; retrying in {:.1f} s ({} of {})", report.last.reason, wait, report.retries + 1,
                 policy.max_retries);
        if (!sleep_interruptibly(wait)) {
            report.interrupted = true;
            return report;
        }
        ++report.retries;
    }
}

} // namespace kforge
