// `kforge model optimize` end to end through the real binary on simulated GPUs: a model file cut
// into regions, the regions imported and searched as a suite with recorded replies, the winners
// exported and put back into MODEL_kforge.py, the assembled model checked against the original
// (without a GPU: the replaced regions' own operators through the assembled wiring), and the report.
#include "kf_catch.hpp"

#include <set>

#include "test_support.hpp"
#include "util/json_reader.hpp"
#include "util/text.hpp"

using namespace kforge;
using namespace kforge::test;

namespace fs = std::filesystem;

namespace {

Json model_json(const fs::path& path)
{
    return parse_json_text(read_file(path), path.string());
}

} // namespace

TEST_CASE("model optimize cuts a model, searches its regions as a suite and puts the winners back",
          "[torch][model][e2e][extended]")
{
    TempDir dir;
    fs::path folder = dir / "mlp";
    fs::path replies = fixtures_dir() / "model" / "replies";
    CommandResult run = run_kforge({"model", "optimize", (fixtures_dir() / "model" / "mlp_stack.py").string(), "-o",
                                    folder.string(), "--device", "cpu", "--model", "replay:" + replies.string() + "/",
                                    "--no-knowledge", "--progress", "lines", "--min-share", "5%"},
                                   {"KFORGE_SIMULATE_GPUS=1"});
    INFO(run.out << run.err);
    REQUIRE((run.exit_code == 0 || run.exit_code == 1));

    // extract: the three GEMM + ReLU layers are worth a search, the norm (one kernel, 2.4% as eager runs
    // it) and the head (GEMM and sigmoid, 4.5%) are under --min-share 5%
    Json doc = model_json(folder / "model.json");
    std::set<std::string> written;
    for (const auto& r : doc["regions"])
        if (r.contains("problem"))
            written.insert(r["id"].get<std::string>());
    CHECK(written == std::set<std::string>{"mlp_stack_r00_gemm_relu", "mlp_stack_r01_gemm_relu",
                                           "mlp_stack_r02_gemm_relu"});
    CHECK(doc["size_symbols"] == Json{{"batch_size", 512}});

    // the suite ran every written region with its recorded replies
    Json suite = parse_json_text(run_kforge({"suite", "report", (folder / "suite").string(), "--json"}).out,
                                 "suite report");
    REQUIRE(suite["problems"].size() == 3);
    for (const auto& p : suite["problems"])
        CHECK(p["state"] == "finished");

    // assemble decided from the suite's own rows and says why for every region
    Json winners = model_json(folder / "winners.json");
    REQUIRE(winners["considered"].size() == 3);
    std::set<std::string> replaced;
    for (const auto& c : winners["considered"]) {
        std::string outcome = c["outcome"].get<std::string>();
        if (outcome == "replaced") {
            replaced.insert(c["problem"].get<std::string>());
            CHECK(c["speedup_eager"].get<double>() > 1.0);
            CHECK(c["speedup_compile"].get<double>() > 1.0);
            CHECK(fs::exists(folder / "kernels" / (c["problem"].get<std::string>() + "_load.py")));
        } else {
            CHECK(!outcome.empty());
        }
    }
    CHECK(winners["winners"].size() == replaced.size());

    // the assembled model: the user's class, the replaced regions wired in, equal to the original
    REQUIRE(fs::exists(folder / "mlp_stack_kforge.py"));
    CHECK_THAT(read_file(folder / "mlp_stack_kforge.py"), Catch::Contains("class Model(_ORIGINAL.Model)"));
    Json assembled = model_json(folder / "assembled.json");
    CHECK(assembled["mode"] == "reference");
    CHECK(assembled["matches"] == true);
    std::set<std::string> wired;
    for (const auto& p : assembled["replaced"])
        wired.insert(p.get<std::string>());
    CHECK(wired == replaced);

    // the report: every region, the shares, and the JSON form for tools
    CommandResult report = run_kforge({"model", "report", folder.string()});
    REQUIRE(report.exit_code == 0);
    for (const auto& id : written)
        CHECK_THAT(report.out, Catch::Contains(id));
    CHECK_THAT(report.out, Catch::Contains("time in replaced regions"));
    Json as_json = parse_json_text(run_kforge({"model", "report", folder.string(), "--json"}).out, "model report");
    CHECK(as_json["regions"].size() == 5);
    double replaced_share = 0;
    for (const auto& r : as_json["regions"])
        if (r["outcome"] == "replaced")
            replaced_share += r["share"].get<double>();
    CHECK(as_json["share_replaced"].get<double>() == Approx(replaced_share));
    CHECK((replaced.empty() || replaced_share > 0));
    CommandResult page = run_kforge({"model", "report", folder.string(), "-o", (dir / "m.html").string()});
    REQUIRE(page.exit_code == 0);
    CHECK_THAT(read_file(dir / "m.html"), Catch::Contains("<h2>Regions</h2>"));
}

TEST_CASE("model commands refuse what they cannot use, naming it, before anything runs", "[torch][model]")
{
    TempDir dir;
    CommandResult missing = run_kforge({"model", "extract", (dir / "nope.py").string(), "-o", (dir / "m").string()});
    CHECK(missing.exit_code == 3);
    CHECK_THAT(missing.err, Catch::Contains("nope.py: no such file"));

    CommandResult share = run_kforge({"model", "extract", (fixtures_dir() / "model" / "mlp_stack.py").string(), "-o",
                                      (dir / "m").string(), "--min-share", "150%"});
    CHECK(share.exit_code == 2);
    CHECK_THAT(share.err, Catch::Contains("--min-share '150%'"));

    CommandResult model = run_kforge({"model", "optimize", (fixtures_dir() / "model" / "mlp_stack.py").string(), "-o",
                                      (dir / "m").string(), "--model", "replay:" + (dir / "none").string()});
    CHECK(model.exit_code == 2);
    CHECK_THAT(model.err, Catch::Contains("no such file or folder"));
    CHECK(!fs::exists(dir / "m" / "model.json")); // refused before the model was captured

    CommandResult bare = run_kforge({"model", "assemble", (dir / "m").string()});
    CHECK(bare.exit_code == 3);
    CHECK_THAT(bare.err, Catch::Contains("no model.json"));

    fs::path broken = dir / "broken.py";
    write_file_atomic(broken, "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
                              "        raise ValueError('the model is broken')\n"
                              "def get_inputs():\n    return [torch.randn(4, 4)]\n"
                              "def get_init_inputs():\n    return []\n");
    CommandResult failed = run_kforge({"model", "extract", broken.string(), "-o", (dir / "b").string()});
    CHECK(failed.exit_code == 3);
    CHECK_THAT(failed.err, Catch::Contains("the model is broken"));
}

TEST_CASE("a model folder holds one model: another model, other sizes or selection is refused unless --force",
          "[torch][model]")
{
    TempDir dir;
    fs::path folder = dir / "m";
    std::string mlp = (fixtures_dir() / "model" / "mlp_stack.py").string();
    fs::path other = dir / "other.py";
    fs::copy_file(mlp, other);
    CommandResult first = run_kforge({"model", "extract", mlp, "-o", folder.string(), "--device", "cpu"});
    REQUIRE(first.exit_code == 0);
    REQUIRE(fs::exists(folder / "folder.json"));
    fs::path marker = folder / "mine.txt"; // not kforge's: --force must leave it
    write_file_atomic(marker, "the user's own file\n");

    CommandResult again = run_kforge({"model", "extract", mlp, "-o", folder.string(), "--device", "cpu"});
    CHECK(again.exit_code == 0); // the same model, sizes and selection: the folder is its own

    CommandResult another = run_kforge({"model", "optimize", other.string(), "-o", folder.string(), "--device", "cpu"});
    CHECK(another.exit_code == 3);
    CHECK_THAT(another.err, Catch::Contains("holds another extraction") && Catch::Contains("other.py"));
    CommandResult sizes = run_kforge({"model", "extract", mlp, "-o", folder.string(), "--device", "cpu", "--sizes",
                                      "batch_size=64"});
    CHECK(sizes.exit_code == 3);
    CHECK_THAT(sizes.err, Catch::Contains("--sizes (none, not batch_size=64)"));
    CommandResult top = run_kforge({"model", "extract", mlp, "-o", folder.string(), "--device", "cpu", "--top", "1"});
    CHECK(top.exit_code == 3);
    CHECK_THAT(top.err, Catch::Contains("--top none"));
    CHECK(parse_json_text(read_file(folder / "model.json"), "model.json")["size_symbols"]["batch_size"] == 512);

    CommandResult forced = run_kforge({"model", "extract", mlp, "-o", folder.string(), "--device", "cpu", "--sizes",
                                       "batch_size=64", "--force"});
    REQUIRE(forced.exit_code == 0);
    CHECK(parse_json_text(read_file(folder / "model.json"), "model.json")["size_symbols"]["batch_size"] == 64);
    CHECK(fs::exists(marker));

    CommandResult zero = run_kforge({"model", "extract", mlp, "-o", (dir / "z").string(), "--device", "cpu", "--sizes",
                                     "batch_size=0"});
    CHECK(zero.exit_code == 3);
    CHECK_THAT(zero.err, Catch::Contains("batch_size = 0"));
    CommandResult file = run_kforge({"model", "extract", mlp, "-o", marker.string(), "--device", "cpu"});
    CHECK(file.exit_code == 2);
    CHECK_THAT(file.err, Catch::Contains("is a file, not a folder"));
}

TEST_CASE("what a model prints on stdout never stands in for the PyTorch side's result", "[torch][model]")
{
    TempDir dir;
    fs::path forger = dir / "forger.py";
    write_file_atomic(forger, "import os, torch\n"
                              "os.write(1, b'{\"regions\": 5, \"model\": 7}\\n')\n"
                              "batch_size = 16\n"
                              "class Model(torch.nn.Module):\n"
                              "    def __init__(self):\n        super().__init__()\n"
                              "        self.proj = torch.nn.Linear(32, 32)\n"
                              "    def forward(self, x):\n"
                              "        os.write(1, b'{\"error\": \"forged\"}\\n')\n"
                              "        return self.proj(x).relu()\n"
                              "def get_inputs():\n    return [torch.randn(batch_size, 32)]\n"
                              "def get_init_inputs():\n    return []\n");
    CommandResult run = run_kforge({"model", "extract", forger.string(), "-o", (dir / "f").string(), "--device", "cpu",
                                    "--min-share", "0"});
    INFO(run.out << run.err);
    CHECK(run.exit_code == 0);
    Json doc = parse_json_text(read_file(dir / "f" / "model.json"), "model.json");
    CHECK(doc["regions"].is_array());
    CHECK(!doc["regions"].empty());
}

TEST_CASE("model report refuses a damaged document naming the file and the field", "[model]")
{
    TempDir dir;
    fs::path folder = dir / "m";
    fs::create_directories(folder);
    Json model = {{"model", "/somewhere/net.py"},
                  {"measured", false},
                  {"regions", Json::array({{{"id", "net_r00_gemm"}, {"count", 1}, {"share", 1.0}}})}};
    write_file_atomic(folder / "model.json", model.dump());
    CommandResult fine = run_kforge({"model", "report", folder.string()});
    CHECK(fine.exit_code == 0);

    struct Damage {
        const char* file;
        std::string text;
        const char* says;
    };
    Json bad_count = model;
    bad_count["regions"][0]["count"] = "twelve";
    Json no_regions = model;
    no_regions.erase("regions");
    Damage damages[] = {
        {"model.json", bad_count.dump(), "model.json: regions[0].count must be a number, got a string"},
        {"model.json", no_regions.dump(), "model.json: regions is missing"},
        {"model.json", "{\"model\": ", "model.json: not JSON"},
        {"winners.json", R"({"winners": [{"problem": 3, "loader": "k.py"}]})",
         "winners.json: winners[0].problem must be a string, got a number"},
        {"winners.json", R"({"winners": {}})", "winners.json: winners must be a list"},
        {"assembled.json", R"({"matches": "yes"})", "assembled.json: matches must be true or false, got a string"},
        {"assembled.json", R"({"times": {"eager": "fast"}})", "assembled.json: times.eager must be a number"},
        {"assembled.json", R"({"under_compile": {"kept": [1]}})", "assembled.json: under_compile.kept[0] must be a string"},
    };
    for (const auto& d : damages) {
        write_file_atomic(folder / "model.json", model.dump());
        fs::remove(folder / "winners.json");
        fs::remove(folder / "assembled.json");
        write_file_atomic(folder / d.file, d.text);
        for (const char* json : {"", "--json"}) {
            std::vector<std::string> args{"model", "report", folder.string()};
            if (*json)
                args.push_back(json);
            CommandResult r = run_kforge(args);
            INFO(d.file << ": " << d.text << "\n" << r.err);
            CHECK(r.exit_code == 3);
            CHECK_THAT(r.err, Catch::Contains(d.says));
        }
    }
    fs::remove(folder / "assembled.json");
    write_file_atomic(folder / "model.json", model.dump());
    CommandResult page = run_kforge({"model", "report", folder.string(), "-o", (dir / "new" / "dir" / "p.html").string()});
    CHECK(page.exit_code == 0);
    CHECK(fs::exists(dir / "new" / "dir" / "p.html"));
}
