// The sample run's flagged candidate; see flagged_candidate.hpp.
#include "archive/flagged_candidate.hpp"

#include "archive/archive.hpp"
#include "archive/sample_run.hpp"
#include "util/text.hpp"

namespace kforge::test {

int64_t add_flagged_candidate(const std::filesystem::path& path)
{
    Archive archive = Archive::open(path, OpenMode::write);
    Candidate candidate;
    candidate.source = replace_all(softmax_candidate_source(), "BLOCK", "THREADS");
    candidate.source_hash = "flagged-hash";
    candidate.island = 1;
    candidate.origin = Origin::llm;
    candidate.note = "keeps rows in registers";
    candidate.evaluation.verdict = Verdict{VerdictKind::correct, ""};
    candidate.evaluation.measurements = bench_measurements("candidate", k_flagged_fitness);
    candidate.evaluation.measurements.front().below_roofline = true;
    const Measurement& fast = candidate.evaluation.measurements.front();
    candidate.evaluation.metrics = Json{
        {"suspicious", true},
        {"suspicious_fitness", k_flagged_fitness},
        {"notes",
         Json{{"below_roofline",
               Json::array({Json{{"shape", fast.shape_label},
                                 {"median_ns", fast.median_ns},
                                 {"floor_ns", 12000.0},
                                 {"roofline_ns", 24000.0},
                                 {"why", "10.51 us is under the floor of 12.00 us (128.0 MiB of the 512.0 MiB "
                                         "moved may stay in L2; the roofline is 24.00 us)"}}})}}}};
    candidate.evaluation.descriptors = Json{{"memory", "vectorised"}};
    return archive.insert_candidate(candidate);
}

} // namespace kforge::test
