// generate_torch_loader(): the short Python file beside a `--torch` export that builds it.
//
// torch.utils.cpp_extension.load() is PyTorch's JIT path without setuptools, but it needs ninja.
// Where ninja is missing the loader runs nvcc itself with PyTorch's include paths and ABI flag and
// loads the library with torch.ops.load_library(); no Python module is built either way, since the
// operator registers itself through TORCH_LIBRARY. Both paths compile for the current GPU only, with
// the architecture kforge measured on (sm_90a on Hopper: wgmma needs the "a").
#include <fmt/format.h>

#include "export/host_code.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

// "y = op(x)", "y = op(x, gamma, beta)": how a call reads.
std::string example_call(const Task& task)
{
    std::vector<std::string> inputs;
    std::vector<std::string> outputs;
    for (const auto& arg : task.args) {
        if (arg.is_tensor && arg.intent != Intent::out)
            inputs.push_back(arg.name);
        if (arg.is_tensor && arg.intent == Intent::out)
            outputs.push_back(arg.name);
    }
    std::string call = fmt::format("op({})", join(inputs, ", "));
    return outputs.empty() ? call + "  # updates its inout tensors in place"
                           : join(outputs, ", ") + " = " + call;
}

constexpr const char* k_loader = R"py("""Builds kforge's export @CU@ as a PyTorch extension and returns its operator.

    import importlib.util, sys
    spec = importlib.util.spec_from_file_location("loader", "@LOADER@")
    loader = importlib.util.module_from_spec(spec); spec.loader.exec_module(loader)
    op = loader.load_op()          # builds once (cached), loads, returns torch.ops.kforge.@TASK@
    @EXAMPLE@

The operator: kforge::@SCHEMA@
It takes contiguous CUDA tensors of the task's dtypes and shapes (clear errors otherwise), allocates
its outputs and scratch with PyTorch's allocator and runs on the current stream.

Needs PyTorch with CUDA and nvcc (CUDA_HOME or PATH); a plan with library steps also links
cuBLASLt (the toolkit's) and, for conv steps, cuDNN 9 (CUDNN_HOME, PyTorch's nvidia-cudnn wheel
or CUDA_HOME), which PyTorch already loads. With ninja installed the build is
torch.utils.cpp_extension.load(); without it, nvcc is run directly and the library loaded with
torch.ops.load_library(). Either way the kernels are compiled for the current GPU only.
`python3 @LOADER@` builds and prints the schema.
"""
import os
import shutil
import subprocess
import sys

import torch
import torch.utils.cpp_extension as cpp_extension

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "@CU@")
NAME = "kforge_@TASK@"
OP = "@TASK@"


# What the plan's library steps link (cuBLASLt, cuDNN: the libraries PyTorch itself loads).
LIBRARIES = [@LIBRARIES@]


def _cudnn_home():
    """Where cuDNN's headers are: CUDNN_HOME, PyTorch's own cuDNN wheel (nvidia.cudnn), or CUDA_HOME."""
    roots = [os.environ.get("CUDNN_HOME")]
    try:
        import nvidia.cudnn
        roots += list(nvidia.cudnn.__path__)
    except ImportError:
        pass
    roots.append(cpp_extension.CUDA_HOME)
    for root in roots:
        if root and os.path.exists(os.path.join(root, "include", "cudnn_graph.h")):
            return root
    raise RuntimeError("cuDNN's headers (cudnn_graph.h) are not in CUDNN_HOME, the nvidia-cudnn wheel or "
                       "CUDA_HOME: set CUDNN_HOME to a cuDNN 9 installation")


def _library_flags():
    """(compile flags, link flags) for LIBRARIES."""
    cflags, ldflags = [], []
    for library in LIBRARIES:
        name = library
        if library == "cudnn":
            home = _cudnn_home()
            cflags.append("-I" + os.path.join(home, "include"))
            for folder in (os.path.join(home, "lib"), os.path.join(home, "lib64")):
                if not os.path.isdir(folder):
                    continue
                ldflags.append("-L" + folder)
                # The wheel ships libcudnn.so.9 without the unversioned link -lcudnn looks for.
                if not os.path.exists(os.path.join(folder, "libcudnn.so")) and \
                        os.path.exists(os.path.join(folder, "libcudnn.so.9")):
                    name = ":libcudnn.so.9"
        ldflags.append("-l" + name)
    return cflags, ldflags


def _arch_flag():
    major, minor = torch.cuda.get_device_capability()
    arch = f"{major}{minor}" + ("a" if (major, minor) == (9, 0) else "")  # as kforge compiles
    return f"-gencode=arch=compute_{arch},code=sm_{arch}"


def _torch_paths(function):
    try:
        return function(device_type="cuda")  # PyTorch 2.6 and later
    except TypeError:
        return function(cuda=True)


def _build_directory():
    root = os.environ.get("TORCH_EXTENSIONS_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "torch_extensions")
    return os.path.join(root, NAME + "_nvcc")


def _build_with_nvcc(verbose):
    home = cpp_extension.CUDA_HOME
    nvcc = os.path.join(home, "bin", "nvcc") if home else shutil.which("nvcc")
    if not nvcc or not os.path.exists(nvcc):
        raise RuntimeError("nvcc not found: set CUDA_HOME or put nvcc on PATH")
    build = _build_directory()
    library = os.path.join(build, NAME + ".so")
    if not os.path.exists(library) or os.path.getmtime(library) < os.path.getmtime(SOURCE):
        os.makedirs(build, exist_ok=True)
        command = [nvcc, "-shared", "-Xcompiler", "-fPIC", "-O3", "-std=c++17", _arch_flag(),
                   "-D_GLIBCXX_USE_CXX11_ABI=%d" % int(torch._C._GLIBCXX_USE_CXX11_ABI)]
        command += ["-I" + path for path in _torch_paths(cpp_extension.include_paths)]
        cflags, ldflags = _library_flags()
        command += cflags + [SOURCE, "-o", library]
        command += ["-L" + path for path in _torch_paths(cpp_extension.library_paths)]
        command += ["-lc10", "-lc10_cuda", "-ltorch", "-ltorch_cpu", "-ltorch_cuda"] + ldflags
        if verbose:
            print(" ".join(command), file=sys.stderr)
        subprocess.run(command, check=True)
    torch.ops.load_library(library)


def _loaded():
    try:
        return getattr(torch.ops.kforge, OP)
    except (AttributeError, RuntimeError):
        return None


def load_op(verbose=False):
    """Builds (once) and loads the extension; returns torch.ops.kforge.@TASK@."""
    if _loaded() is not None:
        return _loaded()
    if not torch.cuda.is_available():
        raise RuntimeError("PyTorch sees no CUDA device; the operator runs on CUDA tensors only")
    if cpp_extension.is_ninja_available():
        cflags, ldflags = _library_flags()
        cpp_extension.load(name=NAME, sources=[SOURCE], is_python_module=False, verbose=verbose,
                           extra_cuda_cflags=["-O3", "-std=c++17", _arch_flag()] + cflags,
                           extra_ldflags=ldflags)
    else:
        print("ninja is not installed: building @CU@ with nvcc directly", file=sys.stderr)
        _build_with_nvcc(verbose)
    op = _loaded()
    if op is None:
        raise RuntimeError(f"the library built from {SOURCE} did not register kforge::{OP}")
    return op


if __name__ == "__main__":
    print(load_op(verbose="-v" in sys.argv).default._schema)
)py";

} // namespace

std::string generate_torch_loader(const LauncherSource& source, const std::string& cu_name,
                                  const std::string& loader_name)
{
    std::string text = k_loader;
    text = replace_all(text, "@CU@", cu_name);
    text = replace_all(text, "@LOADER@", loader_name);
    text = replace_all(text, "@TASK@", source.task.name);
    text = replace_all(text, "@SCHEMA@", torch_schema(source));
    std::vector<std::string> libraries;
    for (const auto& flag : library_link_flags(source.plan))
        libraries.push_back(c_string(flag.substr(2))); // "-lcublasLt" -> "cublasLt"
    text = replace_all(text, "@LIBRARIES@", join(libraries, ", "));
    return replace_all(text, "@EXAMPLE@", example_call(source.task));
}

} // namespace kforge
