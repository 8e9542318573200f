// scratch: not committed
#include "cli/test_report_archive.hpp"
#include "archive/sample_run.hpp"
#include "kf_catch.hpp"
namespace kforge::test {
TEST_CASE("scratch keep archives", "[.scratch]")
{
    std::filesystem::create_directories("/tmp/rpt");
    for (const char* name : {"/tmp/rpt/r600.kforge", "/tmp/rpt/r10k.kforge", "/tmp/rpt/builtin.kforge", "/tmp/rpt/sample.kforge"})
        std::filesystem::remove(name);
    build_synthetic_run("/tmp/rpt/r600.kforge", {.candidates = 600});
    build_synthetic_run("/tmp/rpt/r10k.kforge", {.candidates = 10000});
    build_synthetic_run("/tmp/rpt/builtin.kforge", {.candidates = 80, .islands = 2, .spending = Spending::builtin});
    build_sample_archive("/tmp/rpt/sample.kforge");
}
}
