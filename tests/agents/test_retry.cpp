// Retry arithmetic and the retry loop, without any network.
#include <catch2/catch.hpp>

#include <ctime>

#include "agents/retry.hpp"

using namespace kforge;

TEST_CASE("Retry-After is read as seconds or as an HTTP date", "[agents]")
{
    CHECK(parse_retry_after("7") == 7.0);
    CHECK(parse_retry_after(" 0 ") == 0.0);
    CHECK_FALSE(parse_retry_after(""));
    CHECK_FALSE(parse_retry_after("soon"));
    CHECK_FALSE(parse_retry_after("-3"));
    CHECK(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0); // in the past: no wait

    std::time_t later = std::time(nullptr) + 120;
    char date[64];
    std::strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", std::gmtime(&later));
    auto wait = parse_retry_after(date);
    REQUIRE(wait);
    CHECK(*wait > 100);
    CHECK(*wait <= 121);
}

TEST_CASE("backoff doubles from the base, is capped, and keeps half of itself fixed", "[agents]")
{
    RetryPolicy policy;
    policy.base_delay_s = 1;
    policy.max_delay_s = 10;
    CHECK(backoff_delay(policy, 1, 0.0) == 0.5);
    CHECK(backoff_delay(policy, 1, 0.999) == Approx(1.0).epsilon(0.01));
    CHECK(backoff_delay(policy, 3, 0.0) == 2.0);
    CHECK(backoff_delay(policy, 20, 0.5) == 7.5);
}

TEST_CASE("the retry loop stops at done, at stop, or at the cap", "[agents]")
{
    RetryPolicy policy;
    policy.max_retries = 3;
    policy.base_delay_s = 0.001;
    Rng jitter(1);
    int calls = 0;
    RetryReport report = run_with_retries(policy, jitter, [&](int attempt) {
        ++calls;
        return attempt < 2 ? AttemptJudgement{AttemptKind::retry, "flaky", {}} : AttemptJudgement{};
    });
    CHECK(calls == 3);
    CHECK(report.retries == 2);
    CHECK(report.last.kind == AttemptKind::done);
    CHECK(report.reasons.size() == 2);

    calls = 0;
    report = run_with_retries(policy, jitter, [&](int) {
        ++calls;
        return AttemptJudgement{AttemptKind::retry, "down", {}};
    });
    CHECK(calls == 4);
    CHECK(report.gave_up);
    CHECK(report.retries == 3);

    calls = 0;
    report = run_with_retries(policy, jitter, [&](int) {
        ++calls;
        return AttemptJudgement{AttemptKind::stop, "bad request", {}};
    });
    CHECK(calls == 1);
    CHECK_FALSE(report.gave_up);
}

TEST_CASE("a Retry-After longer than the policy allows gives up at once with the reason", "[agents]")
{
    RetryPolicy policy;
    policy.max_retry_after_s = 30;
    Rng jitter(1);
    int calls = 0;
    RetryReport report = run_with_retries(policy, jitter, [&](int) {
        ++calls;
        return AttemptJudgement{AttemptKind::retry, "HTTP 429", 3600.0};
    });
    CHECK(calls == 1);
    CHECK(report.gave_up);
    CHECK_THAT(report.last.reason, Catch::Contains("asked to wait 3600 s"));
}
