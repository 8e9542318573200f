// `kforge task import`, end to end through the real binary and python3 with torch (Debian's
// python3-torch here: CPU only): fixture problems become specs the ordinary loader takes, bad
// files get a clear bad-input error, and an imported task runs the whole controller path on a
// simulated GPU through to an export with ModelNew.
#include "kf_catch.hpp"

#include <fstream>

#include "archive/archive.hpp"
#include "core/task.hpp"
#include "test_support.hpp"
#include "util/text.hpp"
#include "util/torch_python.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

std::filesystem::path torch_fixture(const std::string& name) { return fixtures_dir() / "torch" / name; }

// Imports `problem` (a fixture file) into `dir`; the spec is dir/<stem>.json.
CommandResult import_into(const TempDir& dir, const std::string& problem, std::vector<std::string> extra = {})
{
    std::filesystem::path spec = dir / (std::filesystem::path(problem).stem().string() + ".json");
    std::vector<std::string> args{"task", "import", torch_fixture(problem).string(), "-o", spec.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_kforge(args);
}

const ArgSpec& arg_named(const Task& task, const std::string& name)
{
    const ArgSpec* arg = task.find_arg(name);
    INFO(name);
    REQUIRE(arg);
    return *arg;
}

std::vector<std::string> dims(const ArgSpec& arg)
{
    std::vector<std::string> out;
    for (const auto& dim : arg.shape)
        out.push_back(dim.text());
    return out;
}

// A correct quick-GELU kernel (out = x * sigmoid(beta * x)) in the replay format's reply.
// (Several param points: the simulated GPU calls a few points in a hundred incorrect, by hash.)
const std::string k_gelu_kernel = R"cu(// out = x * sigmoid(beta * x): one element per thread.
/* kforge:plan
{ "params": {"BLOCK": [64, 128, 256, 512, 1024]},
  "launches": [{"kernel": "quick_gelu", "grid": ["ceil_div(batch_size * dim, BLOCK)"], "block": ["BLOCK"],
                "args": ["x", "beta", "out", {"value": "batch_size * dim", "dtype": "i64"}]}] }
*/
extern "C" __global__ void quick_gelu(const float* x, float beta, float* out, long long n)
{
    long long i = (long long)blockIdx.x * BLOCK + threadIdx.x;
    if (i < n)
        out[i] = x[i] / (1.0f + expf(-beta * x[i]));
}
)cu";

std::string replay_line(const std::string& reply, int i)
{
    Json record{{"schema", "kforge.llm_call/1"}, {"provider", "openai"}, {"model", "recorded-model"},
                {"purpose", "propose"}, {"reply", reply}, {"input_tokens", 2000}, {"output_tokens", 300},
                {"cost_usd", 0.0}, {"latency_s", 1.0}, {"status", "ok"}, {"started_at", 1795000000.0 + i}};
    return record.dump() + "\n";
}

} // namespace

TEST_CASE("task import turns fixture problems into specs the task loader takes", "[torch][import][e2e]")
{
    TempDir dir;
    SECTION("an activation with a scalar input")
    {
        CommandResult result = import_into(dir, "quick_gelu.py");
        INFO(result.err);
        REQUIRE(result.exit_code == 0);
        CHECK(trim(result.out) == (dir / "quick_gelu.json").string());
        CHECK_THAT(result.err, Catch::Contains("size symbols: batch_size, dim"));
        Task task = load_task(dir / "quick_gelu.json");
        CHECK(task.is_torch());
        CHECK(task.name == "quick_gelu");
        CHECK(std::filesystem::exists(dir / "quick_gelu.py")); // copied beside the spec
        CHECK(task.reference.source == read_file(torch_fixture("quick_gelu.py")));
        CHECK(dims(arg_named(task, "x")) == std::vector<std::string>{"batch_size", "dim"});
        CHECK(arg_named(task, "x").from.text() == "input 0");
        const ArgSpec& beta = arg_named(task, "beta");
        CHECK_FALSE(beta.is_tensor);
        CHECK(beta.from.text() == "input 1");
        CHECK(beta.value.text() == "1.702");
        const ArgSpec& out = arg_named(task, "out");
        CHECK(out.intent == Intent::out);
        CHECK(out.from.text() == "output 0");
        REQUIRE(out.check);
        CHECK_THAT(out.check->atol.text(), Catch::Contains("max_abs_ref"));
        CHECK(task.tests.size() == 3);
        REQUIRE(task.bench.size() == 1);
        CHECK(task.bench[0].sizes.at("batch_size") == 8192);
        CHECK(task.held_out.size() == 1);
        CHECK(task.seeds.empty());
        CHECK_FALSE(task.forbid.empty()); // an fp32 program: reduced precision is refused
    }
    SECTION("a convolution: parameters, and output dims affine in the input dims")
    {
        CommandResult result = import_into(dir, "conv_relu_bias.py");
        INFO(result.err);
        REQUIRE(result.exit_code == 0);
        Task task = load_task(dir / "conv_relu_bias.json");
        CHECK(arg_named(task, "conv_weight").from.text() == "param conv.weight");
        CHECK(dims(arg_named(task, "conv_weight")) == std::vector<std::string>{"16", "in_channels", "3", "3"});
        CHECK(dims(arg_named(task, "out")) == std::vector<std::string>{"batch_size", "16", "height - 2", "width - 2"});
        // Compound dims are also symbols a plan can name.
        bool derived = false;
        for (const auto& symbol : task.derived_symbols)
            derived = derived || (symbol.name == "out_d2" && symbol.value.text() == "height - 2");
        CHECK(derived);
        CHECK(task.bench[0].sizes.at("out_d2") == task.bench[0].sizes.at("height") - 2);
    }
    SECTION("a 0-dim output (a loss) is held as one element and marked zero_dim")
    {
        CommandResult result = import_into(dir, "cross_entropy.py");
        INFO(result.err);
        REQUIRE(result.exit_code == 0);
        Task task = load_task(dir / "cross_entropy.json");
        const ArgSpec& out = arg_named(task, "out");
        CHECK(dims(out) == std::vector<std::string>{"1"});
        CHECK(out.zero_dim);
        CHECK_FALSE(arg_named(task, "logits").zero_dim);
        CHECK_FALSE(arg_named(task, "targets").zero_dim);
    }
    SECTION("a mixed-precision program (fp32 in, fp16 out) may store fp16; a constant inside a tuple stays a constant")
    {
        CommandResult result = import_into(dir, "extra/causal_window_sum.py");
        INFO(result.err);
        REQUIRE(result.exit_code == 0);
        Task task = load_task(dir / "causal_window_sum.json");
        CHECK(arg_named(task, "x").dtype == DType::f32);
        CHECK(arg_named(task, "out").dtype == DType::f16);
        // Its output can only be written as __half: the fp32 rule must not forbid the type.
        CHECK(task.forbid.empty());
        CHECK_THAT(task.description, Catch::Contains("converting to or from the reduced dtype only where the program does"));
        // F.pad's width `window` changes no tensor dims: not a size symbol, the file's value kept.
        CHECK(task.bench[0].sizes.count("window") == 0);
        CHECK(dims(arg_named(task, "out")) == std::vector<std::string>{"batch_size", "channels", "length"});
    }
    SECTION("a BatchNorm runs in training mode, as KernelBench runs it, and the description says so")
    {
        CommandResult result = import_into(dir, "extra/batchnorm_train.py");
        INFO(result.err);
        REQUIRE(result.exit_code == 0);
        Task task = load_task(dir / "batchnorm_train.json");
        CHECK_THAT(task.description, Catch::Contains("in training mode unless its constructor calls eval()"));
        CHECK_THAT(task.description, Catch::Contains("`bn` (BatchNorm2d) normalises with the statistics of the batch"));
        CHECK_FALSE(Catch::Contains("eval mode").match(task.description));
        CHECK(arg_named(task, "bn_running_mean").from.text() == "param bn.running_mean");
    }
    SECTION("a strided transposed convolution's output dims are affine in the input's")
    {
        CommandResult result = import_into(dir, "extra/convtranspose2d_stride.py");
        INFO(result.err);
        REQUIRE(result.exit_code == 0);
        Task task = load_task(dir / "convtranspose2d_stride.json");
        CHECK(dims(arg_named(task, "out")) ==
              std::vector<std::string>{"batch_size", "64", "height * 2 + 1", "width * 2 + 1"});
    }
    SECTION("tensors a model holds outside its state_dict (an LSTM's initial state drawn in __init__) are arguments")
    {
        CommandResult result = import_into(dir, "extra/lstm_state_attr.py");
        INFO(result.err);
        REQUIRE(result.exit_code == 0);
        Task task = load_task(dir / "lstm_state_attr.json");
        for (const char* name : {"h0", "c0"}) {
            const ArgSpec& state = arg_named(task, name);
            CHECK(state.from.text() == std::string("param ") + name);
            CHECK(dims(state) == std::vector<std::string>{"2", "batch_size", "64"});
        }
        // The fp64 run converts them too, so the tolerance is measured, not KernelBench's fallback.
        const ArgSpec& out = arg_named(task, "out");
        REQUIRE(out.check);
        CHECK_THAT(result.err, Catch::Contains("max |own dtype - fp64|"));
    }
    SECTION("int elements of a module-level tuple shape are size symbols named by their index")
    {
        CommandResult result = import_into(dir, "extra/reverse_cumsum_tuple.py");
        INFO(result.err);
        REQUIRE(result.exit_code == 0);
        Task task = load_task(dir / "reverse_cumsum_tuple.json");
        CHECK(dims(arg_named(task, "x")) == std::vector<std::string>{"batch_size", "input_shape_0", "input_shape_1"});
        Json spec = Json::parse(read_file(dir / "reverse_cumsum_tuple.json"));
        CHECK_THAT(spec.at("symbols").at("input_shape_1").at("doc").get<std::string>(),
                   Catch::Contains("element 1 of the module tuple input_shape (4096 in the file)"));
        CHECK_FALSE(spec.at("symbols").contains("flip_dims_0")); // reaches only get_init_inputs()
    }
    SECTION("a tuple output with an integer part")
    {
        CommandResult result = import_into(dir, "logsumexp_argmax.py");
        INFO(result.err);
        REQUIRE(result.exit_code == 0);
        Task task = load_task(dir / "logsumexp_argmax.json");
        CHECK(arg_named(task, "out0").from.text() == "output 0");
        const ArgSpec& argmax = arg_named(task, "out1");
        CHECK(argmax.dtype == DType::i64);
        REQUIRE(argmax.check);
        CHECK(argmax.check->metric == CheckSpec::Metric::exact);
    }
}

TEST_CASE("task import refuses bad problem files with the reason, and refuses to overwrite", "[torch][import][e2e]")
{
    TempDir dir;
    CommandResult no_model = import_into(dir, "bad/no_model.py");
    CHECK(no_model.exit_code == 3);
    CHECK_THAT(no_model.err, Catch::Contains("no_model.py") && Catch::Contains("defines no Model"));
    CHECK_FALSE(std::filesystem::exists(dir / "no_model.json"));

    CommandResult dict = import_into(dir, "bad/forward_dict.py");
    CHECK(dict.exit_code == 3);
    CHECK_THAT(dict.err, Catch::Contains("forward returned a dict"));

    CommandResult random = import_into(dir, "bad/random_in_forward.py");
    CHECK(random.exit_code == 3);
    CHECK_THAT(random.err, Catch::Contains("not deterministic: two forwards"));

    CommandResult missing = run_kforge({"task", "import", (dir / "absent.py").string()});
    CHECK(missing.exit_code == 3);
    CHECK_THAT(missing.err, Catch::Contains("absent.py: no such file"));

    REQUIRE(import_into(dir, "quick_gelu.py").exit_code == 0);
    CommandResult again = import_into(dir, "quick_gelu.py");
    CHECK(again.exit_code == 2);
    CHECK_THAT(again.err, Catch::Contains("pass --force"));
    CHECK(import_into(dir, "quick_gelu.py", {"--force"}).exit_code == 0);
}

TEST_CASE("task import without a python3 that has torch says how to get one", "[torch][import][e2e]")
{
    TempDir dir;
    CommandResult result = run_kforge({"task", "import", torch_fixture("quick_gelu.py").string(), "-o",
                                       (dir / "q.json").string()},
                                      {"KFORGE_PYTHON=" + (dir / "no-python").string()});
    CHECK(result.exit_code == 4);
    CHECK_THAT(result.err, Catch::Contains("cannot import torch") || Catch::Contains("not found"));
    CHECK_THAT(result.err, Catch::Contains("KFORGE_PYTHON"));
}

TEST_CASE("an imported program runs the whole controller path on a simulated GPU, through to ModelNew",
          "[torch][e2e][slow]")
{
    TempDir dir;
    REQUIRE(import_into(dir, "quick_gelu.py").exit_code == 0);
    std::string spec = (dir / "quick_gelu.json").string();

    // Without seeds and without a model there is nothing to run: one line says so.
    CommandResult builtin = run_kforge({"optimize", spec, "-o", (dir / "none.kforge").string(), "--no-knowledge"},
                                       {"KFORGE_SIMULATE_GPUS=1"});
    CHECK(builtin.exit_code == 2);
    CHECK_THAT(builtin.err, Catch::Contains("no seed kernels") && Catch::Contains("--model"));
    CHECK_FALSE(std::filesystem::exists(dir / "none.kforge"));

    {
        std::ofstream replies(dir / "replies.jsonl");
        replies << replay_line("Fused elementwise.\n\n```cuda\n" + k_gelu_kernel + "```\n", 0)
                << replay_line("I am not sure what to do next.", 1);
    }
    std::string archive = (dir / "run.kforge").string();
    CommandResult run = run_kforge({"optimize", spec, "--model", "replay:" + (dir / "replies.jsonl").string(),
                                    "--budget", "2", "-o", archive, "--no-knowledge", "--progress", "lines"},
                                   {"KFORGE_SIMULATE_GPUS=1"});
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    // The baselines of an imported program are torch eager and torch.compile.
    CHECK_THAT(run.out, Catch::Contains("torch eager") && Catch::Contains("torch.compile"));

    CommandResult inspect = run_kforge({"inspect", archive, "--json"});
    REQUIRE(inspect.exit_code == 0);
    Json report = Json::parse(inspect.out);
    CHECK(report["run"]["reference_kind"] == "torch");
    bool compiled = false;
    for (const auto& baseline : report["baselines"])
        compiled = compiled || baseline["subject"] == "torch_compile";
    CHECK(compiled);
    {
        Archive opened = Archive::open(archive, OpenMode::read_only);
        auto best = opened.best_candidate();
        REQUIRE(best);
        CHECK(best->evaluation.verdict.is_correct());
    }

    std::filesystem::create_directories(dir / "export");
    CommandResult exported = run_kforge({"export", archive, "--best", "--torch", "-o", (dir / "export" / "g.cu").string()});
    INFO(exported.err);
    REQUIRE(exported.exit_code == 0);
    std::string loader = read_file(dir / "export" / "g_load.py");
    CHECK_THAT(loader, Catch::Contains("class ModelNew(_PROBLEM.Model):"));
    CHECK_THAT(loader, Catch::Contains("return load_op()(_contiguous(inputs[0]), float(inputs[1]))"));
    CHECK(read_file(dir / "export" / "quick_gelu.py") == read_file(torch_fixture("quick_gelu.py")));
    // ModelNew loads beside the program (the operator is built only when forward runs).
    CommandResult python = run_program(
        torch_python().executable, {"-c", "import importlib.util as u\n"
                                   "s = u.spec_from_file_location('l', '" + (dir / "export" / "g_load.py").string() + "')\n"
                                   "m = u.module_from_spec(s); s.loader.exec_module(m)\n"
                                   "model = m.ModelNew(*m._PROBLEM.get_init_inputs())\n"
                                   "print(type(model).__mro__[1].__name__)"});
    INFO(python.err);
    CHECK(python.exit_code == 0);
    CHECK(trim(python.out) == "Model");
}
