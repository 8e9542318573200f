// dlopen wrapper.
#include "util/dynlib.hpp"

#include <dlfcn.h>

namespace kforge {

DynamicLibrary::DynamicLibrary(std::initializer_list<const char*> names, Scope scope)
{
    int flags = RTLD_NOW | (scope == Scope::local ? RTLD_LOCAL : RTLD_GLOBAL | RTLD_NODELETE);
    for (const char* name : names) {
        m_handle = ::dlopen(name, flags);
        if (m_handle)
            return;
        const char* why = ::dlerror();
        m_error += (m_error.empty() ? "" : "; ") + std::string(why ? why : name);
    }
}

DynamicLibrary::~DynamicLibrary()
{
    if (m_handle)
        ::dlclose(m_handle);
}

void* DynamicLibrary::symbol(const char* name) const
{
    return m_handle ? ::dlsym(m_handle, name) : nullptr;
}

} // namespace kforge
