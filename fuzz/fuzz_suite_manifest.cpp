// Fuzz target: a suite's manifest (suite.json) as `kforge suite run` and `suite report` read it, with
// every stored path resolved the way the runner resolves it. Every refusal must be an Error (bad
// input naming the field); what is accepted must write back to JSON that reads again the same, and
// every file the suite would write for a problem must lie inside the suite folder.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "fuzz_support.hpp"
#include "suite/manifest.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using namespace kforge;
    namespace fs = std::filesystem;
    SuiteManifest manifest;
    try {
        manifest = SuiteManifest::from_json(parse_json_text(fuzz::as_text(data, size), "suite.json"), "suite.json");
    } catch (const Error&) {
        return 0;
    }
    SuiteManifest again = SuiteManifest::from_json(manifest.to_json(), "the manifest written back");
    if (again.to_json() != manifest.to_json())
        std::abort(); // what kforge writes must read back as itself
    // As SuiteFolder::resolve does: stored relative paths are relative to the suite folder.
    const fs::path root = "/suite";
    for (const auto& problem : manifest.problems)
        for (const std::string* written : {&problem.archive, &problem.log, &problem.id}) {
            fs::path stored = written == &problem.id ? fs::path("runs") / (problem.id + ".claim") : fs::path(*written);
            fs::path path = (stored.is_absolute() ? stored : root / stored).lexically_normal();
            if (path.string().rfind("/suite/", 0) != 0)
                std::abort(); // a run would write outside the suite folder
        }
    return 0;
}
