// The test runner: Catch2 plus the [gpu] gate. When the selected tests include [gpu] ones and no
// CUDA device can be used here, it says why and exits 77, which CTest reports as "skipped".
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

#include "test_support.hpp"

int main(int argc, char** argv)
{
    bool gpu_selected = false;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg.find("[gpu]") != std::string::npos && arg.find("~[gpu]") == std::string::npos)
            gpu_selected = true;
    }
    if (gpu_selected) {
        std::string why = kforge::test::gpu_unavailable_reason();
        if (!why.empty()) {
            std::printf("SKIPPED: the [gpu] tests need a CUDA device: %s\n", why.c_str());
            return 77;
        }
    }
    return Catch::Session().run(argc, argv);
}
