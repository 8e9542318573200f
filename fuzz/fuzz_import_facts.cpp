// Fuzz target: the PyTorch importer's result (the JSON `python3 -m kforge_torch.importer` prints,
// which a problem file can shape: sizes, shapes, tolerances, FLOPs all come from running it) made
// into a spec by `kforge task import`, described for the user, and loaded back by the task loader
// as the command does. Every refusal must be an Error; a spec the import writes must load (a spec
// that spec_from_facts accepts but the loader refuses is reported as an internal error there).
#include <cstddef>
#include <cstdint>

#include "core/task.hpp"
#include "fuzz_support.hpp"
#include "task/import.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using namespace kforge;
    static const std::string folder = fuzz::torch_fixtures_dir();
    Json facts;
    try {
        facts = parse_json_text(fuzz::as_text(data, size), "the importer's result");
        (void)describe_facts(facts);
        nlohmann::ordered_json spec = spec_from_facts(facts, {"fuzzed", "quick_gelu.py"});
        Task task = parse_task(spec.dump(), "fuzzed.json", folder);
        for (const auto* shapes : {&task.tests, &task.bench, &task.held_out})
            for (const auto& shape : *shapes)
                (void)check_shape(task, shape);
    } catch (const Error&) {
    } catch (const nlohmann::json::exception&) {
        // describe_facts and spec_from_facts read the facts with nlohmann's accessors: a wrong
        // type there must be a bad-input Error, not this.
        std::abort();
    }
    return 0;
}
