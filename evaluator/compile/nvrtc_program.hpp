// NVRTC's C API, checked and owned: KF_NVRTC_CHECK for the calls that must not fail, and an RAII
// owner for nvrtcProgram. A failed compile is not such a call: nvrtcCompileProgram's result is
// data (compile_with_nvrtc turns it into a CompileResult).
#pragma once

#include <string>
#include <vector>

#include <nvrtc.h>

#include "evaluator/compile/compile.hpp"

namespace kforge {

// The options compile_with_nvrtc passes for `request`, in order (the cache key hashes them).
// Pinned: -std=c++17, -default-device, -lineinfo, -Xptxas=-v, -fmad=true, -ftz=false,
// -prec-div=true, -prec-sqrt=true (no fast math), the toolkit include folders, the prelude as
// `-include`; then -DNAME=value per param and the request's extra options. Never -rdc or -G.
std::vector<std::string> nvrtc_options(const CompileRequest& request);

// A digest of the toolkit headers candidates compile against (CUDA and CCCL version headers),
// so a cache entry does not outlive a toolkit upgrade that keeps the NVRTC version.
const std::string& toolkit_fingerprint();

// Throws Error(runtime) "NVRTC: <call> failed at <file>:<line>: <NVRTC's error text>".
void check_nvrtc(nvrtcResult result, const char* call, const char* file, int line);

#define KF_NVRTC_CHECK(call) ::kforge::check_nvrtc((call), #call, __FILE__, __LINE__)

struct NvrtcHeader {
    std::string name;
    std::string text;
};

// One nvrtcProgram, destroyed with its owner. Not copyable; one thread at a time.
class NvrtcProgram
{
public:
    NvrtcProgram(const std::string& source, const std::string& name, const std::vector<NvrtcHeader>& headers);
    ~NvrtcProgram();
    NvrtcProgram(const NvrtcProgram&) = delete;
    NvrtcProgram& operator=(const NvrtcProgram&) = delete;

    nvrtcProgram get() const { return m_program; }
    std::string log() const;
    std::string cubin() const;
    // Valid only after a successful compile of a program that registered `expression`.
    std::string lowered_name(const std::string& expression) const;

private:
    nvrtcProgram m_program = nullptr;
};

} // namespace kforge
