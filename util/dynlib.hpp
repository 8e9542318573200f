// An owned dlopen() handle. The CUDA driver (libcuda.so.1) is loaded this way so that kforge starts,
// and does everything that needs no GPU, on machines without an NVIDIA driver.
#pragma once

#include <string>

namespace kforge {

class DynamicLibrary
{
public:
    enum class Scope
    {
        local,          // its symbols serve only lookups through this handle
        global_resident // its symbols (and its dependencies') resolve later dlopen()ed code, and it
                        // stays loaded for good (an MPI library, whose plugins need its symbols)
    };
    // Tries each name in turn; on failure `loaded()` is false and `error()` says why.
    explicit DynamicLibrary(std::initializer_list<const char*> names, Scope scope = Scope::local);
    ~DynamicLibrary();
    DynamicLibrary(const DynamicLibrary&) = delete;
    DynamicLibrary& operator=(const DynamicLibrary&) = delete;

    bool loaded() const { return m_handle != nullptr; }
    const std::string& error() const { return m_error; }
    // nullptr when the symbol is missing.
    void* symbol(const char* name) const;

private:
    void* m_handle = nullptr;
    std::string m_error;
};

} // namespace kforge
