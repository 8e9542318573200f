// `kforge task import` of programs that misbehave: they start daemons, hang, exit from under the
// importer, hold NUL bytes, or are not files at all. Each gets a clear message, the documented exit
// code and an end within its time limit, and leaves no process behind.
#include "kf_catch.hpp"

#include <csignal>
#include <thread>

#include "test_support.hpp"
#include "util/text.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

namespace fs = std::filesystem;

// A valid KernelBench-form program with `extra` run at the top level (after the sizes) and
// `inputs_body` as the body of get_inputs().
std::string program(const std::string& extra, const std::string& inputs_body = "    return [torch.randn(rows, 8)]\n")
{
    return "import os, subprocess, sys, time\n"
           "import torch\n"
           "rows = 64\n" +
           extra +
           "class Model(torch.nn.Module):\n"
           "    def forward(self, x):\n"
           "        return x * 2\n"
           "def get_inputs():\n" +
           inputs_body +
           "def get_init_inputs():\n"
           "    return []\n";
}

// Top-level code that starts a daemon (a new session: it leaves the process group) and notes its pid.
std::string daemon_starter(const fs::path& pids)
{
    return "_d = subprocess.Popen(['sleep', '600'], start_new_session=True)\n"
           "with open('" +
           pids.string() + "', 'a') as _f:\n"
           "    _f.write(f'{_d.pid}\\n')\n";
}

std::vector<int> pids_in(const fs::path& file)
{
    std::vector<int> out;
    for (const auto& line : split(read_file(file), '\n'))
        if (!trim(line).empty())
            out.push_back(std::stoi(line));
    return out;
}

void check_all_gone(const fs::path& pids)
{
    std::vector<int> started = pids_in(pids);
    REQUIRE_FALSE(started.empty());
    for (int pid : started) {
        INFO("pid " << pid << " started by the program");
        CHECK(wait_process_gone(pid, std::chrono::seconds(60)));
    }
}

double seconds_since(std::chrono::steady_clock::time_point begin)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
}

} // namespace

TEST_CASE("a program that starts daemons imports, and its daemons end with the import", "[torch][import][e2e]")
{
    TempDir dir;
    write_text(dir / "daemons.py", program(daemon_starter(dir / "pids.txt")));
    auto begin = std::chrono::steady_clock::now();
    CommandResult run = run_kforge({"task", "import", (dir / "daemons.py").string(), "-o", (dir / "d.json").string()});
    INFO(run.err);
    CHECK(run.exit_code == 0);
    CHECK(seconds_since(begin) < 300); // each daemon sleeps 600 s: the import never waited for one
    check_all_gone(dir / "pids.txt");
}

TEST_CASE("an import that hangs after starting a daemon ends at its --time-limit, its daemon with it",
          "[torch][import][e2e][extended]")
{
    TempDir dir;
    write_text(dir / "hangs.py", program(daemon_starter(dir / "pids.txt"), "    time.sleep(3600)\n"));
    auto begin = std::chrono::steady_clock::now();
    // 30 s: the program must reach its daemon first, and importing torch 2.x takes seconds (over ten
    // on a loaded machine).
    CommandResult run = run_kforge({"task", "import", (dir / "hangs.py").string(), "-o", (dir / "h.json").string(),
                                    "--time-limit", "30"});
    INFO(run.err);
    CHECK(run.exit_code == 3);
    CHECK_THAT(run.err, Catch::Contains("did not finish importing within its 30 s limit"));
    CHECK(seconds_since(begin) < 300); // ended at its limit, not with its daemon (600 s) or the hang
    check_all_gone(dir / "pids.txt");
    CHECK_FALSE(fs::exists(dir / "h.json"));
}

TEST_CASE("SIGTERM stops an import at once, daemons included", "[torch][import][e2e]")
{
    TempDir dir;
    write_text(dir / "hangs.py", program(daemon_starter(dir / "pids.txt"), "    time.sleep(3600)\n"));
    RunningProgram import(kforge_binary(), {"task", "import", (dir / "hangs.py").string(), "-o",
                                            (dir / "h.json").string(), "--time-limit", "600"});
    for (int i = 0; i < 2400 && !fs::exists(dir / "pids.txt"); ++i) // up to two minutes: torch's import
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    REQUIRE(fs::exists(dir / "pids.txt"));
    auto begin = std::chrono::steady_clock::now();
    ::kill(import.pid(), SIGTERM);
    std::optional<CommandResult> ended = import.wait_for(std::chrono::seconds(60));
    REQUIRE(ended);
    INFO(ended->err);
    CHECK(ended->exit_code == 130);
    CHECK_THAT(ended->err, Catch::Contains("stopped at your request"));
    CHECK(seconds_since(begin) < 60); // at once, not at its 600 s limit
    check_all_gone(dir / "pids.txt");
}

TEST_CASE("a program that ends the importer from under it, or holds a NUL byte, is bad input naming it",
          "[torch][import][e2e]")
{
    TempDir dir;
    for (const std::string& how : {std::string("os._exit(0)"), std::string("sys.exit(0)"), std::string("os.kill(os.getpid(), 9)")}) {
        write_text(dir / "quits.py", program("", "    " + how + "\n"));
        CommandResult run = run_kforge({"task", "import", (dir / "quits.py").string(), "-o", (dir / "q.json").string(),
                                        "--force"});
        INFO(how << "\n" << run.err);
        CHECK(run.exit_code == 3);
        CHECK_THAT(run.err, Catch::Contains("quits.py"));
        CHECK_THAT(run.err, !Catch::Contains("Traceback"));
    }
    std::string with_nul = program("");
    with_nul.insert(with_nul.find("rows"), std::string("x = 1\0\n", 7));
    write_text(dir / "nul.py", with_nul);
    CommandResult nul = run_kforge({"task", "import", (dir / "nul.py").string(), "-o", (dir / "n.json").string()});
    INFO(nul.err);
    CHECK(nul.exit_code == 3);
    CHECK_THAT(nul.err, Catch::Contains("nul.py") && Catch::Contains("NUL byte"));
    CHECK_THAT(nul.err, !Catch::Contains("Traceback"));
}

// A program that forks at import leaves a copy of the importer running its code in the child: that
// copy ends as soon as the program's code returns (it would print a second result and fork again
// at each of the importer's runs of the program).
TEST_CASE("a program that forks at import imports once, and its children are gone", "[torch][import][e2e]")
{
    TempDir dir;
    fs::path pids = dir / "pids.txt";
    write_text(dir / "forks.py", program("_child = os.fork()\nwith open('" + pids.string() +
                                         "', 'a') as _f:\n    _f.write(f'{os.getpid()}\\n')\n"));
    CommandResult run = run_kforge({"task", "import", (dir / "forks.py").string(), "-o", (dir / "f.json").string()});
    INFO(run.err);
    CHECK(run.exit_code == 0);
    CHECK(fs::exists(dir / "f.json"));
    check_all_gone(pids);
}

TEST_CASE("inputs on the meta device are refused naming the device", "[torch][import][e2e]")
{
    TempDir dir;
    write_text(dir / "meta.py", program("", "    return [torch.empty(rows, 8, device='meta')]\n"));
    CommandResult run = run_kforge({"task", "import", (dir / "meta.py").string(), "-o", (dir / "m.json").string()});
    INFO(run.err);
    CHECK(run.exit_code == 3);
    CHECK_THAT(run.err, Catch::Contains("a tensor on the meta device at position 0"));
    CHECK_THAT(run.err, !Catch::Contains("ended the importer"));
}

TEST_CASE("task import names what a path that is not a program file is", "[torch][import][e2e]")
{
    TempDir dir;
    fs::create_directories(dir / "folder.py");
    CommandResult folder = run_kforge({"task", "import", (dir / "folder.py").string()});
    CHECK(folder.exit_code == 3);
    CHECK_THAT(folder.err, Catch::Contains("folder.py: a folder, not a program file"));
    CommandResult device = run_kforge({"task", "import", "/dev/zero"});
    CHECK(device.exit_code == 3);
    CHECK_THAT(device.err, Catch::Contains("/dev/zero: not a regular file"));
    CommandResult missing = run_kforge({"task", "import", (dir / "absent.py").string()});
    CHECK(missing.exit_code == 3);
    CHECK_THAT(missing.err, Catch::Contains("absent.py: no such file"));
}
