// The HTML report in a real browser: Debian's chromium renders it headless, takes a screenshot and
// dumps the DOM it built, and the test reads the page the way a person would see it (the title,
// the grid cells, the best speedup), against numbers read through the archive API. It renders a
// synthetic run, then every run archive recorded on a GPU in tests/fixtures/.
//
// Tagged [browser]: the test runner reports these tests skipped, with the reason, where chromium is
// not installed (./kf installs it). Set KFORGE_REPORT_SCREENSHOTS=DIR to keep the screenshots and
// pages (NAME.png and NAME.html per archive).
#include <regex>

#include <fmt/format.h>

#include "kf_catch.hpp"
#include "report/page.hpp"
#include "report/test_report_archive.hpp"
#include "test_support.hpp"
#include "util/text.hpp"

namespace kforge::test {
namespace {

const std::filesystem::path k_timeout = "/usr/bin/timeout";
constexpr const char* k_browser_seconds = "120";

// chromium headless with everything that could reach the network or need a desktop turned off,
// and a fresh profile per run.
CommandResult run_chromium(const std::vector<std::string>& extra)
{
    TempDir profile;
    std::vector<std::string> args{k_browser_seconds,
                                  chromium_path().string(),
                                  "--headless",
                                  "--no-sandbox",
                                  "--disable-gpu",
                                  "--disable-quic",
                                  "--no-first-run",
                                  "--disable-background-networking",
                                  "--disable-component-update",
                                  "--disable-sync",
                                  "--hide-scrollbars",
                                  "--user-data-dir=" + profile.path().string(),
                                  "--window-size=1400,2400"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_program(k_timeout, args);
}

std::string first_match(const std::string& text, const std::regex& pattern)
{
    std::smatch match;
    return std::regex_search(text, match, pattern) ? match[1].str() : "";
}

// Writes the report of `archive` (copied first: a fixture stays untouched), renders it in chromium
// and checks the DOM and the screenshot against expected_page().
void check_in_browser(const std::filesystem::path& archive, const std::string& name)
{
    INFO("archive " << archive.string());
    TempDir dir;
    auto copy = dir / (name + ".kforge");
    std::filesystem::copy_file(archive, copy);
    ExpectedPage expected = expected_page(copy);
    auto html = dir / (name + ".html");
    auto report = run_kforge({"report", copy.string(), "-o", html.string()});
    INFO(report.err);
    REQUIRE(report.exit_code == 0);
    std::string url = "file://" + html.string();

    auto dom = run_chromium({"--dump-dom", url});
    INFO(dom.err.substr(0, 2000));
    REQUIRE(dom.exit_code == 0);
    CHECK(first_match(dom.out, std::regex("<title>([^<]*)</title>")) == html_escape(expected.title));
    CHECK(first_match(dom.out, std::regex(R"re(id="best-speedup">([^<]*)<)re")) == expected.best_speedup);
    size_t elites = count_occurrences(dom.out, R"(class="cell elite" data-cell=")");
    size_t cells = elites + count_occurrences(dom.out, R"(class="cell empty" data-cell=")");
    CHECK(elites == expected.grid_elites);
    CHECK(cells % 256 == 0);
    CHECK(cells >= 256 * expected.islands);
    CHECK(count_occurrences(dom.out, R"(<figure class="island")") == cells / 256);

    auto png = dir / (name + ".png");
    auto shot = run_chromium({"--screenshot=" + png.string(), url});
    INFO(shot.err.substr(0, 2000));
    REQUIRE(shot.exit_code == 0);
    REQUIRE(std::filesystem::exists(png));
    std::string bytes = read_file(png);
    CHECK(bytes.substr(0, 8) == std::string("\x89PNG\r\n\x1a\n", 8));
    // A blank 1400 x 2400 page compresses to a few kilobytes; the report's plots and grids do not.
    CHECK(bytes.size() > 60'000);
    keep_for_review(png);
    keep_for_review(html);
}

} // namespace

TEST_CASE("chromium renders the report: title, grid cells and best speedup match the archive",
          "[browser][report][e2e]")
{
    TempDir dir;
    SyntheticRun run = build_synthetic_run(dir / "synthetic.kforge", {.candidates = 600});
    ExpectedPage expected = expected_page(dir / "synthetic.kforge");
    // The synthetic run's own record agrees with what the archive API reads back.
    CHECK(expected.best_speedup == fmt::format("{:.2f}x", run.best_fitness));
    CHECK(expected.grid_elites == static_cast<size_t>(run.elites));
    CHECK(expected.islands == 4);
    check_in_browser(dir / "synthetic.kforge", "synthetic-600");

    std::vector<std::filesystem::path> recorded = recorded_archives();
    if (recorded.empty())
        WARN("no recorded archive in tests/fixtures/: only the synthetic run was rendered");
    for (const auto& archive : recorded)
        check_in_browser(archive, archive.stem().string());
}

} // namespace kforge::test
