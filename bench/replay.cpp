// `kforge_bench replay`: the candidate's own launches, nothing else, for an external profiler.
//
// Inputs are generated with kforge's generator (same seeds as the evaluator's first input set), the
// plan is resolved for each bench shape and launched `runs` times with an L2 flush before each run.
// No CUPTI subscriber is active, because Nsight Compute needs to be the only one.
#include <fmt/format.h>

#include "bench/bench.hpp"
#include "core/plan_check.hpp"
#include "core/source.hpp"
#include "evaluator/compile/compile.hpp"
#include "evaluator/worker/internal.hpp"
#include "evaluator/worker/plan.hpp"
#include "util/error.hpp"
#include "util/hash.hpp"
#include "util/text.hpp"

namespace kforge::bench {

int run_replay(const BenchOptions& options, const std::string& task_path, const std::string& file, int runs)
{
    if (std::string problem = load_cuda_driver(); !problem.empty())
        fail_runtime("{}", problem);
    Task task = load_task(task_path);
    std::string source = file.empty() ? task.reference.source : read_file(file);
    Plan plan = file.empty() ? task.reference.plan : parse_plan(*extract_plan_json(source), "plan");
    ParamPoint params = enumerate_param_points(plan, 1).front();

    GpuContext context;
    InternalKernels internal(context, options.cache_dir);
    CompileRequest request;
    request.source = source;
    request.arch = context.facts().arch();
    request.params = params;
    for (const auto& launch : plan.launches)
        request.kernels.push_back(launch.kernel);
    CompileResult compiled = compile_with_nvrtc(request);
    if (!compiled.ok)
        fail_input("{} does not compile:\n{}", file.empty() ? "the reference" : file, compiled.message);
    LoadedKernels kernels(compiled.cubin, request.kernels);
    DeviceMemory flush(size_t{256} << 20);
    const auto& cu = driver();
    for (const auto& shape : task.bench) {
        BufferBindings buffers;
        std::vector<DeviceMemory> memory;
        ExprScope scope = task.scope_for(shape);
        for (const auto& arg : task.args) {
            if (!arg.is_tensor)
                continue;
            uint64_t count = static_cast<uint64_t>(task.element_count(arg, shape));
            memory.emplace_back(count * dtype_size(arg.dtype));
            if (arg.intent != Intent::out && arg.gen.dist != Generator::Dist::csr && arg.gen.dist != Generator::Dist::csr_cols) {
                KfGenParams p{};
                p.seed = shape.seed;
                p.stream = hash64(arg.name);
                p.dtype = static_cast<int>(arg.dtype);
                p.dist = arg.gen.dist == Generator::Dist::normal ? KF_NORMAL : KF_UNIFORM;
                p.a = arg.gen.dist == Generator::Dist::normal ? arg.gen.mean : arg.gen.low;
                p.b = arg.gen.dist == Generator::Dist::normal ? arg.gen.std : arg.gen.high;
                internal.generate(memory.back().get(), count, p);
            }
            buffers[arg.name] = memory.back().get();
        }
        ResolvedPlan resolved = resolve_plan(task, plan, shape, params);
        for (const auto& s : resolved.scratch) {
            memory.emplace_back(static_cast<size_t>(s.bytes));
            buffers[s.name] = memory.back().get();
        }
        for (int r = 0; r < runs; ++r) {
            KF_CU_CHECK(cu.cuMemsetD32Async(flush.get(), static_cast<unsigned>(r), flush.bytes() / 4, context.stream()));
            launch_plan(kernels, resolved, buffers, context.stream());
            KF_CU_CHECK(cu.cuStreamSynchronize(context.stream()));
        }
        fmt::print(stderr, "replayed {} x {} on {}\n", runs, task.name, shape.label);
    }
    return 0;
}

} // namespace kforge::bench
