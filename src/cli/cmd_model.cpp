// `kforge model profile | extract | optimize | assemble | report`: a user's whole model. Here are
// the flags and their checks; the model room (src/model/model.hpp) does the work, and `optimize`
// takes every `suite run` flag (cli/suite_options.hpp) for the suite over the regions.
#include <memory>

#include "cli/app.hpp"
#include "cli/option_checks.hpp"
#include "cli/suite_options.hpp"
#include "model/model.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

struct ModelCutFlags {
    ModelCutOptions cut;
    std::string min_share = "2%";
    bool no_measure = false;
};

// "2%" or "0.02" -> 0.02.
double parse_share(const std::string& text)
{
    std::string t = trim(text);
    bool percent = !t.empty() && t.back() == '%';
    if (percent)
        t.pop_back();
    try {
        size_t used = 0;
        double v = std::stod(t, &used);
        if (used == t.size() && v >= 0) {
            double share = percent ? v / 100 : v;
            if (share <= 1)
                return share;
        }
    } catch (const std::logic_error&) {
    }
    fail(ErrorKind::usage, "--min-share '{}': expected a share of the model's time, e.g. 2% or 0.02", text);
}

void add_cut_flags(CLI::App* cmd, ModelCutFlags& f, bool selection)
{
    cmd->add_option("MODEL", f.cut.model, "the model: a .py file in KernelBench form (Model, get_inputs, "
                                          "get_init_inputs, module-level sizes), or any file with --model-class")
        ->required();
    cmd->add_option("--model-class", f.cut.model_class, "an ordinary file's model class (with --inputs)")
        ->check(non_empty());
    cmd->add_option("--inputs", f.cut.inputs, "with --model-class: a Python expression making the forward's inputs, "
                                              "e.g. \"[torch.randn(8, 128, 768)]\"; its integers become size "
                                              "variables. It runs as Python, as the model's own code does")
        ->check(non_empty());
    cmd->add_option("--sizes", f.cut.sizes, "rebind the model's size variables first, e.g. batch_size=2,seq_len=64 "
                                            "(cut a model too large for this machine at smaller sizes)")
        ->check(non_empty());
    cmd->add_option("--init-inputs", f.cut.init_inputs, "with --model-class: the constructor's arguments, e.g. "
                                                        "\"[768, 12]\"; a Python expression, run as the model's code is")
        ->capture_default_str();
    cmd->add_option("-o,--output", f.cut.folder, "the model folder (docs/model.md lists what it holds)")->required();
    cmd->add_option("--device", f.cut.device, "where the model is captured and timed: auto (a GPU where torch sees "
                                              "one), cuda, cpu")
        ->check(CLI::IsMember({"auto", "cuda", "cpu"}))
        ->capture_default_str();
    cmd->add_option("--time-limit", f.cut.time_limit_s, "seconds the PyTorch side may take")
        ->check(real_number(1, 86400, false))
        ->capture_default_str();
    cmd->add_flag("--no-measure", f.no_measure, "rank regions by the estimate even on a GPU");
    if (!selection)
        return;
    cmd->add_flag("--force", f.cut.force, "extract into a folder that holds another model's extraction (another "
                                          "file, other --sizes or another selection), discarding what kforge "
                                          "wrote there");
    cmd->add_option("--top", f.cut.top, "at most N regions, the most time first")->check(whole_number(1, 1000));
    cmd->add_option("--min-share", f.min_share, "leave out regions under this share of the model's time (2% or "
                                                "0.02)")
        ->capture_default_str();
}

ModelCutOptions cut_options(const ModelCutFlags& f)
{
    ModelCutOptions o = f.cut;
    o.min_share = parse_share(f.min_share);
    o.measure = !f.no_measure;
    return o;
}

void add_model_profile(CLI::App& model, CommandSlot& slot)
{
    auto f = std::make_shared<ModelCutFlags>();
    auto* cmd = model.add_subcommand("profile", "where a model's time goes: its regions (as extract cuts them), each "
                                                "timed alone on the GPU, the model eager and under torch.compile, "
                                                "torch.profiler's operators; estimates without a GPU");
    add_cut_flags(cmd, *f, false);
    cmd->callback([f, &slot] { slot = [f] { return run_model_profile(cut_options(*f)); }; });
}

void add_model_extract(CLI::App& model, CommandSlot& slot)
{
    auto f = std::make_shared<ModelCutFlags>();
    auto* cmd = model.add_subcommand("extract", "cut a model into regions (a library op with its epilogue, a norm, a "
                                                "chain of pointwise and reduction ops), one KernelBench-form problem "
                                                "per unique region in DIR/regions/, ranked by time");
    add_cut_flags(cmd, *f, true);
    cmd->callback([f, &slot] { slot = [f] { return run_model_extract(cut_options(*f)); }; });
}

void add_model_optimize(CLI::App& model, CommandSlot& slot)
{
    struct Flags {
        ModelCutFlags cut;
        SuiteRunOptions suite;
    };
    auto f = std::make_shared<Flags>();
    auto* cmd = model.add_subcommand("optimize", "extract, then a suite over the regions (every `suite run` flag), "
                                                 "then assemble MODEL_kforge.py and report; run it again to resume");
    cmd->footer("The suite is DIR/suite: `kforge suite report DIR/suite` shows it as any suite. --model replay:DIR/ "
                "gives each region problem DIR/<region id>.jsonl.");
    add_cut_flags(cmd, f->cut, true);
    add_suite_run_options(cmd, f->suite);
    cmd->callback([f, &slot] {
        slot = [f] {
            ModelCutOptions cut = cut_options(f->cut);
            ModelAssembleOptions assemble{cut.folder, cut.device, cut.time_limit_s};
            return run_model_optimize(cut, suite_run_request(f->suite), assemble);
        };
    });
}

void add_model_assemble(CLI::App& model, CommandSlot& slot)
{
    auto o = std::make_shared<ModelAssembleOptions>();
    auto* cmd = model.add_subcommand("assemble", "export each region whose best beat torch eager and torch.compile, "
                                                 "write DIR/MODEL_kforge.py, check it against the model and time it");
    cmd->add_option("DIR", o->folder, "the model folder")->required();
    cmd->add_option("--device", o->device, "where the assembled model is checked: auto, cuda, cpu (cpu checks the "
                                           "wiring with the regions' own operators)")
        ->check(CLI::IsMember({"auto", "cuda", "cpu"}))
        ->capture_default_str();
    cmd->callback([o, &slot] { slot = [o] { return run_model_assemble(*o); }; });
}

void add_model_report(CLI::App& model, CommandSlot& slot)
{
    auto o = std::make_shared<ModelReportOptions>();
    auto* cmd = model.add_subcommand("report", "the model's time by region before and after, each region's search, the "
                                               "end-to-end times and the share kforge did not cover");
    cmd->add_option("DIR", o->folder, "the model folder")->required();
    cmd->add_flag("--json", o->json, "one JSON document");
    cmd->add_option("-o,--output", o->output, "write a self-contained HTML page");
    cmd->callback([o, &slot] { slot = [o] { return run_model_report(*o); }; });
}

} // namespace

void add_model_command(CLI::App& app, CommandSlot& slot)
{
    auto* model = app.add_subcommand("model", "a whole model: profile it, cut it into regions, optimize them as a "
                                              "suite, put the winning kernels back (docs/model.md)");
    model->require_subcommand(1);
    add_model_profile(*model, slot);
    add_model_extract(*model, slot);
    add_model_optimize(*model, slot);
    add_model_assemble(*model, slot);
    add_model_report(*model, slot);
}

} // namespace kforge
