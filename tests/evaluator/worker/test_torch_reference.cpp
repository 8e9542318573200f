// The GPU worker's PyTorch reference process (evaluator/worker/torch_reference.hpp) driven from C++
// on the CPU: buffers are files instead of device allocations (the process takes either), so the
// protocol, the seeds and the expected outputs are checked here without a GPU. The IPC path is
// scripts/gpu/checks/torch_ipc.py's, on a GPU machine.
#include "kf_catch.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>

#include "core/task.hpp"
#include "evaluator/worker/torch_reference.hpp"
#include "test_support.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

using namespace kforge;

namespace {

// One file of `bytes` zero bytes per buffer, and its location.
struct FileBuffers {
    test::TempDir dir;
    TensorLocations locations;
    void add(const std::string& name, uint64_t bytes)
    {
        auto path = dir / (name + ".bin");
        std::ofstream(path, std::ios::binary) << std::string(bytes, '\0');
        locations[name] = TensorLocation{"", path.string(), 0, bytes};
    }
    std::vector<float> floats(const std::string& name) const
    {
        std::string bytes = read_file(locations.at(name).file);
        std::vector<float> out(bytes.size() / 4);
        std::memcpy(out.data(), bytes.data(), out.size() * 4);
        return out;
    }
};

} // namespace

TEST_CASE("the reference process makes the program's inputs and expected outputs into given buffers",
          "[torch][evaluator]")
{
    Task task = load_task(test::fixtures_dir() / "torch" / "scale_rows" / "spec.json");
    TorchReference reference(task, "cpu");
    const Shape& shape = task.tests.at(0); // rows = 5
    auto buffers = [](bool outputs) {
        auto b = std::make_unique<FileBuffers>();
        b->add("x", 5 * 8 * 4);
        b->add("scale", 8 * 4);
        if (outputs)
            b->add("out", 5 * 8 * 4);
        return b;
    };

    auto first = buffers(true);
    Json reply = reference.prepare(shape, 7, ProgramOutputs::expected, first->locations);
    CHECK(reply.value("precision", "") == "fp64");
    std::vector<float> x = first->floats("x"), scale = first->floats("scale"), out = first->floats("out");
    bool nonzero = false;
    for (size_t i = 0; i < out.size(); ++i) {
        // An fp32 product is exact in fp64 and rounds to the fp32 product: the expected output is it.
        CHECK(out[i] == x[i] * scale[i % 8]);
        nonzero = nonzero || x[i] != 0;
    }
    CHECK(nonzero);

    // The same seed makes the same inputs and parameters; another makes others.
    auto again = buffers(false);
    reference.prepare(shape, 7, ProgramOutputs::none, again->locations);
    CHECK(again->floats("x") == x);
    CHECK(again->floats("scale") == scale);
    auto other = buffers(false);
    reference.prepare(shape, 8, ProgramOutputs::none, other->locations);
    CHECK(other->floats("x") != x);
    CHECK(other->floats("scale") != scale);
    CHECK(TorchReference::param_seed(7) != TorchReference::param_seed(8));
    CHECK(TorchReference::param_seed(7) != 7);

    // The program's own outputs (what task check compares with the expected ones).
    auto own = buffers(true);
    reference.prepare(shape, 7, ProgramOutputs::program, own->locations);
    CHECK(own->floats("out") == out);

    // Outputs are written only when asked for: a buffer for one in an inputs-only request is refused.
    auto stray = buffers(true);
    CHECK_THROWS_WITH(reference.prepare(shape, 7, ProgramOutputs::none, stray->locations),
                      Catch::Contains("out"));
}

TEST_CASE("the reference process refuses a buffer of the wrong size and keeps serving", "[torch][evaluator]")
{
    Task task = load_task(test::fixtures_dir() / "torch" / "scale_rows" / "spec.json");
    TorchReference reference(task, "cpu");
    FileBuffers wrong;
    wrong.add("x", 5 * 8 * 4 - 4);
    try {
        reference.prepare(task.tests.at(0), 1, ProgramOutputs::none, wrong.locations);
        FAIL("a short buffer was accepted");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::runtime);
        CHECK_THAT(std::string(e.what()), Catch::Contains("x"));
    }
    FileBuffers right;
    right.add("x", 5 * 8 * 4);
    CHECK_NOTHROW(reference.prepare(task.tests.at(0), 1, ProgramOutputs::none, right.locations));
}

TEST_CASE("warming torch.compile ahead is advice: it says why it did not warm and never throws", "[torch][evaluator]")
{
    Task task = load_task(test::fixtures_dir() / "torch" / "scale_rows" / "spec.json");
    TorchReference reference(task, "cpu");
    CHECK_THAT(reference.warm_compile(task.bench.at(0), 3), Catch::Contains("only a GPU"));
    FileBuffers right; // the process goes on serving
    right.add("x", 5 * 8 * 4);
    CHECK_NOTHROW(reference.prepare(task.tests.at(0), 1, ProgramOutputs::none, right.locations));
}

TEST_CASE("a program that cannot be loaded fails the reference process's setup with the reason", "[torch][evaluator]")
{
    test::TempDir dir;
    std::filesystem::copy(test::fixtures_dir() / "torch" / "scale_rows" / "spec.json", dir / "spec.json");
    {
        std::ofstream(dir / "problem.py") << "raise RuntimeError('this program is broken')\n";
    }
    Task task = load_task(dir / "spec.json");
    TorchReference reference(task, "cpu");
    try {
        reference.ensure_running();
        FAIL("a broken program was set up");
    } catch (const Error& e) {
        CHECK_THAT(std::string(e.what()), Catch::Contains("this program is broken"));
    }
}

TEST_CASE("the reference process is sent the program's size variables only, not the spec's derived symbols",
          "[torch][evaluator]")
{
    // conv_relu_bias.py as `kforge task import` writes it, cut to what the client reads: the
    // output's dims name the derived symbols out_d2 and out_d3, which every shape then holds too.
    const std::string spec = R"({
  "schema": "kforge.task/1", "name": "conv_relu_bias", "description": "test",
  "symbols": {"batch_size": {"min": 1}, "in_channels": {"min": 1}, "height": {"min": 1}, "width": {"min": 1},
              "out_d2": {"value": "height - 2"}, "out_d3": {"value": "width - 2"}},
  "args": [
    {"name": "x", "dtype": "f32", "shape": ["batch_size", "in_channels", "height", "width"], "from": "input 0"},
    {"name": "bias", "dtype": "f32", "shape": ["16", "1", "1"], "from": "param bias"},
    {"name": "conv_weight", "dtype": "f32", "shape": ["16", "in_channels", "3", "3"], "from": "param conv.weight"},
    {"name": "conv_bias", "dtype": "f32", "shape": ["16"], "from": "param conv.bias"},
    {"name": "out", "dtype": "f32", "shape": ["batch_size", "16", "out_d2", "out_d3"], "intent": "out",
     "from": "output 0", "check": {"atol": "1e-06 * max_abs_ref", "rtol": "1e-05"}}],
  "reference": {"torch": "conv_relu_bias.py"},
  "shapes": {"tests": [{"batch_size": 2, "in_channels": 3, "height": 5, "width": 7}],
             "bench": [{"batch_size": 2, "in_channels": 3, "height": 5, "width": 7}]},
  "roofline": {"flops": "0", "bytes": "1"}
})";
    Task task = parse_task(spec, "conv test spec", test::fixtures_dir() / "torch");
    const Shape& shape = task.tests.front();
    REQUIRE(shape.sizes.at("out_d3") == 5); // the shape holds the derived symbols
    FileBuffers buffers;
    for (const auto& arg : task.args)
        buffers.add(arg.name, static_cast<uint64_t>(task.element_count(arg, shape)) * dtype_size(arg.dtype));
    TorchReference reference(task, "cpu");
    Json reply = reference.prepare(shape, 12345, ProgramOutputs::expected, buffers.locations);
    CHECK(reply.value("precision", "") == "fp64");
    std::vector<float> out = buffers.floats("out");
    REQUIRE(out.size() == 2u * 16 * 3 * 5);
    CHECK(std::any_of(out.begin(), out.end(), [](float v) { return v != 0.0f; })); // written
}

// A program whose forward never returns, after starting a daemon of its own (a new session, so it
// leaves the process group): the call ends at its limit with an error naming the hang, and the
// process and everything it started are gone (it runs under a keeper, util/contain.hpp). Without
// the keeper the daemon outlived the worker, and a killed worker left the reference process too.
TEST_CASE("a reference process that hangs is killed at its limit with every process it started",
          "[torch][evaluator]")
{
    test::TempDir dir;
    std::filesystem::copy(test::fixtures_dir() / "torch" / "scale_rows", dir / "task");
    std::string pids = (dir / "pids.txt").string();
    test::write_text(dir / "task" / "problem.py",
               "import os, subprocess, time\n"
               "import torch\n"
               "import torch.nn as nn\n"
               "rows = 1000\n"
               "width = 8\n"
               "class Model(nn.Module):\n"
               "    def __init__(self, width):\n"
               "        super().__init__()\n"
               "        self.scale = nn.Parameter(torch.randn(width))\n"
               "    def forward(self, x):\n"
               "        daemon = subprocess.Popen(['sleep', '300'], start_new_session=True)\n"
               "        with open('" + pids + "', 'w') as f:\n"
               "            f.write(f'{os.getpid()} {daemon.pid}\\n')\n"
               "        time.sleep(3600)\n"
               "        return x * self.scale\n"
               "def get_inputs():\n"
               "    return [torch.randn(rows, width)]\n"
               "def get_init_inputs():\n"
               "    return [width]\n");
    Task task = load_task(dir / "task" / "spec.json");
    TorchLimits limits;
    limits.prepare = std::chrono::seconds(3);
    TorchReference reference(task, "cpu", limits);
    const Shape& shape = task.tests.at(0);
    FileBuffers buffers;
    buffers.add("x", 5 * 8 * 4);
    buffers.add("scale", 8 * 4);
    buffers.add("out", 5 * 8 * 4);
    auto begin = std::chrono::steady_clock::now();
    try {
        reference.prepare(shape, 7, ProgramOutputs::expected, buffers.locations);
        FAIL("a program that never returns was prepared");
    } catch (const Error& e) {
        CHECK_THAT(std::string(e.what()), Catch::Contains("gave no reply within 3 s during 'prepare'"));
    }
    CHECK(std::chrono::steady_clock::now() - begin < std::chrono::seconds(60)); // at its limit, not the hang's hour
    std::vector<std::string> started = split(trim(read_file(pids)), ' ');
    REQUIRE(started.size() == 2);
    int python = std::stoi(started[0]), daemon = std::stoi(started[1]);
    CHECK(test::wait_process_gone(python, std::chrono::seconds(30)));
    CHECK(test::wait_process_gone(daemon, std::chrono::seconds(30)));
}
