// `kforge model assemble`: which regions kforge won, their exports, MODEL_kforge.py and its check.
//
// A region is replaced when its problem's best kernel is correct and faster than both torch eager
// and torch.compile on that region (the suite's own measurements, taken beside each other); any
// other region stays the model's own code, so the assembled model under torch.compile keeps
// Inductor wherever kforge did not win.
#include <cstdio>

#include <fmt/format.h>

#include "export/export.hpp"
#include "model/documents.hpp"
#include "model/end_to_end.hpp"
#include "model/model.hpp"
#include "model/python.hpp"
#include "suite/results.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/text.hpp"
#include "util/text_table.hpp"

namespace kforge {
namespace {

namespace fs = std::filesystem;

// Each output's tolerance in the problem's spec: [{"atol": "...", "rtol": "..."}].
Json output_checks(const fs::path& spec)
{
    Json checks = Json::array();
    Json doc = Json::parse(read_file(spec), nullptr, false);
    if (!doc.is_object() || !doc["args"].is_array())
        return checks;
    for (const auto& arg : doc["args"])
        if (arg.is_object() && arg.contains("check") && arg["check"].is_object())
            checks.push_back(arg["check"]);
    return checks;
}

struct Decision {
    std::string problem;
    std::string outcome; // "replaced" or why not
    std::optional<double> eager, compile;
};

std::string speedup_text(const std::optional<double>& s)
{
    return s ? fmt::format("{:.2f}x", *s) : "-";
}

} // namespace

int run_model_assemble(const ModelAssembleOptions& o)
{
    fs::path folder = fs::absolute(o.folder);
    Json doc = read_model_document(folder, ModelDocument::model, "run `kforge model extract` or `optimize` first");
    fs::path suite_root = folder / "suite";
    std::error_code ec;
    if (!fs::exists(suite_root / "suite.json", ec))
        fail_input("{}: no suite/ yet; run `kforge model optimize` (or `kforge suite run {} -o {}`) first",
                   folder.string(), (folder / "regions").string(), suite_root.string());
    SuiteFolder suite(suite_root, false);
    std::optional<SuiteManifest> manifest = suite.read();
    if (!manifest)
        fail_input("{}: suite.json does not read", suite_root.string());
    Json winners = Json::array();
    std::vector<Decision> decisions;
    for (const auto& row : doc["regions"]) {
        if (!row.contains("problem"))
            continue;
        std::string id = row.value("id", "");
        const SuiteProblem* problem = manifest->find(id);
        if (!problem) {
            decisions.push_back({id, "not in the suite", {}, {}});
            continue;
        }
        ProblemResult result = read_problem_result(suite, *problem, epoch_now());
        Decision d{id, "", result.vs_reference, result.vs_compile};
        if (!result.correct())
            d.outcome = result.state == ProblemState::failed || result.state == ProblemState::skipped
                            ? fmt::format("{}: {}", problem_state_name(result.state), first_line(problem->reason, 200))
                        : result.has_archive && !result.error.empty() ? "archive unreadable: " + result.error
                                                                       : "no correct kernel";
        else if (!result.vs_reference || *result.vs_reference <= 1.0)
            d.outcome = "not faster than torch eager";
        else if (!result.vs_compile || *result.vs_compile <= 1.0)
            d.outcome = result.vs_compile ? "not faster than torch.compile" : "torch.compile was not timed";
        if (!d.outcome.empty()) {
            decisions.push_back(d);
            continue;
        }
        fs::create_directories(folder / "kernels", ec);
        ExportOptions e;
        e.archive_path = suite.resolve(problem->archive).string();
        e.best = true;
        e.output = (folder / "kernels" / (id + ".cu")).string();
        e.host = HostCode::torch;
        run_export(e);
        winners.push_back({{"problem", id},
                           {"loader", "kernels/" + id + "_load.py"},
                           {"speedup_eager", *result.vs_reference},
                           {"speedup_compile", *result.vs_compile},
                           {"best_time_ns", result.best_time_ns ? Json(*result.best_time_ns) : Json()},
                           {"checks", output_checks(suite.resolve(problem->spec))}});
        d.outcome = "replaced";
        decisions.push_back(d);
    }
    Json considered = Json::array();
    for (const auto& d : decisions)
        considered.push_back({{"problem", d.problem},
                              {"outcome", d.outcome},
                              {"speedup_eager", d.eager ? Json(*d.eager) : Json()},
                              {"speedup_compile", d.compile ? Json(*d.compile) : Json()}});
    write_file_atomic(folder / "winners.json",
                      Json{{"winners", winners}, {"considered", considered}}.dump(1) + "\n");
    Json written = run_model_python({"assemble", folder.string()}, o.time_limit_s, "assemble " + folder.string());
    Json checked = run_model_python({"check", folder.string(), "--device", o.device}, o.time_limit_s,
                                    "check the assembled model in " + folder.string());
    check_model_document(checked, ModelDocument::assembled, (folder / "assembled.json").string());

    TextTable table({{"region"}, {"vs eager", TextTable::Align::right}, {"vs compile", TextTable::Align::right},
                     {"assembled"}});
    for (const auto& d : decisions)
        table.add_row({d.problem, speedup_text(d.eager), speedup_text(d.compile), d.outcome});
    std::string assembled_path = written.contains("assembled") && written["assembled"].is_string()
                                     ? written["assembled"].get<std::string>()
                                     : "?";
    std::string out = fmt::format("assembled {}: {} of {} regions replaced\n", assembled_path,
                                  winners.size(), decisions.size());
    out += table.render();
    bool matches = checked.value("matches", false);
    if (checked.value("mode", "") == "reference")
        out += "  no GPU here: checked with each replaced region running its own operators through the assembled "
               "wiring (the wiring is checked, not the kernels)\n";
    out += fmt::format("  against the original on fresh inputs: {}\n",
                       matches ? "matches (within the regions' tolerances, composed)" : "DOES NOT MATCH");
    // The time between kernels needs the regions' own times: `kforge model report` shows it.
    for (const auto& line : forward_time_lines(checked, std::nullopt))
        out += "  " + line + "\n";
    std::fputs(out.c_str(), stdout);
    if (!matches)
        log_error("the assembled model does not match the original: {}", checked.dump());
    return matches ? 0 : 1;
}

} // namespace kforge
