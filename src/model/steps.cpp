// `kforge model profile`, `extract` and `optimize`: the PyTorch side cuts the model (python.cpp);
// here are its flags, the table a user reads, and the suite over the regions.
#include <cstdio>

#include <fmt/format.h>

#include "model/documents.hpp"
#include "model/folder.hpp"
#include "model/model.hpp"
#include "model/python.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/text.hpp"
#include "util/text_table.hpp"

namespace kforge {
namespace {

namespace fs = std::filesystem;

std::string seconds_text(const Json& value)
{
    return value.is_number() ? format_duration_ns(value.get<double>() * 1e9) : "-";
}

std::string share_text(double share)
{
    return fmt::format("{:.1f}%", 100 * share);
}

// The regions' table and the lines around it.
std::string render_cut(const Json& doc, bool wrote)
{
    bool measured = doc.value("measured", false);
    std::string out = fmt::format("model {}: {} regions, {} unique; {}\n", doc.value("model", "?"),
                                  doc.value("regions_total", 0), doc["regions"].size(),
                                  measured ? "times measured on the GPU, each region alone"
                                           : "no GPU: times are estimates (an H200's roofline from each region's "
                                             "FLOPs and bytes), for ranking only");
    if (measured && doc["timing"].is_object()) {
        const Json& t = doc["timing"];
        out += fmt::format("  the model: {} eager, {} torch.compile (median of one forward)\n",
                           seconds_text(t["model_s"]), seconds_text(t.value("compile_s", Json())));
    }
    TextTable table({{"rank", TextTable::Align::right},
                     {"region"},
                     {"count", TextTable::Align::right},
                     {measured ? "time" : "estimate", TextTable::Align::right},
                     {"share", TextTable::Align::right},
                     {wrote ? "problem" : "selected"}});
    double covered = 0;
    for (const auto& r : doc["regions"]) {
        double seconds = r.value(measured ? "time_s" : "estimate_s", 0.0);
        covered += r.value("share", 0.0);
        std::string what = r.contains("problem") ? r["problem"].get<std::string>()
                           : r.value("selected", false) ? "yes"
                                                        : "no: " + r.value("why_not", std::string());
        table.add_row({std::to_string(r.value("rank", 0)), r.value("id", "?"), std::to_string(r.value("count", 1)),
                       format_duration_ns(seconds * 1e9), share_text(r.value("share", 0.0)), what});
    }
    out += table.render();
    if (measured)
        out += fmt::format("  outside every region (operators between them, Python): {}\n",
                           share_text(std::max(0.0, 1 - covered)));
    if (doc["timing"].is_object() && doc["timing"].contains("operators") && doc["timing"]["operators"].is_array() &&
        !doc["timing"]["operators"].empty()) {
        out += "  the operators taking the most GPU time in eager (torch.profiler, per forward):\n";
        TextTable ops({{"operator"}, {"calls", TextTable::Align::right}, {"device time", TextTable::Align::right},
                       {"share", TextTable::Align::right}, {"input shapes"}});
        for (const auto& op : doc["timing"]["operators"])
            ops.add_row({op.value("op", "?"), std::to_string(op.value("calls", 0)),
                         format_duration_ns(op.value("device_us", 0.0) * 1e3), share_text(op.value("share", 0.0)),
                         truncate_text(op.value("shapes", std::string()), 60)});
        out += ops.render("    ");
    }
    std::vector<std::string> symbols;
    for (const auto& [name, value] : doc["size_symbols"].items())
        symbols.push_back(fmt::format("{} = {}", name, value.dump()));
    out += fmt::format("  size variables that follow into the regions: {}\n",
                       symbols.empty() ? "none" : join(symbols, ", "));
    for (const auto& note : doc["size_notes"])
        out += "    " + note.get<std::string>() + "\n";
    return out;
}

std::vector<std::string> cut_args(const char* step, const ModelCutOptions& o)
{
    std::vector<std::string> args{step, fs::absolute(o.model).string(), "-o", fs::absolute(o.folder).string(),
                                  "--device", o.device, "--min-share", fmt::format("{}", o.min_share)};
    if (o.top)
        args.insert(args.end(), {"--top", std::to_string(*o.top)});
    if (!o.measure)
        args.push_back("--no-measure");
    if (!o.sizes.empty())
        args.insert(args.end(), {"--sizes", o.sizes});
    if (!o.model_class.empty())
        args.insert(args.end(), {"--model-class", o.model_class, "--inputs", o.inputs, "--init-inputs", o.init_inputs});
    return args;
}

// -o names a folder: an existing file there is a mistake on the command line (as `suite run -o`).
void check_model_folder_path(const std::string& given)
{
    std::error_code ec;
    if (fs::exists(given, ec) && !fs::is_directory(given, ec))
        fail(ErrorKind::usage, "-o {}: is a file, not a folder; a model folder holds many files (docs/model.md)", given);
}

void check_model_file(const std::string& given)
{
    std::error_code ec;
    fs::path path = fs::absolute(given);
    if (!fs::exists(path, ec))
        fail_input("{}: no such file", given);
    if (!fs::is_regular_file(path, ec))
        fail_input("{}: not a regular file: name the model's .py file", given);
}

Json cut(const char* step, const ModelCutOptions& o)
{
    check_model_file(o.model);
    if (!o.model_class.empty() && o.inputs.empty())
        fail(ErrorKind::usage, "--model-class {} needs --inputs, a Python expression that makes the forward's inputs "
                               "(e.g. \"[torch.randn(8, 512)]\")",
             o.model_class);
    std::error_code ec;
    check_model_folder_path(o.folder);
    fs::create_directories(o.folder, ec);
    if (ec)
        fail_runtime("cannot create {}: {}", o.folder, ec.message());
    Json doc = run_model_python(cut_args(step, o), o.time_limit_s, fmt::format("{} {}", step, o.model));
    check_model_document(doc, ModelDocument::model,
                         (fs::path(o.folder) / (step == std::string("profile") ? "profile.json" : "model.json")).string());
    return doc;
}

} // namespace

int run_model_profile(const ModelCutOptions& options)
{
    Json doc = cut("profile", options);
    std::fputs(render_cut(doc, false).c_str(), stdout);
    std::fputs(fmt::format("wrote {}\n", (fs::path(options.folder) / "profile.json").string()).c_str(), stdout);
    return 0;
}

int run_model_extract(const ModelCutOptions& options)
{
    check_model_file(options.model);
    check_model_folder_path(options.folder);
    ModelFolderIdentity identity = model_folder_identity(options);
    prepare_model_folder(fs::absolute(options.folder), identity, options.force);
    Json doc = cut("extract", options);
    record_model_folder(fs::absolute(options.folder), identity);
    std::fputs(render_cut(doc, true).c_str(), stdout);
    std::fputs(fmt::format("wrote {} and the problems in {}\n", (fs::path(options.folder) / "model.json").string(),
                           (fs::path(options.folder) / "regions").string())
                   .c_str(),
               stdout);
    return 0;
}

int run_model_optimize(const ModelCutOptions& cut_options, SuiteRunRequest suite, const ModelAssembleOptions& assemble)
{
    fs::path folder = fs::absolute(cut_options.folder);
    fs::path regions = folder / "regions";
    std::error_code ec;
    // The suite's flags are checked before anything is captured (a bad --model is a usage error now,
    // not after minutes of extraction).
    if (suite.merge_settings)
        suite.merge_settings(SuiteSettings{});
    check_model_file(cut_options.model);
    check_model_folder_path(cut_options.folder);
    ModelFolderIdentity identity = model_folder_identity(cut_options);
    bool resuming = fs::exists(folder / "suite" / "suite.json", ec) && fs::exists(folder / "model.json", ec) &&
                    model_folder_holds(folder, identity) && !cut_options.force;
    if (resuming) {
        log_info("{} holds this model's extraction and a suite: resuming the suite", folder.string());
    } else {
        prepare_model_folder(folder, identity, cut_options.force);
        Json doc = cut("extract", cut_options);
        record_model_folder(folder, identity);
        std::fputs(render_cut(doc, true).c_str(), stdout);
        bool any = false;
        for (const auto& r : doc["regions"])
            any = any || r.contains("problem");
        if (!any)
            fail_input("{}: no region is worth a search (--top, --min-share) or could be written; nothing to optimize",
                       cut_options.model);
    }
    suite.paths = {regions.string()};
    suite.output = (folder / "suite").string();
    int rc = run_suite(suite);
    if (rc == 130)
        return rc;
    int assembled = run_model_assemble(assemble);
    run_model_report({folder.string(), false, ""});
    return rc != 0 ? rc : assembled;
}

} // namespace kforge
