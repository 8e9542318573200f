// Fuzz target: opening a file as a run archive and reading everything inspect, report, export and
// dataset read, and checking every stored JSON value (Archive::damaged_json). The bytes become a file in a private folder; every refusal must be an Error (a
// damaged archive, not SQLite, not kforge's), never a crash or a hang.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>

#include "archive/archive.hpp"
#include "fuzz_support.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using namespace kforge;
    static const std::filesystem::path folder = [] {
        auto path = std::filesystem::temp_directory_path() / ("kforge-fuzz-archive-" + std::to_string(::getpid()));
        std::filesystem::create_directories(path);
        return path;
    }();
    auto path = folder / "run.kforge";
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm"})
        std::filesystem::remove(path.string() + suffix, ec);
    {
        std::ofstream out(path, std::ios::binary);
        out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    }
    try {
        Archive archive = Archive::open(path, OpenMode::read_only);
        auto read = [](auto&& f) {
            try {
                f();
            } catch (const Error&) {
            }
        };
        read([&] { (void)archive.run_info(); });
        read([&] { (void)archive.candidate_count(); });
        read([&] { (void)archive.verdict_counts(); });
        read([&] { (void)archive.baselines(); });
        read([&] {
            for (const auto& summary : archive.top_candidates(5)) {
                (void)archive.measurements(summary.id);
                (void)archive.lineage(summary.id);
                (void)archive.candidate(summary.id);
            }
        });
        read([&] { (void)archive.best_candidate(); });
        read([&] { (void)archive.failures(10, 100); });
        read([&] { (void)archive.fitness_series(); });
        read([&] { (void)archive.llm_calls(5, CallText::include); });
        read([&] { (void)archive.llm_usage_by_model(); });
        read([&] { (void)archive.elites(); });
        read([&] { (void)archive.meta_prompts(MetaPromptFilter::all); });
        read([&] { (void)archive.lessons(); });
        read([&] { (void)archive.search_state("loop"); });
        read([&] { (void)archive.gpu_totals(); });
        read([&] { archive.for_each_candidate([](const Candidate&) {}); });
        read([&] { (void)archive.flagged_candidates(); });
        read([&] { (void)archive.flagged_count(); });
        read([&] { (void)archive.candidate_plans(); });
        read([&] { (void)archive.damaged_json(20); });
    } catch (const Error&) {
    }
    return 0;
}
