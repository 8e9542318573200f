// The launcher tests' comparison machinery; see export_harness.hpp.
#include "export/export_harness.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "archive/archive.hpp"
#include "archive/run_task.hpp"
#include "core/plan_check.hpp"
#include "core/source.hpp"
#include "test_support.hpp"
#include "util/text.hpp"

namespace kforge::test {
namespace {

const std::filesystem::path k_gxx = "/usr/bin/g++";
const std::filesystem::path k_nvcc = "/usr/local/cuda/bin/nvcc";

// The launcher's share of check_shape(): bounds of the symbols it takes, the constraints over
// them, tensor extents and element counts, and the integer scalars it evaluates. "" or why not.
std::string launcher_shape_problem(const Task& task, const LauncherSignature& sig,
                                   const Shape& shape)
{
    for (const auto& symbol : task.symbols) {
        if (!sig.symbols.count(symbol.name))
            continue;
        int64_t v = shape.sizes.at(symbol.name);
        if (v < symbol.min || (symbol.max && v > *symbol.max) || v % symbol.multiple_of != 0)
            return fmt::format("{}={} is out of bounds", symbol.name, v);
    }
    ExprScope scope = task.scope_for(shape);
    try {
        for (const auto& constraint : task.constraints) {
            auto names = constraint.names();
            bool checked = std::all_of(names.begin(), names.end(), [&](const std::string& n) {
                return sig.symbols.count(n) > 0;
            });
            if (checked && constraint.eval_int(scope) == 0)
                return "constraint " + constraint.text() + " does not hold";
        }
        for (const auto& arg : task.args) {
            for (const auto& dim : arg.shape)
                if (dim.eval_int(scope) < 1)
                    return "an extent of " + arg.name + " is below 1";
            task.element_count(arg, shape);
            if (!arg.is_tensor && !dtype_is_float(arg.dtype))
                arg.value.eval_int(scope);
        }
    } catch (const ExprError& e) {
        return e.what();
    }
    return "";
}

// A library step as the harness prints it: its site, algo and workspace bytes, its operands'
// buffer indexes in the library's order (-1 for none), then its numbers.
std::string format_step(const Task& task, const Plan& plan, size_t site, const ResolvedLibraryStep& step)
{
    std::string out = fmt::format("step {} {} {}", site, step.algo, step.workspace_bytes);
    for (const auto& role : library_operand_roles(step.op)) {
        const ResolvedOperand* operand = step.operand(role);
        out += fmt::format(" {}", operand ? plan_buffer_index(task, plan, operand->name) : -1);
    }
    if (step.op == LibraryOp::matmul) {
        const ResolvedMatmul& mm = step.matmul;
        out += fmt::format(" | {} {} {} {} {} {} {} {}", mm.m, mm.n, mm.k, mm.batch, mm.strides[0], mm.strides[1],
                           mm.strides[2], mm.strides[3]);
    } else {
        const ResolvedConv& cv = step.conv;
        out += fmt::format(" | {} {} {} {}", cv.n, cv.c, cv.k, cv.groups);
        for (int d = 0; d < 3; ++d)
            out += fmt::format(" {} {} {} {} {} {} {}", cv.size[d], cv.kernel[d], cv.stride[d], cv.padding[d],
                               cv.dilation[d], cv.output_padding[d], cv.out[d]);
    }
    return out + "\n";
}

// The resolved plan as the harness prints it.
std::string format_plan(const Task& task, const Plan& plan, const ResolvedPlan& resolved,
                        const ExprScope& scope)
{
    std::vector<size_t> sites;
    for (size_t i = 0; i < plan.launches.size(); ++i) {
        int64_t repeat = plan.launches[i].repeat ? plan.launches[i].repeat->eval_int(scope) : 1;
        sites.insert(sites.end(), static_cast<size_t>(repeat), i);
    }
    REQUIRE(sites.size() == resolved.launches.size());
    int64_t end = 0;
    std::string scratch;
    for (const auto& s : resolved.scratch) {
        int64_t offset = (end + 255) / 256 * 256;
        scratch += fmt::format("scratch {} {}\n", s.bytes, offset);
        end = offset + s.bytes;
    }
    std::string out = fmt::format("plan {} {}\n", resolved.launches.size(), end);
    for (size_t i = 0; i < resolved.launches.size(); ++i) {
        const ResolvedLaunch& launch = resolved.launches[i];
        if (launch.library) {
            out += format_step(task, plan, sites[i], *launch.library);
            continue;
        }
        out += fmt::format("launch {} {} {} {} {} {} {} {}", sites[i], launch.grid[0],
                           launch.grid[1], launch.grid[2], launch.block[0], launch.block[1],
                           launch.block[2], launch.smem);
        for (const auto& arg : launch.args) {
            if (arg.kind != ResolvedArg::Kind::scalar)
                out += fmt::format(" {}", plan_buffer_index(task, plan, arg.name));
            else
                out += fmt::format(" {}", dtype_is_float(arg.dtype) ? 0 : arg.int_value);
        }
        out += "\n";
    }
    return out + scratch;
}

std::string harness_source(const std::filesystem::path& cu, const Plan& plan,
                           const LauncherSignature& sig)
{
    std::vector<std::string> counts;
    std::vector<std::string> kinds; // 0 a kernel, 1 a matmul step, 2 a conv step
    for (const auto& launch : plan.launches) {
        counts.push_back(std::to_string(launch.library ? library_operand_roles(launch.library->op).size()
                                                       : launch.args.size()));
        kinds.push_back(!launch.library ? "0" : launch.library->op == LibraryOp::matmul ? "1" : "2");
    }
    std::string print_step; // nothing without library steps: the plan struct has no step numbers
    if (has_library_steps(plan))
        print_step = R"cpp(
            if (kind[l.site] != 0) {
                printf("step %d %lld %lld", l.site, (long long)l.algo, (long long)l.workspace_bytes);
                for (int a = 0; a < arg_count[l.site]; ++a)
                    printf(" %lld", (long long)l.arg[a]);
                if (kind[l.site] == 1) {
                    printf(" | %lld %lld %lld %lld", (long long)l.matmul.m, (long long)l.matmul.n,
                           (long long)l.matmul.k, (long long)l.matmul.batch);
                    for (int s = 0; s < 4; ++s)
                        printf(" %lld", (long long)l.matmul.stride[s]);
                } else {
                    printf(" | %lld %lld %lld %lld", (long long)l.conv.n, (long long)l.conv.c, (long long)l.conv.k,
                           (long long)l.conv.groups);
                    for (int d = 0; d < 3; ++d)
                        printf(" %lld %lld %lld %lld %lld %lld %lld", (long long)l.conv.size[d],
                               (long long)l.conv.kernel[d], (long long)l.conv.stride[d], (long long)l.conv.padding[d],
                               (long long)l.conv.dilation[d], (long long)l.conv.output_padding[d],
                               (long long)l.conv.out[d]);
                }
                printf("\n");
                continue;
            }
)cpp";
    std::vector<std::string> reads;
    std::vector<std::string> values;
    for (size_t i = 0; i < sig.sizes.size(); ++i) {
        reads.push_back(fmt::format("&v[{}]", i));
        values.push_back(fmt::format("(int64_t)v[{}]", i));
    }
    values.push_back("&plan");
    const std::string& f = sig.function;
    return fmt::format(R"cpp(#include "{0}"
#include <cstdio>

static {1}_plan plan;
static const int arg_count[] = {{{2}}};
static const int kind[] = {{{9}}};

int main(int argc, char** argv)
{{
    if (argc != 2)
        return 2;
    FILE* in = fopen(argv[1], "r");
    long long v[{3}] = {{0}};
    while (fscanf(in, "{4}", {5}) == {6}) {{
        if ({1}_resolve({7}) != 0) {{
            printf("refused %s\nend\n", {1}_last_error());
            continue;
        }}
        printf("plan %d %lld\n", plan.launch_count, (long long)plan.workspace_bytes);
        for (int i = 0; i < plan.launch_count; ++i) {{
            const {1}_launch& l = plan.launches[i];{10}
            printf("launch %d %u %u %u %u %u %u %u", l.site, l.grid[0], l.grid[1], l.grid[2],
                   l.block[0], l.block[1], l.block[2], l.smem);
            for (int a = 0; a < arg_count[l.site]; ++a)
                printf(" %lld", (long long)l.arg[a]);
            printf("\n");
        }}
        for (int s = 0; s < {8}; ++s)
            printf("scratch %lld %lld\n", (long long)plan.scratch_bytes[s],
                   (long long)plan.scratch_offset[s]);
        printf("end\n");
    }}
    fclose(in);
    return 0;
}}
)cpp",
                       cu.string(), f, join(counts, ", "), std::max<size_t>(1, sig.sizes.size()),
                       join(std::vector<std::string>(sig.sizes.size(), "%lld"), " "),
                       join(reads, ", "), sig.sizes.size(), join(values, ", "),
                       plan.scratch.size(), join(kinds, ", "), print_step);
}

} // namespace

RunInfo run_info_for(const Task& task)
{
    RunInfo run;
    run.run_id = task.name + "-20261201-120000";
    run.task_name = task.name;
    run.task_spec = task.spec_text;
    run.task_hash = task.spec_hash;
    run.task_files = snapshot_task_files(task);
    run.config = {{"search", {{"islands", 1}, {"budgets", {{"candidates", 10}}}}}};
    run.device = {{"name", "NVIDIA H100 80GB HBM3"}, {"driver_version", "580.65.06"}};
    run.toolkit_version = "13.0";
    run.kforge_version = "0.1.0";
    run.seed = 7;
    run.started_at = 1764590400.0;
    return run;
}

Plan seed_plan(const Task& task, const KernelFile& seed)
{
    if (auto json = extract_plan_json(seed.source))
        return parse_plan(*json, "plan");
    REQUIRE(task.default_plan);
    return *task.default_plan;
}

std::vector<int64_t> build_seed_archive(const std::filesystem::path& path, const Task& task)
{
    Archive archive = Archive::create(path, run_info_for(task));
    std::vector<int64_t> ids;
    for (size_t i = 0; i < task.seeds.size(); ++i) {
        Candidate c;
        c.source = task.seeds[i].source;
        c.source_hash = normalized_source_hash(c.source);
        c.origin = Origin::seed;
        c.evaluation.verdict = {VerdictKind::correct, ""};
        c.evaluation.fitness = 2.0 - 0.1 * static_cast<double>(i);
        c.evaluation.best_params =
            enumerate_param_points(seed_plan(task, task.seeds[i]), 1).front();
        ids.push_back(archive.insert_candidate(c));
    }
    return ids;
}

SizeValues sizes_of(const LauncherSignature& sig, const Shape& shape)
{
    SizeValues values;
    for (const auto& size : sig.sizes)
        values.push_back(shape.sizes.at(size.symbol));
    return values;
}

std::vector<SizeValues> hostile_sizes(const Task& task, const LauncherSignature& sig)
{
    const std::vector<int64_t> hostile = {0,
                                          1,
                                          3,
                                          16,
                                          1000,
                                          65536,
                                          (int64_t{1} << 20) + 16,
                                          2147483647,
                                          2147483648,
                                          (int64_t{1} << 32) + 16,
                                          int64_t{1} << 40,
                                          int64_t{1} << 62,
                                          INT64_MAX,
                                          -1};
    SizeValues base = sizes_of(sig, task.bench.front());
    std::vector<SizeValues> cases;
    for (int64_t v : hostile) {
        for (size_t i = 0; i < base.size(); ++i) {
            SizeValues one = base;
            one[i] = v;
            cases.push_back(one);
        }
        cases.push_back(SizeValues(base.size(), v));
    }
    return cases;
}

Expected kforge_resolution(const Task& task, const Plan& plan, const LauncherSignature& sig,
                           const ParamPoint& point, const SizeValues& sizes)
{
    Shape shape = task.tests.front(); // symbols the launcher does not take keep these values
    for (size_t i = 0; i < sig.sizes.size(); ++i)
        shape.sizes[sig.sizes[i].symbol] = sizes[i];
    try {
        for (const auto& derived : task.derived_symbols)
            shape.sizes[derived.name] = derived.value.eval_int(task.scope_for(shape));
    } catch (const ExprError& e) {
        return {true, e.what(), ""};
    }
    if (std::string problem = launcher_shape_problem(task, sig, shape); !problem.empty())
        return {true, problem, ""};
    try {
        ResolvedPlan resolved = resolve_plan(task, plan, shape, point);
        ExprScope scope = task.scope_for(shape);
        for (const auto& [name, value] : point)
            scope.ints[name] = value;
        return {false, "", format_plan(task, plan, resolved, scope)};
    } catch (const PlanError& e) {
        return {true, e.what(), ""};
    }
}

std::vector<std::string> run_resolve_harness(const std::filesystem::path& cu, const Plan& plan,
                                             const LauncherSignature& sig,
                                             const std::vector<SizeValues>& cases,
                                             const std::string& extra_flags)
{
    if (!std::filesystem::exists(k_gxx)) {
        WARN("resolve check skipped: " << k_gxx << " is not installed on this machine");
        return {};
    }
    auto dir = cu.parent_path();
    auto stem = cu.stem().string();
    write_text(dir / (stem + "_harness.cpp"), harness_source(cu, plan, sig));
    std::string inputs;
    for (const auto& values : cases) {
        std::vector<std::string> words;
        for (int64_t v : values)
            words.push_back(std::to_string(v));
        inputs += join(words, " ") + "\n";
    }
    write_text(dir / (stem + "_cases.txt"), inputs);
    auto exe = dir / (stem + "_harness");
    auto log = dir / (stem + "_harness.log");
    std::string command = fmt::format(
        "'{}' -std=c++17 -O1 -Wall -Wextra -Werror -DKFORGE_RESOLVE_ONLY {} '{}' -o '{}' > '{}' 2>&1",
        k_gxx.string(), extra_flags, (dir / (stem + "_harness.cpp")).string(), exe.string(),
        log.string());
    int rc = std::system(command.c_str());
    INFO("g++ output:\n" << slurp_file(log));
    REQUIRE(rc == 0);
    CommandResult run = run_program(exe, {(dir / (stem + "_cases.txt")).string()});
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    std::vector<std::string> answers;
    std::string current;
    for (const auto& text_line : split(run.out, '\n')) {
        if (text_line == "end") {
            answers.push_back(current);
            current.clear();
        } else if (!text_line.empty()) {
            current += text_line + "\n";
        }
    }
    REQUIRE(answers.size() == cases.size());
    return answers;
}

int compare_resolutions(const Task& task, const Plan& plan, const LauncherSignature& sig,
                        const ParamPoint& point, const std::vector<SizeValues>& cases,
                        const std::vector<std::string>& answers)
{
    int overflows = 0;
    for (size_t i = 0; i < cases.size() && i < answers.size(); ++i) {
        Expected expected = kforge_resolution(task, plan, sig, point, cases[i]);
        std::vector<std::string> labels;
        for (size_t s = 0; s < sig.sizes.size(); ++s)
            labels.push_back(fmt::format("{}={}", sig.sizes[s].symbol, cases[i][s]));
        INFO(task.name << " at " << join(labels, ",") << " with " << describe_param_point(point));
        INFO("kforge: " << (expected.refused ? "refused " + expected.reason : expected.plan));
        INFO("generated: " << answers[i]);
        bool refused = answers[i].rfind("refused ", 0) == 0;
        REQUIRE(refused == expected.refused);
        if (!refused) {
            CHECK(answers[i] == expected.plan);
            continue;
        }
        CHECK(answers[i].size() > std::string("refused \n").size());
        // kforge evaluates derived symbols before it checks the free ones' bounds; the generated
        // code checks a free size's bounds first. Where a size is out of bounds and a derived
        // symbol overflows, each names the problem it met first: both refuse, which is the
        // contract. Elsewhere an overflow must be reported as one.
        bool bound_first = answers[i].find("above its maximum") != std::string::npos ||
                           answers[i].find("below its minimum") != std::string::npos;
        if (expected.reason.find("overflow") != std::string::npos && !bound_first) {
            CHECK(answers[i].find("overflow") != std::string::npos);
            ++overflows;
        }
    }
    return overflows;
}

bool check_nvcc_compiles_file(const std::filesystem::path& file, const std::string& flags)
{
    if (!std::filesystem::exists(k_nvcc)) {
        WARN("nvcc check skipped: " << k_nvcc << " is not installed on this machine");
        return false;
    }
    auto log = file.string() + ".nvcc.log";
    std::string command = fmt::format("'{}' -c -gencode arch=compute_90a,code=sm_90a {} '{}' -o '{}.o' > '{}' 2>&1",
                                      k_nvcc.string(), flags, file.string(), file.string(), log);
    int rc = std::system(command.c_str());
    INFO("nvcc output:\n" << slurp_file(log));
    CHECK(rc == 0);
    return true;
}

} // namespace kforge::test
