// The roofline and the floor that flags impossible times (evaluator/worker/roofline.hpp), on an
// H100's facts: the floor grants the output bytes the L2 can absorb, so the bf16 GELU of issue 20
// (19.07 us at 2^24 elements, under the 20.0 us roofline) is not flagged, while a time under the
// floor still is, whatever the shape.
#include "kf_catch.hpp"

#include "core/task.hpp"
#include "evaluator/worker/device_facts.hpp"
#include "evaluator/worker/roofline.hpp"
#include "test_support.hpp"
#include "util/text.hpp"

using namespace kforge;

namespace {

DeviceFacts h100()
{
    DeviceFacts facts;
    facts.name = "NVIDIA H100 80GB HBM3";
    facts.cc_major = 9;
    facts.sm_count = 132;
    facts.clock_khz = 1980000;
    facts.memory_clock_khz = 2619000;
    facts.memory_bus_bits = 5120;
    facts.l2_bytes = 50 << 20;
    return facts;
}

const Task& gelu()
{
    static const Task task = load_task(test::source_dir() / "tasks" / "gelu_bf16.json");
    return task;
}

const Shape& bench_shape(const Task& task, int64_t n)
{
    for (const auto& shape : task.bench)
        if (shape.sizes.at("n") == n)
            return shape;
    FAIL("no bench shape with n = " << n);
    return task.bench.front();
}

} // namespace

TEST_CASE("an output that fits in L2 is free in the floor: the 2^24 GELU at 19.07 us is not flagged", "[evaluator]")
{
    DevicePeaks peaks = theoretical_peaks(h100());
    CHECK(peaks.dram_bytes_per_s == Approx(3.352e12).epsilon(1e-3));
    CHECK(peaks.l2_bytes == 50 << 20);
    RooflinePoint point = roofline_at(gelu(), bench_shape(gelu(), 1 << 24), peaks);
    CHECK(point.bytes == 4.0 * (1 << 24));
    CHECK(point.output_bytes == 2.0 * (1 << 24));       // y: 32 MiB of bf16
    CHECK(point.l2_absorbed_bytes == point.output_bytes); // all of it fits in 50 MiB
    CHECK(point.roofline_ns == Approx(20020).epsilon(2e-3));
    CHECK(point.floor_ns == Approx(10010).epsilon(2e-3)); // only the 32 MiB read must cross DRAM
    CHECK(point.roofline_ns > 19070);                    // the old check flagged the kernel...
    CHECK_FALSE(is_below_floor(gelu(), point, 19070));   // ...the floor does not
    CHECK(is_below_floor(gelu(), point, 9000));          // nothing correct reads 32 MiB in 9 us
}

TEST_CASE("an output larger than L2 is free only up to the L2's size", "[evaluator]")
{
    DevicePeaks peaks = theoretical_peaks(h100());
    RooflinePoint point = roofline_at(gelu(), bench_shape(gelu(), 1 << 28), peaks);
    CHECK(point.output_bytes == 2.0 * (1 << 28));
    CHECK(point.l2_absorbed_bytes == 50 << 20);
    double expected_ns = (4.0 * (1 << 28) - (50 << 20)) / peaks.dram_bytes_per_s * 1e9;
    CHECK(point.floor_ns == Approx(expected_ns));
    CHECK(point.floor_ns == Approx(0.951 * point.roofline_ns).epsilon(1e-3));
    CHECK(is_below_floor(gelu(), point, 0.99 * point.floor_ns));
    CHECK_FALSE(is_below_floor(gelu(), point, 1.01 * point.floor_ns));
}

TEST_CASE("the floor of a compute-bound shape is its FLOP at the peak, writes or not", "[evaluator]")
{
    Task sgemm = load_task(test::source_dir() / "tasks" / "sgemm_f32.json");
    DevicePeaks peaks = theoretical_peaks(h100());
    RooflinePoint point = roofline_at(sgemm, sgemm.bench.front(), peaks);
    CHECK(point.compute_ns == Approx(point.flops / peaks.fp32_flops * 1e9));
    CHECK(point.floor_ns == Approx(point.compute_ns));
    CHECK(point.roofline_ns == Approx(point.compute_ns));
    CHECK_THAT(describe_below_floor(0.5 * point.floor_ns, point), Catch::Contains("FLOP at the device's peak rate"));
}

TEST_CASE("an inout tensor's write may stay in L2 but its read may not", "[evaluator]")
{
    Json spec = Json::parse(read_file(test::source_dir() / "tasks" / "gelu_bf16.json"));
    spec["args"][1]["intent"] = "inout";
    spec["args"][1]["gen"] = Json{{"dist", "normal"}};
    spec["roofline"]["bytes"] = "6 * n"; // x read, y read and written
    Task task = parse_task(spec.dump(), "inout.json", test::source_dir() / "tasks");
    DevicePeaks peaks = theoretical_peaks(h100());
    RooflinePoint point = roofline_at(task, bench_shape(task, 1 << 24), peaks);
    CHECK(point.output_bytes == 2.0 * (1 << 24));
    CHECK(point.floor_ns == Approx(4.0 * (1 << 24) / peaks.dram_bytes_per_s * 1e9));
}

TEST_CASE("a task whose kernels may beat the model is never flagged; unknown peaks flag nothing", "[evaluator]")
{
    DevicePeaks peaks = theoretical_peaks(h100());
    Task stencil = load_task(test::source_dir() / "tasks" / "jacobi2d_f32.json");
    RooflinePoint point = roofline_at(stencil, stencil.bench.front(), peaks);
    CHECK(stencil.roofline.may_exceed);
    CHECK_FALSE(is_below_floor(stencil, point, 0.1 * point.floor_ns));

    RooflinePoint unknown = roofline_at(gelu(), gelu().bench.front(), DevicePeaks{});
    CHECK(unknown.floor_ns == 0);
    CHECK_FALSE(is_below_floor(gelu(), unknown, 1));
}

TEST_CASE("the reason for a flag names the times, the bytes L2 may hold and the roofline", "[evaluator]")
{
    DevicePeaks peaks = theoretical_peaks(h100());
    RooflinePoint point = roofline_at(gelu(), bench_shape(gelu(), 1 << 24), peaks);
    std::string why = describe_below_floor(4000, point);
    CHECK_THAT(why, Catch::Contains("4.00 us is under the floor of 10.01 us") &&
                        Catch::Contains("32.0 MiB of the 64.0 MiB moved may stay in L2") &&
                        Catch::Contains("the roofline is 20.02 us"));
}

TEST_CASE("device peaks carry the L2 size through JSON, and older JSON without it reads as none", "[evaluator]")
{
    DevicePeaks peaks = theoretical_peaks(h100());
    DevicePeaks back = DevicePeaks::from_json(peaks.to_json());
    CHECK(back.l2_bytes == peaks.l2_bytes);
    CHECK(back.dram_bytes_per_s == peaks.dram_bytes_per_s);
    Json old = peaks.to_json();
    old.erase("l2_bytes");
    DevicePeaks before = DevicePeaks::from_json(old);
    CHECK(before.l2_bytes == 0);
    RooflinePoint point = roofline_at(gelu(), bench_shape(gelu(), 1 << 24), before);
    CHECK(point.floor_ns == Approx(point.roofline_ns)); // nothing absorbed when the L2 is unknown
}
