// Retrying a flaky operation: exponential backoff with jitter, Retry-After, a cap.
//
// run_with_retries() calls an attempt function until it says done or stop, or the retry cap is
// reached. Between attempts it sleeps: the server's Retry-After when it gave one, otherwise an
// exponential backoff with "equal jitter" (half fixed, half random), so many kforge processes that
// hit the same rate limit do not come back in lockstep. Sleeps end early on Ctrl-C.
//
// Jitter comes from an Rng owned by the caller and seeded from the OS, never from the search's
// Rng: a retry is an accident of the network, and drawing from the search's sequence would make
// a resumed run diverge from an uninterrupted one whenever the network misbehaved.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/rng.hpp"

namespace kforge {

struct RetryPolicy {
    int max_retries = 5;             // attempts after the first
    double base_delay_s = 1.0;       // backoff before retry 1; doubles each time
    double max_delay_s = 60.0;       // cap of the computed backoff
    double max_retry_after_s = 300;  // a longer Retry-After gives up instead of waiting
};

enum class AttemptKind {
    done,  // the attempt produced a usable result
    retry, // transient failure: try again if the cap allows
    stop,  // permanent failure: do not try again
};

struct AttemptJudgement {
    AttemptKind kind = AttemptKind::done;
    std::string reason;                 // why it failed, for the record
    std::optional<double> retry_after;  // seconds the server asked us to wait
};

struct RetryReport {
    int retries = 0;                    // attempts after the first
    AttemptJudgement last;              // the final attempt's judgement
    std::vector<std::string> reasons;   // one per failed attempt, in order
    bool gave_up = false;               // the cap was reached or Retry-After was too long
    bool interrupted = false;           // Ctrl-C during a backoff sleep
};

// Parses a Retry-After value: delta-seconds ("120") or an HTTP-date. nullopt when absent or
// unreadable; a date in the past gives 0.
std::optional<double> parse_retry_after(std::string_view value);

// Seconds to wait before retry number `retry` (1-based) when the server gave no Retry-After;
// `unit` is a uniform draw in [0, 1).
double backoff_delay(const RetryPolicy& policy, int retry, double unit);

// Runs `attempt` (given the 0-based attempt number) under `policy`. Never throws by itself;
// exceptions from `attempt` propagate.
RetryReport run_with_retries(const RetryPolicy& policy, Rng& jitter,
                             const std::function<AttemptJudgement(int attempt)>& attempt);

// Sleeps up to `seconds`, in slices, returning false when interrupted by Ctrl-C.
bool sleep_interruptibly(double seconds);

} // namespace kforge
