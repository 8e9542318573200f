// `kforge report`, end to end: the real binary writes one self-contained HTML page whose numbers
// match the archive, escapes everything it quotes, works on a fresh or still-writing run, names
// what is wrong with a bad archive, and stays quick and compact at 10,000 candidates.
#include <chrono>
#include <cmath>
#include <regex>

#include <sys/resource.h>

#include <fmt/format.h>

#include "archive/archive.hpp"
#include "archive/sample_run.hpp"
#include "kf_catch.hpp"
#include "report/inspect_report.hpp"
#include "report/page.hpp"
#include "report/svg.hpp"
#include "report/test_report_archive.hpp"
#include "test_support.hpp"
#include "util/text.hpp"

namespace kforge::test {
namespace {

// Writes the report of `archive` to `html` with the real binary and returns the page.
std::string write_report(const std::filesystem::path& archive, const std::filesystem::path& html,
                         const std::vector<std::string>& extra = {})
{
    std::vector<std::string> args{"report", archive.string(), "-o", html.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    auto result = run_kforge(args);
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    CHECK(result.out == html.string() + "\n");
    return read_file(html);
}

// CPU seconds (user and system) of the child processes this process has waited for so far.
double children_cpu_seconds()
{
    rusage usage{};
    ::getrusage(RUSAGE_CHILDREN, &usage);
    auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
    return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

} // namespace

TEST_CASE("report writes one page whose headline, grids and tables match the archive",
          "[e2e][report]")
{
    TempDir dir;
    SyntheticRun run = build_synthetic_run(dir / "run.kforge", {});
    std::string html = write_report(dir / "run.kforge", dir / "report.html");

    CHECK_THAT(html, Catch::Contains("<title>kforge report: softmax_f32 (softmax_f32-synthetic-300)</title>"));
    CHECK_THAT(html, Catch::Contains(fmt::format(R"(id="best-speedup">{:.2f}x<)", run.best_fitness)));
    CHECK_THAT(html, Catch::Contains(fmt::format("best speedup over the reference: #{}", run.best_id)));
    // Every cell of the four islands is drawn; the occupied ones are exactly the archive's elites.
    CHECK(count_occurrences(html, R"(class="cell elite" data-cell=")") == static_cast<size_t>(run.elites));
    CHECK(count_occurrences(html, R"(class="cell elite" data-cell=")") +
              count_occurrences(html, R"(class="cell empty" data-cell=")") ==
          4 * 256);
    CHECK(count_occurrences(html, R"(<figure class="island")") == 4);
    CHECK(count_occurrences(html, R"(class="best-ring")") == 2); // the best's cell and the legend's sample
    CHECK_THAT(html, Catch::Contains(fmt::format(R"(data-candidate="{}" data-fitness="{:.4f}")",
                                                 run.best_id, run.best_fitness)));
    // Both plots, with the total spent in the caption.
    CHECK(count_occurrences(html, R"(class="plot")") == 2);
    CHECK_THAT(html, Catch::Contains(fmt::format("({} in all)", format_dollars(run.dollars))));
    // The per-shape table: every bench shape against the reference and the vendor baseline.
    for (size_t i = 0; i < bench_labels().size(); ++i) {
        INFO("bench shape " << i << " " << bench_labels()[i]);
        double best_ns = reference_bench_ns()[i] / run.best_fitness;
        CHECK_THAT(html, Catch::Contains(fmt::format("<td>{}</td><td class=\"num\">{}</td>",
                                                     bench_labels()[i], format_duration_ns(best_ns))));
        CHECK_THAT(html, Catch::Contains(fmt::format("<td class=\"num\">{}</td><td class=\"num\">{:.1f}%</td>",
                                                     format_duration_ns(synthetic_roofline_ns(i)),
                                                     100 * synthetic_roofline_ns(i) / best_ns)));
    }
    CHECK_THAT(html, Catch::Contains(fmt::format("<th class=\"num\">vs {}</th>", k_vendor_subject)));
    CHECK_THAT(html, Catch::Contains(fmt::format("<b>{:.2f}x</b>", run.best_fitness / k_vendor_speedup)));
    // Costs by model, and the lineage down to a seed.
    CHECK_THAT(html, Catch::Contains("<td>anthropic</td><td>claude-sonnet-4-5</td>"));
    CHECK_THAT(html, Catch::Contains("<td>openai</td><td>gpt-5</td>"));
    CHECK_THAT(html, Catch::Contains("Lineage of the best"));
    CHECK_THAT(html, Catch::Contains(R"(<span class="badge v-correct">correct</span>)"));
    CHECK_THAT(html, Catch::Contains(R"(<span class="badge v-compile_error">compile_error</span>)"));
    CHECK_THAT(html, Catch::Contains("more correct candidates not shown"));
}

TEST_CASE("the report is self-contained and escapes sources, notes and messages", "[e2e][report]")
{
    TempDir dir;
    SyntheticRun run = build_synthetic_run(dir / "run.kforge", {});
    std::string html = write_report(dir / "run.kforge", dir / "report.html", {"--title", "A <b>&</b> run"});

    CHECK_THAT(html, Catch::Contains("<title>A &lt;b&gt;&amp;&lt;/b&gt; run</title>"));
    // Nothing to fetch and nothing to run.
    CHECK_THAT(html, !Catch::Contains("<script") && !Catch::Contains("<link") &&
                         !Catch::Contains("<img") && !Catch::Contains("src=") &&
                         !Catch::Contains("@import"));
    std::string without_namespace = replace_all(html, "xmlns=\"http://www.w3.org/2000/svg\"", "");
    CHECK_THAT(without_namespace, !Catch::Contains("http://") && !Catch::Contains("https://"));
    CHECK(count_occurrences(html, "url(") == count_occurrences(html, "url(#"));
    // The best's full source, every line, escaped.
    CHECK_THAT(html, Catch::Contains(R"(<span class="l">    if (row &lt; M &amp;&amp; N &gt; 0) {</span>)"));
    CHECK(count_occurrences(html, R"(<span class="l">)") == count_occurrences(run.best_source, "\n"));
    CHECK_THAT(html, Catch::Contains("&lt;vector&gt; loads &amp; fewer syncs"));
    CHECK_THAT(html, !Catch::Contains("<vector>"));
    CHECK_THAT(html, Catch::Contains("no operator &quot;&lt;&quot; matches these operands &amp; types"));
}

TEST_CASE("report writes next to the archive by default and reads while a writer holds it",
          "[e2e][report]")
{
    TempDir dir;
    build_sample_archive(dir / "run.kforge");
    Archive writer = Archive::open(dir / "run.kforge", OpenMode::write);
    writer.set_run_state("running");
    auto result = run_kforge({"report", (dir / "run.kforge").string()});
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    CHECK(result.out == (dir / "run.html").string() + "\n");
    std::string html = read_file(dir / "run.html");
    CHECK_THAT(html, Catch::Contains(R"(id="best-speedup">2.50x<)"));
    CHECK_THAT(html, Catch::Contains(R"(<div class="value">running</div>)"));
    // The sample run's elites use an older two-part cell key: listed, not lost.
    CHECK(count_occurrences(html, R"(class="cell elite" data-cell=")") == 0);
    CHECK_THAT(html, Catch::Contains("2 elites sit in cells that are not on the"));
    CHECK_THAT(html, Catch::Contains("island 0 plain/shfl #6 2.50x;"));
}

TEST_CASE("the report of a run without candidates or LLM calls says so instead of drawing nothing",
          "[e2e][report]")
{
    TempDir dir;
    Archive::create(dir / "fresh.kforge", softmax_run_info());
    std::string fresh = write_report(dir / "fresh.kforge", dir / "fresh.html");
    CHECK_THAT(fresh, Catch::Contains(R"(id="best-speedup">none<)"));
    CHECK_THAT(fresh, Catch::Contains("no correct candidate yet"));
    CHECK_THAT(fresh, Catch::Contains("no dollars spent"));
    CHECK_THAT(fresh, Catch::Contains("No LLM calls were made"));
    CHECK(count_occurrences(fresh, R"(class="cell empty" data-cell=")") == 2 * 256); // the config's 2 islands

    SyntheticRun run = build_synthetic_run(dir / "builtin.kforge", {.candidates = 120, .spending = Spending::builtin});
    std::string builtin = write_report(dir / "builtin.kforge", dir / "builtin.html");
    CHECK(run.calls == 0);
    CHECK_THAT(builtin, Catch::Contains("no dollars spent"));
    CHECK_THAT(builtin, Catch::Contains("every candidate came from the builtin proposer"));
    CHECK_THAT(builtin, Catch::Contains("No LLM calls: the run used the builtin proposer only."));
    CHECK_THAT(builtin, Catch::Contains(fmt::format(R"(id="best-speedup">{:.2f}x<)", run.best_fitness)));
}

TEST_CASE("report names the file and the problem for a bad archive or an unwritable output",
          "[e2e][report]")
{
    TempDir dir;
    auto missing = run_kforge({"report", (dir / "nope.kforge").string()});
    CHECK(missing.exit_code == 3);
    CHECK_THAT(missing.err, Catch::Contains("nope.kforge: no such archive"));
    CHECK_FALSE(std::filesystem::exists(dir / "nope.html"));

    build_sample_archive(dir / "run.kforge");
    auto unwritable = run_kforge({"report", (dir / "run.kforge").string(), "-o",
                                  (dir / "no" / "such" / "folder" / "r.html").string()});
    CHECK(unwritable.exit_code == 4);
    CHECK_THAT(unwritable.err, Catch::Contains("r.html"));
    CHECK(unwritable.out.empty());

    auto usage = run_kforge({"report"});
    CHECK(usage.exit_code == 2);
}

TEST_CASE("the report of 10,000 candidates is written in under a second of CPU and stays compact",
          "[e2e][report][slow]")
{
    TempDir dir;
    auto started = std::chrono::steady_clock::now();
    SyntheticRun run = build_synthetic_run(dir / "big.kforge", {.candidates = 10'000});
    double built = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    // The report's own CPU time, which a machine busy with other work does not inflate as it does
    // the wall time.
    double cpu_before = children_cpu_seconds();
    std::string html = write_report(dir / "big.kforge", dir / "synthetic-10000.html");
    double seconds = children_cpu_seconds() - cpu_before;
    WARN(fmt::format("10,000 candidates: archive built in {:.2f} s, report written in {:.3f} s of CPU, {}",
                     built, seconds, format_bytes(static_cast<double>(html.size()))));
#if defined(__SANITIZE_ADDRESS__)
    constexpr double k_limit_s = 5; // sanitizers slow everything several times over
#else
    constexpr double k_limit_s = 1;
#endif
    CHECK(seconds < k_limit_s);
    CHECK(html.size() < 1'500'000);
    CHECK(count_occurrences(html, R"(class="cell elite" data-cell=")") == static_cast<size_t>(run.elites));
    CHECK_THAT(html, Catch::Contains(fmt::format(R"(id="best-speedup">{:.2f}x<)", run.best_fitness)));
    CHECK_THAT(html, Catch::Contains("10,000 candidates in the order they were stored"));
    keep_for_review(dir / "synthetic-10000.html");
}

TEST_CASE("the report of every archive recorded on a GPU shows its title, elites and best",
          "[e2e][report][recorded]")
{
    for (const auto& recorded : recorded_archives()) {
        INFO("archive " << recorded.string());
        TempDir dir;
        std::filesystem::copy_file(recorded, dir / "run.kforge"); // a fixture stays untouched
        ExpectedPage expected = expected_page(dir / "run.kforge");
        std::string html = write_report(dir / "run.kforge", dir / "report.html");
        CHECK_THAT(html, Catch::Contains("<title>" + html_escape(expected.title) + "</title>"));
        CHECK_THAT(html, Catch::Contains(R"(id="best-speedup">)" + expected.best_speedup + "<"));
        CHECK(count_occurrences(html, R"(class="cell elite" data-cell=")") == expected.grid_elites);
        if (expected.best_speedup != "none") {
            CHECK_THAT(html, Catch::Contains("Lineage of the best"));
            CHECK_THAT(html, Catch::Contains("% of roofline"));
            CHECK_THAT(html, Catch::Contains(R"(<pre class="source">)"));
        }
    }
}

TEST_CASE("report markup helpers escape text, pick round ticks and span the colour scale", "[report]")
{
    CHECK(html_escape(R"(<a href="x">Tom & 'Jerry'</a>)") ==
          "&lt;a href=&quot;x&quot;&gt;Tom &amp; &apos;Jerry&apos;&lt;/a&gt;");
    CHECK(nice_ticks(0, 10, 5) == std::vector<double>{0, 2, 4, 6, 8, 10});
    CHECK(nice_ticks(0, 2.75, 5) == std::vector<double>{0, 0.5, 1, 1.5, 2, 2.5});
    CHECK(nice_ticks(0, 11000, 6) == std::vector<double>{0, 2000, 4000, 6000, 8000, 10000});
    CHECK(nice_ticks(0, 0.034, 4) == std::vector<double>{0, 0.01, 0.02, 0.03});
    CHECK(nice_ticks(3, 3, 5) == std::vector<double>{3});
    CHECK(colour_scale(0) == "#440154");
    CHECK(colour_scale(1) == "#fde725");
    CHECK(colour_scale(-3) == colour_scale(0));
    CHECK(colour_scale(0.5) == "#21918c");
    LinearScale y{0, 4, 100, 20};
    CHECK(y(0) == 100);
    CHECK(y(4) == 20);
    CHECK(y(1) == 80);
}

} // namespace kforge::test
