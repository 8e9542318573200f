// Helpers for the vendor-baseline tests: where this build's libkforge_vendor.so is, which bundled
// tasks name vendor baselines, and running GPU work in a child process.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/task.hpp"

namespace kforge::test {

// libkforge_vendor.so beside the kforge binary the tests run (the build tree's src/cli, or the
// carried .gpu/ folder when KFORGE_TEST_BINARY points there).
std::filesystem::path vendor_library_file();

// The bundled tasks (tasks/*.json) that name at least one vendor baseline, in name order.
std::vector<Task> tasks_with_vendor_baselines();

// A distinct, fake, 256-byte-aligned device address for each tensor of `task`: enough for the
// operand checks, which never dereference.
std::map<std::string, uint64_t, std::less<>> fake_addresses(const Task& task);

// Runs `body` in a forked child and returns its result, or why the child died. CUDA must never be
// initialised in the test process itself (a forked child could not use it, and the [gpu] gate
// probes in forked children), so every test that touches the GPU in-process goes through here.
std::string run_in_child(const std::function<std::string()>& body);

} // namespace kforge::test
