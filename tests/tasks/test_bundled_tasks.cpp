// Invariants of the task suite bundled in tasks/: every spec loads, its shape lists do their jobs
// (tiny and odd tests, large bench shapes that still fit a GPU, held-out shapes unlike the bench
// ones and absent from the description), and every seed is a valid candidate at every shape and
// param point.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <regex>
#include <set>
#include <stdexcept>

#include "core/plan_check.hpp"
#include "core/source.hpp"
#include "core/task.hpp"
#include "test_support.hpp"

using kforge::Task;

namespace {

const std::vector<Task>& bundled_tasks()
{
    static const std::vector<Task> tasks = [] {
        std::vector<std::filesystem::path> specs;
        for (const auto& entry : std::filesystem::directory_iterator(kforge::test::source_dir() / "tasks"))
            if (entry.path().extension() == ".json")
                specs.push_back(entry.path());
        std::sort(specs.begin(), specs.end());
        std::vector<Task> loaded;
        for (const auto& spec : specs)
            loaded.push_back(kforge::load_task(spec));
        return loaded;
    }();
    return tasks;
}

// The bundled task `name`; fails the test when there is none.
const Task& bundled_task(const std::string& name)
{
    for (const auto& task : bundled_tasks())
        if (task.name == name)
            return task;
    FAIL("no bundled task " << name);
    throw std::logic_error("unreachable");
}

std::vector<const kforge::KernelFile*> seeds_and_reference(const Task& task)
{
    std::vector<const kforge::KernelFile*> files{&task.reference};
    for (const auto& seed : task.seeds)
        files.push_back(&seed);
    return files;
}

bool is_power_of_two(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

// Bytes of every tensor at a shape, plus a second copy of the outputs (the reference's).
double footprint_bytes(const Task& task, const kforge::Shape& shape)
{
    double bytes = 0;
    for (const auto& arg : task.args)
        if (arg.is_tensor)
            bytes += double(task.element_count(arg, shape)) * double(kforge::dtype_size(arg.dtype)) *
                     (arg.intent == kforge::Intent::in ? 1 : 2);
    return bytes;
}

} // namespace

TEST_CASE("the bundled suite is the twelve starter tasks and the L2-resident GELU", "[tasks]")
{
    std::set<std::string> names;
    for (const auto& task : bundled_tasks())
        names.insert(task.name);
    std::set<std::string> expected = {"axpy_f32",     "softmax_f32",   "layernorm_f32", "rmsnorm_bf16",
                                      "reduce_sum_f32", "transpose_f32", "sgemm_f32",     "hgemm_bf16",
                                      "spmv_csr_f32", "jacobi2d_f32",  "histogram_u8",  "scan_u32",
                                      "gelu_bf16"};
    CHECK(names == expected);
}

TEST_CASE("every bundled output is checked and every bundled task has seeds and a held-out shape", "[tasks]")
{
    for (const auto& task : bundled_tasks()) {
        INFO(task.name);
        for (const auto& arg : task.args)
            if (arg.is_tensor && arg.intent != kforge::Intent::in)
                CHECK(arg.check.has_value());
        CHECK(!task.seeds.empty());
        CHECK(task.seeds.size() <= 3);
        CHECK(!task.held_out.empty());
        CHECK(!task.description.empty());
        CHECK(!task.tags.empty());
    }
}

TEST_CASE("bundled tests include a tiny shape and an odd, non-power-of-two one", "[tasks]")
{
    for (const auto& task : bundled_tasks()) {
        INFO(task.name);
        bool tiny = false, odd = false, not_pow2 = false;
        bool all_aligned = std::all_of(task.symbols.begin(), task.symbols.end(),
                                       [](const kforge::SymbolSpec& s) { return s.multiple_of > 1; });
        for (const auto& shape : task.tests) {
            bool small = true;
            for (const auto& arg : task.args)
                if (arg.is_tensor)
                    small = small && task.element_count(arg, shape) <= 1024;
            tiny = tiny || small;
            for (const auto& symbol : task.symbols) {
                int64_t v = shape.sizes.at(symbol.name);
                odd = odd || (v > 1 && v % 2 == 1);
                not_pow2 = not_pow2 || !is_power_of_two(v);
            }
        }
        CHECK(tiny);
        CHECK(not_pow2);
        if (!all_aligned)
            CHECK(odd);
    }
}

// A bench shape must keep an H100 busy for tens of microseconds (at least 64 MB moved, about 20 us at
// 3.35 TB/s, or 1e11 operations), and the largest must move 130 MB or more, past any L2: a task may
// bench one shape whose output fits in L2 (gelu_bf16 at 2^24 does, on purpose), never only such.
TEST_CASE("bundled bench shapes fill a GPU and fit in 8 GB with the reference's outputs", "[tasks]")
{
    for (const auto& task : bundled_tasks()) {
        double largest_bytes = 0, largest_flops = 0;
        for (const auto& shape : task.bench) {
            INFO(task.name << " " << shape.label);
            kforge::ExprScope scope = task.scope_for(shape);
            double bytes = task.roofline.bytes.eval_real(scope);
            double flops = task.roofline.flops.eval_real(scope);
            CHECK((bytes >= 6.4e7 || flops >= 1e11));
            largest_bytes = std::max(largest_bytes, bytes);
            largest_flops = std::max(largest_flops, flops);
            CHECK(footprint_bytes(task, shape) <= 8e9);
        }
        INFO(task.name);
        CHECK((largest_bytes >= 1.3e8 || largest_flops >= 1e11));
        for (const auto& shape : task.held_out) {
            INFO(task.name << " held out " << shape.label);
            CHECK(footprint_bytes(task, shape) <= 8e9);
        }
    }
}

TEST_CASE("bundled held-out shapes differ from the bench ones, break powers of two and stay out of the description",
          "[tasks]")
{
    for (const auto& task : bundled_tasks()) {
        for (const auto& held : task.held_out) {
            INFO(task.name << " " << held.label);
            for (const auto& bench : task.bench)
                CHECK(held.sizes != bench.sizes);
            bool breaks = false;
            for (const auto& symbol : task.symbols) {
                int64_t v = held.sizes.at(symbol.name);
                breaks = breaks || !is_power_of_two(v);
                if (v >= 1000) {
                    INFO("symbol " << symbol.name << " = " << v);
                    CHECK(task.description.find(std::to_string(v)) == std::string::npos);
                }
            }
            CHECK(breaks);
        }
    }
}

TEST_CASE("every bundled plant lies inside its tensor at every shape", "[tasks]")
{
    for (const auto& task : bundled_tasks()) {
        for (const auto* list : {&task.tests, &task.bench, &task.held_out, &task.stress}) {
            for (const auto& shape : *list) {
                kforge::ExprScope scope = task.scope_for(shape);
                for (const auto& arg : task.args) {
                    for (const auto& plant : arg.gen.plants) {
                        INFO(task.name << " " << shape.label << " " << arg.name << " plant at " << plant.at.text());
                        int64_t at = plant.at.eval_int(scope);
                        CHECK(at >= 0);
                        CHECK(at < task.element_count(arg, shape));
                    }
                }
            }
        }
    }
}

TEST_CASE("every bundled reference and seed resolves at every shape and param point", "[tasks]")
{
    for (const auto& task : bundled_tasks()) {
        for (const auto* file : seeds_and_reference(task)) {
            INFO(task.name << " " << file->path.filename().string());
            size_t points = kforge::count_param_points(file->plan);
            CHECK(points <= size_t(task.limits.max_param_points));
            for (const auto& point : kforge::enumerate_param_points(file->plan, points)) {
                for (const auto* list : {&task.tests, &task.bench, &task.held_out, &task.stress}) {
                    for (const auto& shape : *list) {
                        INFO(shape.label << " " << kforge::describe_param_point(point));
                        CHECK_NOTHROW(kforge::resolve_plan(task, file->plan, shape, point));
                    }
                }
            }
        }
    }
}

TEST_CASE("every bundled seed passes the candidate screen: extern C kernels, used params, toolkit includes, "
          "no forbidden pattern",
          "[tasks]")
{
    const std::set<std::string> toolkit = {"mma.h", "cuda_fp16.h", "cuda_bf16.h", "cuda_pipeline.h",
                                           "cooperative_groups.h"};
    for (const auto& task : bundled_tasks()) {
        for (const auto* file : seeds_and_reference(task)) {
            INFO(task.name << " " << file->path.filename().string());
            std::string code = kforge::strip_comments_and_strings(file->source);
            // The kernel is declared extern "C" __global__ (launch bounds and return type in between).
            std::string declarations =
                std::regex_replace(file->source, std::regex("__launch_bounds__\\s*\\([^)]*\\)"), " ");
            for (const auto& launch : file->plan.launches) {
                std::regex declared("extern \"C\"\\s+__global__[\\w\\s]*\\b" + launch.kernel + "\\s*\\(");
                CHECK(std::regex_search(declarations, declared));
            }
            for (const auto& [param, values] : file->plan.params) {
                INFO("param " << param);
                CHECK(std::regex_search(code, std::regex("\\b" + param + "\\b")));
            }
            for (const auto& include : kforge::find_includes(file->source)) {
                INFO("include " << include.path);
                CHECK(include.angled);
                CHECK(toolkit.count(include.path) == 1);
            }
            if (file == &task.reference)
                continue;
            for (const auto& rule : task.forbid) {
                INFO("forbidden " << rule.regex);
                CHECK_FALSE(std::regex_search(code, std::regex(rule.regex)));
            }
        }
    }
}

TEST_CASE("the sgemm task forbids tensor-core and TF32 sources that its tolerance also rejects", "[tasks]")
{
    const Task* sgemm = &bundled_task("sgemm_f32");
    auto forbidden = [&](const std::string& source) {
        std::string code = kforge::strip_comments_and_strings(source);
        return std::any_of(sgemm->forbid.begin(), sgemm->forbid.end(), [&](const kforge::ForbiddenPattern& rule) {
            return std::regex_search(code, std::regex(rule.regex));
        });
    };
    CHECK(forbidden("#include <mma.h>\nusing namespace nvcuda;"));
    CHECK(forbidden("wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a;"));
    CHECK(forbidden("float t = __float_to_tf32(x);"));
    CHECK(forbidden("asm volatile(\"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 ...\");"));
    CHECK_FALSE(forbidden("acc = fmaf(a, b, acc); // no mma here"));
    // The tolerance: atol = 3e-5 * sqrt(K) with rtol 0 (tasks/README.md gives the arithmetic).
    kforge::ExprScope scope = sgemm->scope_for(sgemm->bench[0]);
    const auto& check = *sgemm->find_arg("C")->check;
    CHECK(check.atol.eval_real(scope) == Approx(3e-5 * std::sqrt(4096.0)));
    CHECK(check.rtol.eval_real(scope) == 0);
}

TEST_CASE("the layernorm task's tolerance admits fp32 rounding on nearly constant short rows", "[tasks]")
{
    // Two N(128, 1) values within ~0.01 of each other: the fp32 mean is off the fp64 one by up to
    // half an ulp of 128, and rstd (up to 1/sqrt(eps)) multiplies that into the output. With a fixed
    // atol of 5e-4 one input set in twenty failed every fp32 kernel at N = 2 (a suite run on an H200
    // lost all 53 layernorm candidates to one unlucky run secret). Sweep such rows and require the
    // task's tolerance at the N = 2 test shape to hold the worst fp32 error, and to stay tight on the
    // bench shapes.
    const Task* layernorm = &bundled_task("layernorm_f32");
    const auto& check = *layernorm->find_arg("y")->check;
    const kforge::Shape* two = nullptr;
    for (const auto& shape : layernorm->tests)
        if (shape.sizes.at("N") == 2)
            two = &shape;
    REQUIRE(two);
    double atol = check.atol.eval_real(layernorm->scope_for(*two));
    double rtol = check.rtol.eval_real(layernorm->scope_for(*two));
    const float gamma = 1.5f, eps = 1e-5f; // the largest gamma the task draws
    double worst = 0;
    for (int i = 0; i < 4000; ++i) {
        float a = 126.0f + 0.001f * static_cast<float>(i);
        for (float delta = 7.6e-6f; delta < 0.05f; delta *= 1.07f) {
            float b = a + delta;
            float mean = (a + b) / 2.0f;
            float da = a - mean, db = b - mean;
            float rstd = 1.0f / std::sqrt((da * da + db * db) / 2.0f + eps);
            double dmean = (double(a) + double(b)) / 2.0;
            double dda = double(a) - dmean, ddb = double(b) - dmean;
            double drstd = 1.0 / std::sqrt((dda * dda + ddb * ddb) / 2.0 + double(eps));
            double ref = dda * drstd * gamma;
            double err = std::fabs(double(da * rstd * gamma) - ref);
            worst = std::max(worst, err - rtol * std::fabs(ref));
        }
    }
    INFO("worst fp32 error at N = 2: " << worst << ", atol " << atol);
    CHECK(worst > 5e-4); // the sweep does reach the rows a fixed 5e-4 rejected
    CHECK(worst < atol);
    for (const auto& shape : layernorm->bench)
        CHECK(check.atol.eval_real(layernorm->scope_for(shape)) < 5.2e-4);
}
