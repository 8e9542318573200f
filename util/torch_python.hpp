// The python3 that runs kforge's PyTorch helpers (python/kforge_torch: the importer of PyTorch
// programs and the GPU worker's reference process).
//
// Which python3 has torch differs between machines: a virtual environment first on PATH, a
// distribution's /usr/bin/python3 with its python3-torch package, a conda install. kforge takes
// $KFORGE_PYTHON when set (and only it), else the first of `python3` on PATH and /usr/bin/python3
// that can import torch. The answer is looked for once per process.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace kforge {

struct TorchPython {
    std::string executable;      // "" when no python3 here imports torch
    std::string torch_version;   // "2.11.0+cu130"
    bool torch_has_cuda = false; // torch.version.cuda is set (a CUDA build)
    std::string problem;         // when executable is "": what was tried and how each failed
    // The environment the helpers need: PYTHONPATH with kforge's python/ folder first.
    std::vector<std::pair<std::string, std::string>> env() const;
};

const TorchPython& torch_python();

// kforge's python/ folder (under resource_dir()).
std::string kforge_python_dir();

} // namespace kforge
