// The HTML report in a real browser: Debian's chromium renders it headless, takes a screenshot and
// dumps the DOM it built, and the test reads the page the way a person would see it (the title,
// the grid cells that hold an elite, the best speedup). ./kf installs chromium with the other
// packages, so the test requires it rather than skipping.
//
// Set KFORGE_REPORT_SCREENSHOT=/some/file.png to keep the screenshot (CI keeps it as an artifact).
#include <cstdlib>
#include <regex>

#include <fmt/format.h>

#include "cli/test_report_archive.hpp"
#include "kf_catch.hpp"
#include "test_support.hpp"
#include "util/text.hpp"

namespace kforge::test {
namespace {

const std::filesystem::path k_chromium = "/usr/bin/chromium";
const std::filesystem::path k_timeout = "/usr/bin/timeout";
constexpr const char* k_browser_seconds = "120";

// chromium headless with everything that could reach the network or need a desktop turned off,
// and a fresh profile per run.
CommandResult run_chromium(const TempDir& profile, const std::vector<std::string>& extra)
{
    std::vector<std::string> args{k_browser_seconds,
                                  k_chromium.string(),
                                  "--headless",
                                  "--no-sandbox",
                                  "--disable-gpu",
                                  "--disable-quic",
                                  "--no-first-run",
                                  "--disable-background-networking",
                                  "--disable-component-update",
                                  "--disable-sync",
                                  "--user-data-dir=" + profile.path().string(),
                                  "--window-size=1400,2000"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_program(k_timeout, args);
}

std::string first_match(const std::string& text, const std::regex& pattern)
{
    std::smatch match;
    return std::regex_search(text, match, pattern) ? match[1].str() : "";
}

} // namespace

TEST_CASE("chromium renders the report: title, occupied grid cells and best speedup match the archive",
          "[browser][report][e2e]")
{
    INFO("the browser test needs Debian's chromium: apt-get install chromium (./kf installs it)");
    REQUIRE(std::filesystem::exists(k_chromium));
    TempDir dir;
    SyntheticRun run = build_synthetic_run(dir / "run.kforge", {.candidates = 600});
    auto report = run_kforge({"report", (dir / "run.kforge").string(), "-o", (dir / "report.html").string()});
    INFO(report.err);
    REQUIRE(report.exit_code == 0);
    std::string url = "file://" + (dir / "report.html").string();

    TempDir dom_profile;
    auto dom = run_chromium(dom_profile, {"--dump-dom", url});
    INFO(dom.err.substr(0, 2000));
    REQUIRE(dom.exit_code == 0);
    CHECK(first_match(dom.out, std::regex("<title>([^<]*)</title>")) ==
          "kforge report: softmax_f32 (softmax_f32-synthetic-600)");
    CHECK(first_match(dom.out, std::regex(R"re(id="best-speedup">([^<]*)<)re")) ==
          fmt::format("{:.2f}x", run.best_fitness));
    size_t elites = count_occurrences(dom.out, R"(class="cell elite" data-cell=")");
    size_t empty = count_occurrences(dom.out, R"(class="cell empty" data-cell=")");
    CHECK(elites == static_cast<size_t>(run.elites));
    CHECK(elites + empty == 4 * 256);
    CHECK(count_occurrences(dom.out, "<svg") >= 7); // two plots, the legend, four islands

    TempDir shot_profile;
    auto png = dir / "report.png";
    auto shot = run_chromium(shot_profile, {"--screenshot=" + png.string(), url});
    INFO(shot.err.substr(0, 2000));
    REQUIRE(shot.exit_code == 0);
    REQUIRE(std::filesystem::exists(png));
    std::string bytes = read_file(png);
    CHECK(bytes.substr(0, 8) == std::string("\x89PNG\r\n\x1a\n", 8));
    // A blank 1400 x 2000 page compresses to a few kilobytes; the report's plots and grids do not.
    CHECK(bytes.size() > 60'000);
    if (const char* keep = std::getenv("KFORGE_REPORT_SCREENSHOT"); keep && *keep)
        std::filesystem::copy_file(png, keep, std::filesystem::copy_options::overwrite_existing);
}

} // namespace kforge::test
