// The `main` of a fuzz target's corpus replay (fuzz_replay_TARGET, built by the dev preset with the
// tests): feeds every file under the folders or files it is given to the target's
// LLVMFuzzerTestOneInput once, in name order, and prints how many it ran. The ctest entries
// fuzz_corpus_TARGET run it over fuzz/corpus/TARGET, so every seed and every finding saved there
// stays a regression test of the ordinary build; the fuzzing itself (libFuzzer, sanitizers) is
// scripts/fuzz.sh. A throw that escapes the target is a failure, like a crash.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<std::filesystem::path> inputs_under(const std::filesystem::path& path)
{
    std::vector<std::filesystem::path> files;
    if (std::filesystem::is_directory(path)) {
        for (const auto& entry : std::filesystem::recursive_directory_iterator(path))
            if (entry.is_regular_file())
                files.push_back(entry.path());
    } else {
        files.push_back(path);
    }
    std::sort(files.begin(), files.end());
    return files;
}

} // namespace

int main(int argc, char** argv)
{
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
        return 2;
    }
    size_t ran = 0;
    for (int i = 1; i < argc; ++i) {
        std::error_code error;
        if (!std::filesystem::exists(argv[i], error)) {
            std::fprintf(stderr, "%s: no such file or folder\n", argv[i]);
            return 2;
        }
        for (const auto& file : inputs_under(argv[i])) {
            std::ifstream in(file, std::ios::binary);
            std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            try {
                LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
            } catch (const std::exception& e) {
                std::fprintf(stderr, "%s: the target let an exception escape: %s\n", file.c_str(), e.what());
                return 1;
            }
            ++ran;
        }
    }
    if (ran == 0) {
        std::fprintf(stderr, "no inputs found under the paths given\n");
        return 1;
    }
    std::printf("%zu inputs replayed, none crashed or threw\n", ran);
    return 0;
}
