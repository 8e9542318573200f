// The GPU worker's PyTorch reference client on the CPU (file locations): what it sends the
// reference process for a spec whose shapes also carry derived symbols.
#include "kf_catch.hpp"

#include <fstream>

#include "core/task.hpp"
#include "evaluator/worker/torch_reference.hpp"
#include "test_support.hpp"
#include "util/torch_python.hpp"

using namespace kforge;

namespace {

// conv_relu_bias.py as `kforge task import` writes it, cut to what the client reads: the output's
// dims name the derived symbols out_d2 and out_d3, which every shape then holds too.
std::string conv_spec()
{
    return R"({
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
}

} // namespace

TEST_CASE("the reference process is sent the program's size variables only, not the spec's derived symbols",
          "[evaluator][torch]")
{
    INFO("the PyTorch reference tests need a python3 with torch (Debian: python3-torch): "
         << torch_python().problem);
    REQUIRE_FALSE(torch_python().executable.empty());
    Task task = parse_task(conv_spec(), "conv test spec", test::fixtures_dir() / "torch");
    const Shape& shape = task.tests.front();
    REQUIRE(shape.sizes.at("out_d3") == 5); // the shape holds the derived symbol

    test::TempDir folder;
    TensorLocations locations;
    for (const auto& arg : task.args) {
        TensorLocation location;
        location.file = (folder / (arg.name + ".bin")).string();
        location.bytes = static_cast<uint64_t>(task.element_count(arg, shape)) * dtype_size(arg.dtype);
        std::ofstream(location.file, std::ios::binary) << std::string(location.bytes, '\0');
        locations[arg.name] = location;
    }
    TorchReference reference(task, "cpu");
    Json reply = reference.prepare(shape, 12345, ProgramOutputs::expected, locations);
    CHECK(reply.value("precision", "") == "fp64");

    std::string out = test::slurp_file(locations.at("out").file);
    REQUIRE(out.size() == 2u * 16 * 3 * 5 * 4);
    CHECK(out != std::string(out.size(), '\0')); // the expected outputs were written
}
