// A closed archive is one file (issue 35): nothing is left beside it, neither SQLite's -wal and
// -shm nor the writer lock, whether its writer or a reader closed last.
#include "kf_catch.hpp"

#include <optional>
#include <set>

#include "archive/archive.hpp"
#include "archive/sample_run.hpp"
#include "test_support.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

std::set<std::string> names_in(const std::filesystem::path& folder)
{
    std::set<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(folder))
        names.insert(entry.path().filename().string());
    return names;
}

} // namespace

TEST_CASE("a closed archive leaves no -wal, -shm or .lock beside it, after its writer or a reader", "[archive]")
{
    TempDir dir;
    auto path = dir / "run.kforge";
    build_sample_archive(path);
    const std::set<std::string> alone{"run.kforge"};
    CHECK(names_in(dir.path()) == alone);
    {
        Archive reader = Archive::open(path, OpenMode::read_only);
        CHECK(reader.candidate_count() == 7);
    }
    CHECK(names_in(dir.path()) == alone);
    {
        // A reader that outlives the writer is the last to close.
        std::optional<Archive> writer = Archive::open(path, OpenMode::write);
        Archive reader = Archive::open(path, OpenMode::read_only);
        writer->set_run_state("finished");
        writer.reset();
        CHECK(reader.run_info().state == "finished");
    }
    CHECK(names_in(dir.path()) == alone);
    // Resumable as ever: the next writer takes the lock and writes.
    Archive again = Archive::open(path, OpenMode::write);
    again.set_run_state("interrupted");
    CHECK(names_in(dir.path()).count("run.kforge.lock") == 1);
}
