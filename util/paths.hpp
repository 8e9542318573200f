// Where kforge keeps things on a user's machine (XDG base directories).
#pragma once

#include <filesystem>

namespace kforge {

// $XDG_CACHE_HOME/kforge or ~/.cache/kforge (CUBIN cache). Created on demand.
std::filesystem::path cache_dir();
// $XDG_DATA_HOME/kforge or ~/.local/share/kforge (the user-level knowledge base). Created on demand.
std::filesystem::path data_dir();
// A private temporary folder, removed with its contents when the owner dies.
class ScratchFolder
{
public:
    ScratchFolder(); // throws Error(runtime) when none can be created
    ~ScratchFolder();
    ScratchFolder(const ScratchFolder&) = delete;
    ScratchFolder& operator=(const ScratchFolder&) = delete;
    const std::filesystem::path& path() const { return m_path; }

private:
    std::filesystem::path m_path;
};

// The folder holding kforge's bundled data (tasks/, prompts/): $KFORGE_HOME if set, else the source
// tree the binary was built from, else the folder above the binary.
std::filesystem::path resource_dir();

} // namespace kforge
