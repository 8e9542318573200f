// XDG lookups with sane fallbacks, and private temporary folders.
#include "util/paths.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "util/error.hpp"
#include "util/subprocess.hpp"

#ifndef KFORGE_SOURCE_DIR
#define KFORGE_SOURCE_DIR ""
#endif

namespace kforge {
namespace {

std::filesystem::path xdg(const char* variable, const char* fallback_under_home)
{
    const char* value = std::getenv(variable);
    std::filesystem::path base;
    if (value && *value) {
        base = value;
    } else {
        const char* home = std::getenv("HOME");
        base = std::filesystem::path(home && *home ? home : "/tmp") / fallback_under_home;
    }
    std::filesystem::path dir = base / "kforge";
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
        fail_runtime("cannot create {}: {}", dir.string(), ec.message());
    return dir;
}

} // namespace

std::filesystem::path cache_dir() { return xdg("XDG_CACHE_HOME", ".cache"); }
std::filesystem::path data_dir() { return xdg("XDG_DATA_HOME", ".local/share"); }

std::filesystem::path resource_dir()
{
    if (const char* home = std::getenv("KFORGE_HOME"); home && *home)
        return home;
    std::filesystem::path source(KFORGE_SOURCE_DIR);
    if (!source.empty() && std::filesystem::exists(source / "prompts"))
        return source;
    return std::filesystem::path(self_executable()).parent_path().parent_path();
}

ScratchFolder::ScratchFolder()
{
    namespace fs = std::filesystem;
    std::string pattern = (fs::temp_directory_path() / "kforge-task-XXXXXX").string();
    if (!::mkdtemp(pattern.data()))
        fail_runtime("cannot create a temporary folder in {}: {}", fs::temp_directory_path().string(),
                     std::strerror(errno));
    m_path = pattern;
}

ScratchFolder::~ScratchFolder()
{
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
}

} // namespace kforge
