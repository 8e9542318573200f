// Which simulated GPUs a worker sees under CUDA_VISIBLE_DEVICES: the forms the CUDA driver accepts
// (indices, as SLURM sets them for --gres=gpu:N; UUIDs and their prefixes, as the GPU evaluator pins
// each worker) and its rule that the first entry naming no device ends the list; the costs setting.
#include "kf_catch.hpp"

#include "evaluator/worker/simulator.hpp"

using namespace kforge;

namespace {

// The machine positions of what `mask` leaves visible, in the order shown; checks the renumbering.
std::vector<int> shown(const std::optional<std::string>& mask, int gpus = 4)
{
    std::vector<DeviceFacts> machine = simulated_devices(std::to_string(gpus));
    std::vector<int> positions;
    for (const auto& facts : cuda_visible_devices(machine, mask)) {
        CHECK(facts.ordinal == static_cast<int>(positions.size()));
        for (size_t i = 0; i < machine.size(); ++i)
            if (machine[i].uuid == facts.uuid)
                positions.push_back(static_cast<int>(i));
    }
    return positions;
}

std::string uuid_of(int position)
{
    return simulated_devices("4").at(static_cast<size_t>(position)).uuid;
}

} // namespace

TEST_CASE("simulated GPUs have distinct UUIDs of the form nvidia-smi prints", "[evaluator][simulated]")
{
    std::vector<DeviceFacts> machine = simulated_devices("3");
    REQUIRE(machine.size() == 3);
    for (size_t i = 0; i < machine.size(); ++i) {
        CHECK(machine[i].ordinal == static_cast<int>(i));
        CHECK_THAT(machine[i].uuid, Catch::StartsWith("GPU-") && Catch::Matches("GPU-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}"));
    }
    CHECK(machine[0].uuid != machine[1].uuid);
    CHECK(machine[1].uuid != machine[2].uuid);
}

TEST_CASE("CUDA_VISIBLE_DEVICES unset shows every simulated GPU", "[evaluator][simulated]")
{
    CHECK(shown(std::nullopt) == std::vector<int>{0, 1, 2, 3});
}

TEST_CASE("CUDA_VISIBLE_DEVICES as indices, as SLURM sets it for --gres=gpu:N, shows those GPUs renumbered from 0 in "
          "the order given",
          "[evaluator][simulated]")
{
    CHECK(shown("2") == std::vector<int>{2});         // array task 2 of a --gres=gpu:1 array
    CHECK(shown("1,3") == std::vector<int>{1, 3});    // a --gres=gpu:2 job given GPUs 1 and 3
    CHECK(shown("3,0") == std::vector<int>{3, 0});    // the order of the value, not of the machine
    CHECK(shown(" 0 , 1 ") == std::vector<int>{0, 1});
    CHECK(shown("0,1,2,3") == std::vector<int>{0, 1, 2, 3});
}

TEST_CASE("the first CUDA_VISIBLE_DEVICES entry that names no GPU ends the list, as in the CUDA driver",
          "[evaluator][simulated]")
{
    CHECK(shown("0,2,-1,1") == std::vector<int>{0, 2}); // the CUDA documentation's own example
    CHECK(shown("1,4,2") == std::vector<int>{1});        // 4 is past the machine's last GPU
    CHECK(shown("").empty());                            // set but empty: no GPU at all
    CHECK(shown("-1").empty());
    CHECK(shown("NoDevFiles").empty()); // what older SLURM sets when gres.conf names no device file
    CHECK(shown("1,1,2") == std::vector<int>{1}); // a GPU named twice would get two workers
    CHECK(shown("0,,1") == std::vector<int>{0});
}

TEST_CASE("CUDA_VISIBLE_DEVICES names simulated GPUs by UUID or a prefix of exactly one, and mixes both forms",
          "[evaluator][simulated]")
{
    CHECK(shown(uuid_of(2)) == std::vector<int>{2}); // how the GPU evaluator pins each worker
    CHECK(shown(uuid_of(3) + "," + uuid_of(1)) == std::vector<int>{3, 1});
    CHECK(shown("0," + uuid_of(2)) == std::vector<int>{0, 2});
    std::string short_form = uuid_of(0).substr(0, 12); // "GPU-5140a7ed", as the driver's documentation shortens
    CHECK(shown(short_form, 1) == std::vector<int>{0}); // a prefix of the one GPU there is
    CHECK(shown("1," + short_form) == std::vector<int>{1}); // a prefix of several names none: the list ends
}

TEST_CASE("a CUDA_VISIBLE_DEVICES naming only real GPUs' UUIDs leaves the simulated GPUs alone",
          "[evaluator][simulated]")
{
    CHECK(shown("GPU-8932f937-d72c-4106-c12f-20bd9faed9f6") == std::vector<int>{0, 1, 2, 3});
    CHECK(shown("GPU-8932f937,GPU-1d2e3f40") == std::vector<int>{0, 1, 2, 3});
    CHECK(shown("MIG-GPU-8932f937-d72c-4106-c12f-20bd9faed9f6/1/0") == std::vector<int>{0, 1, 2, 3});
    // One simulated UUID makes the value the simulation's: the real one then ends the list.
    CHECK(shown(uuid_of(1) + ",GPU-8932f937") == std::vector<int>{1});
}

TEST_CASE("KFORGE_SIMULATE_GPU_COSTS sets each phase's units, confirm_spread included, and names what it refuses",
          "[evaluator][simulated]")
{
    SimulatedCosts costs = parse_simulated_costs("confirm=24, profile=4,confirm_spread=0.6");
    CHECK(costs.confirm == 24);
    CHECK(costs.profile == 4);
    CHECK(costs.confirm_spread == Approx(0.6));
    CHECK(costs.screen == 0.5); // the default stays
    CHECK(parse_simulated_costs("").confirm_spread == 0);
    CHECK_THROWS_WITH(parse_simulated_costs("confirm_spred=1"), Catch::Contains("confirm_spread"));
    CHECK_THROWS_WITH(parse_simulated_costs("confirm_spread=-1"), Catch::Contains("from 0 to 1000"));
}
