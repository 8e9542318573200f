// Run records and the run secret; see run_record.hpp.
#include "search/run_record.hpp"

#include "archive/run_task.hpp"
#include "search/loop_state.hpp"
#include "util/error.hpp"

#ifndef KFORGE_VERSION
#define KFORGE_VERSION "0.0.0"
#endif

namespace kforge {

RunInfo new_run_record(const Task& task, const std::string& run_id, const Json& config, uint64_t seed)
{
    RunInfo run;
    run.run_id = run_id;
    run.task_name = task.name;
    run.task_spec = task.spec_text;
    run.task_hash = task.spec_hash;
    run.task_files = snapshot_task_files(task);
    run.config = config;
    run.seed = seed;
    run.kforge_version = KFORGE_VERSION;
    return run;
}

void record_environment(RunInfo& run, const Json& environment)
{
    run.device = environment.value("device", Json::object());
    // The ceilings the run's "% of roofline" figures were computed from (measured DRAM bandwidth
    // included), and which vendor baselines were timed or why not.
    for (const char* key : {"peaks", "vendor_baselines", "vendor_library"})
        if (environment.contains(key))
            run.device[key] = environment.at(key);
    run.toolkit_version = environment.value("nvrtc", std::string("unknown"));
    run.kforge_version = KFORGE_VERSION;
}

void store_run_secret(Archive& archive, uint64_t secret)
{
    archive.set_search_state(k_secret_state_key, Json{{"value", std::to_string(secret)}});
}

uint64_t stored_run_secret(const Archive& archive)
{
    auto secret = archive.search_state(k_secret_state_key);
    try {
        if (secret && secret->contains("value"))
            return std::stoull((*secret)["value"].get<std::string>());
    } catch (const std::exception&) {
    }
    fail_input("{}: the run secret is missing from the search state; this archive cannot be resumed",
               archive.path().string());
}

} // namespace kforge
