// suite.json read strictly: a manifest damaged or edited by hand in any field is refused with the
// field named, never followed outside the suite folder, and numbers are never cast past their range.
#include "kf_catch.hpp"

#include "suite/manifest.hpp"
#include "test_support.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

// The seeds of fuzz/corpus/suite_manifest: a manifest kforge wrote, and variants of it.
Json corpus_manifest(const std::string& name)
{
    return Json::parse(read_file(source_dir() / "fuzz" / "corpus" / "suite_manifest" / name));
}

} // namespace

TEST_CASE("a suite manifest kforge wrote reads back as itself", "[cli][suite]")
{
    SuiteManifest m = SuiteManifest::from_json(corpus_manifest("valid-two-problems.json"), "suite.json");
    REQUIRE(m.problems.size() == 2);
    CHECK(SuiteManifest::from_json(m.to_json(), "again").to_json() == m.to_json());
}

TEST_CASE("a suite manifest with a damaged or hostile field is refused naming the field", "[cli][suite]")
{
    struct Case {
        const char* file;
        const char* message;
    };
    const Case cases[] = {
        {"archive-outside.json", "inside the suite folder"},
        {"log-absolute.json", "inside the suite folder"},
        {"imported-spec-outside.json", "inside the suite folder"},
        {"id-dotdot.json", "expected a problem id"},
        {"id-slash.json", "expected a problem id"},
        {"budget-huge-double.json", "budget"},
        {"budget-nan-string.json", "budget"},
        {"parallel-negative.json", "expected a whole number from 1"},
        {"exit-code-huge.json", "exit_code"},
        {"gpu-huge.json", "expected a whole number from -1"},
        {"duplicate-id-unsorted.json", "appears twice"},
        {"unknown-state.json", "expected waiting, running"},
    };
    for (const Case& c : cases) {
        INFO(c.file);
        try {
            SuiteManifest::from_json(corpus_manifest(c.file), "suite.json");
            FAIL("accepted");
        } catch (const Error& e) {
            CHECK(e.kind() == ErrorKind::bad_input);
            CHECK_THAT(std::string(e.what()), Catch::Contains(c.message) && Catch::Contains("suite.json"));
        }
    }
}
