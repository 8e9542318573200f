// Prompt fixtures; see prompt_fixtures.hpp.
#include "prompt_fixtures.hpp"

#include "test_support.hpp"

namespace kforge::test {

const PromptLibrary& shipped_prompts()
{
    static const PromptLibrary library = PromptLibrary::load({source_dir() / "prompts"});
    return library;
}

const Task& rowscale_task()
{
    static const Task task = load_task(fixtures_dir() / "prompts" / "rowscale" / "rowscale_f32.json");
    return task;
}

Json sample_hardware()
{
    return Json{{"name", "NVIDIA H100 80GB HBM3"}, {"compute_capability", "9.0"}, {"sm_count", 132},
                {"memory_bandwidth_gbps", 3350}, {"peak_fp32_tflops", 67}, {"l2_bytes", 52428800},
                {"smem_per_sm_bytes", 233472}, {"registers_per_sm", 65536}};
}

CandidateView sample_parent()
{
    CandidateView parent;
    parent.id = 17;
    parent.source = rowscale_task().seeds.at(0).source;
    parent.verdict = Verdict{VerdictKind::correct, ""};
    parent.fitness = 1.8;
    parent.times = {{"M=4096,N=4096", 120000, 216000}, {"M=1,N=1048576", 9000, 15000}};
    parent.metrics = Json{{"dram_throughput_pct", 71.5}, {"registers", 24}, {"achieved_occupancy", 0.82}};
    parent.descriptors = Json{{"memory", "plain"}, {"compute", "scalar"}};
    parent.note = "four elements per thread";
    return parent;
}

CandidateView sample_inspiration(int index)
{
    CandidateView view;
    view.id = 30 + index;
    view.source = rowscale_task().seeds.at(1).source;
    view.verdict = Verdict{VerdictKind::correct, ""};
    view.fitness = 1.2 + 0.1 * index;
    view.times = {{"M=4096,N=4096", 150000.0 - 1000 * index, 216000}};
    view.descriptors = Json{{"memory", "plain"}, {"compute", "scalar"}, {"work_per_thread", index}};
    view.note = "one block per row";
    return view;
}

std::vector<Lesson> sample_lessons()
{
    Lesson a;
    a.task_name = "softmax_f32";
    a.text = "On bandwidth-bound row kernels, 128-bit loads (float4) raised DRAM throughput from 60% to 88%.";
    Lesson b;
    b.text = "Grid-stride loops with 4 independent loads in flight hid latency better than larger blocks.";
    return {a, b};
}

} // namespace kforge::test
