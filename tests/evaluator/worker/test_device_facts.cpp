// DeviceFacts survive the JSON trip between the GPU worker and the controller.
#include "kf_catch.hpp"

#include "evaluator/worker/device_facts.hpp"

using namespace kforge;

TEST_CASE("device facts round-trip through JSON, the driver version included", "[evaluator]")
{
    DeviceFacts facts;
    facts.name = "NVIDIA H100 80GB HBM3";
    facts.cc_major = 9;
    facts.sm_count = 132;
    facts.clock_khz = 1980000;
    facts.l2_bytes = 50331648;
    facts.driver_version = 13000;
    DeviceFacts back = DeviceFacts::from_json(facts.to_json());
    CHECK(back.name == facts.name);
    CHECK(back.cc_major == 9);
    CHECK(back.sm_count == 132);
    CHECK(back.clock_khz == 1980000);
    CHECK(back.l2_bytes == facts.l2_bytes);
    CHECK(back.driver_version == 13000);
    CHECK(back.to_json()["driver_version"] == "13.0");
}
