// The GPU worker's PyTorch reference process (evaluator/worker/torch_reference.hpp) driven from C++
// on the CPU: buffers are files instead of device allocations (the process takes either), so the
// protocol, the seeds and the expected outputs are checked here without a GPU. The IPC path is
// scripts/gpu-torch-ipc.py's, on a GPU machine.
#include "kf_catch.hpp"

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
