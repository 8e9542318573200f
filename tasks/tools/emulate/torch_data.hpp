// The data of a PyTorch-program task for the emulator (torch_data.cpp): the program's own inputs,
// parameters and fp64 expected outputs, made by the same reference-process client the GPU worker
// uses (evaluator/worker/torch_reference), on the CPU with `file` locations.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "emu_data.hpp"
#include "evaluator/worker/torch_reference.hpp"

struct ProgramData {
    std::map<std::string, Buffer> buffers;               // inputs and parameters filled, outputs poisoned
    std::map<std::string, std::vector<double>> expected; // per output, the reference rounded to its dtype
    std::string precision;                               // "fp64", or "own" when the program has no fp64 run
    std::string note;                                    // why not fp64
};

// The input seed of (shape, trial) under `secret`: the GPU worker's formula (worker/workspace.cpp), so
// a trial here is "input set trial + 1" there (PyTorch's CPU and CUDA generators still differ).
uint64_t program_input_seed(const Shape& shape, uint64_t secret, int trial);

// Asks the reference process for every input, parameter and expected output of `task` at `shape`,
// through files in `scratch` (created there, removed after reading). Throws std::runtime_error
// (or kforge::Error) with what the process said.
ProgramData prepare_program_data(TorchReference& reference, const Task& task, const Shape& shape, uint64_t input_seed,
                                 const std::filesystem::path& scratch);
