// The one-node SLURM cluster of the [slurm] tests; see slurm_cluster.hpp.
//
// Start-up order follows the daemons' needs: munged first (every RPC carries a munge
// credential), then slurmctld, then slurmd, which registers with it; the node is usable once
// sinfo calls it idle. The daemons run in the foreground (-F / -D) as children of the test
// process, so their pids are known exactly and nothing is found by name. Stopping runs the other
// way round after the cluster's jobs are cancelled and gone.
#include "slurm_cluster.hpp"

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "kf_catch.hpp"
#include "util/text.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace kforge::test {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr const char* k_cluster_mark = "KFORGE_SLURM_CLUSTER";

// `name` on the PATH or in the sbin folders a non-login PATH often lacks; empty when absent.
fs::path find_program(const std::string& name)
{
    const char* path = std::getenv("PATH");
    std::vector<std::string> dirs = split(path ? path : "", ':');
    for (const char* extra : {"/usr/sbin", "/usr/bin", "/sbin", "/usr/local/sbin", "/usr/local/bin"})
        dirs.emplace_back(extra);
    for (const auto& dir : dirs) {
        if (dir.empty())
            continue;
        fs::path candidate = fs::path(dir) / name;
        if (::access(candidate.c_str(), X_OK) == 0)
            return candidate;
    }
    return {};
}

std::string short_host_name()
{
    char name[256] = {};
    ::gethostname(name, sizeof name - 1);
    std::string host = name;
    return host.substr(0, host.find('.'));
}

// Two ports of 127.0.0.1 nobody listens on now: bound to port 0 together (so they differ), read,
// released. The daemons bind them a moment later.
std::vector<int> free_ports(int count)
{
    std::vector<int> sockets, ports;
    for (int i = 0; i < count; ++i) {
        int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t length = sizeof address;
        if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0)
            throw std::runtime_error("cannot find a free port of 127.0.0.1 for the SLURM cluster");
        sockets.push_back(fd);
        ports.push_back(ntohs(address.sin_port));
    }
    for (int fd : sockets)
        ::close(fd);
    return ports;
}

std::string tail_lines(const std::string& text, size_t lines)
{
    size_t at = text.size();
    for (size_t n = 0; n <= lines && at > 0; ++n)
        at = text.rfind('\n', at - 1);
    return at == std::string::npos || at == 0 ? text : text.substr(at + 1);
}

// A daemon started by this process in the foreground, its output in a log file.
struct Daemon {
    std::string name;
    fs::path log;
    pid_t pid = -1;

    // fork and exec, so the child can ask for SIGTERM when the test process dies (posix_spawn
    // cannot). Everything the child touches is prepared before the fork.
    void start(const fs::path& program, const std::vector<std::string>& args, const std::vector<std::string>& env)
    {
        std::vector<std::string> argv_storage{program.string()};
        argv_storage.insert(argv_storage.end(), args.begin(), args.end());
        std::vector<char*> argv;
        for (auto& arg : argv_storage)
            argv.push_back(arg.data());
        argv.push_back(nullptr);
        std::vector<std::string> env_storage;
        for (char** entry = environ; *entry; ++entry)
            env_storage.emplace_back(*entry);
        env_storage.insert(env_storage.end(), env.begin(), env.end());
        std::vector<char*> envp;
        for (auto& entry : env_storage)
            envp.push_back(entry.data());
        envp.push_back(nullptr);
        int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (out < 0 || null < 0)
            throw std::runtime_error("cannot open " + log.string());
        pid_t parent = ::getpid();
        pid = ::fork();
        if (pid == 0) {
            ::prctl(PR_SET_PDEATHSIG, SIGTERM);
            if (::getppid() != parent)
                ::_exit(127);
            ::setsid(); // a terminal's Ctrl-C is the test runner's, not the daemons'
            ::dup2(null, 0);
            ::dup2(out, 1);
            ::dup2(out, 2);
            ::execve(argv[0], argv.data(), envp.data());
            ::_exit(127);
        }
        ::close(out);
        ::close(null);
        if (pid < 0)
            throw std::runtime_error("cannot start " + name);
    }

    bool running()
    {
        if (pid <= 0)
            return false;
        if (::waitpid(pid, nullptr, WNOHANG) == 0)
            return true;
        pid = -1;
        return false;
    }

    // SIGTERM, up to `grace` to go, then SIGKILL.
    void stop(std::chrono::milliseconds grace)
    {
        if (!running())
            return;
        ::kill(pid, SIGTERM);
        for (auto until = Clock::now() + grace; Clock::now() < until;) {
            if (!running())
                return;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        pid = -1;
    }
};

std::string field(const std::string& line, const std::string& key)
{
    std::string needle = key + "=";
    for (size_t at = line.find(needle); at != std::string::npos; at = line.find(needle, at + 1)) {
        if (at != 0 && line[at - 1] != ' ')
            continue;
        size_t begin = at + needle.size();
        return line.substr(begin, line.find(' ', begin) - begin);
    }
    return "";
}

long to_long(const std::string& text, long fallback)
{
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
        return fallback;
    return std::stol(text);
}

std::vector<std::string> process_words(int pid, const char* file)
{
    return split(slurp_file(fs::path("/proc") / std::to_string(pid) / file), '\0');
}

std::vector<int> all_pids()
{
    std::vector<int> pids;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/proc", ec)) {
        std::string name = entry.path().filename().string();
        if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos)
            pids.push_back(std::stoi(name));
    }
    return pids;
}

} // namespace

std::string slurm_unavailable_reason()
{
    std::vector<std::string> missing;
    for (const char* program : {"munged", "slurmctld", "slurmd", "srun", "sbatch", "squeue", "sinfo", "scontrol", "scancel"})
        if (find_program(program).empty())
            missing.emplace_back(program);
    if (!missing.empty())
        return fmt::format("{} not found (Debian: apt-get install slurmctld slurmd slurm-client munge; ./kf installs "
                           "them)",
                           fmt::join(missing, ", "));
    if (::geteuid() != 0)
        return "the one-node cluster runs slurmd, which starts job steps as their user, so the tests must run as root";
    if (std::string why = mpi_unavailable_reason(); !why.empty())
        return "srun --mpi=pmix starts MPI ranks: " + why;
    return "";
}

struct SlurmCluster::Impl {
    SlurmClusterOptions options;
    TempDir dir;
    std::string node = short_host_name();
    Daemon munged{"munged", {}}, slurmctld{"slurmctld", {}}, slurmd{"slurmd", {}};

    fs::path path(const std::string& name) const { return dir / name; }
    std::string mark() const { return std::string(k_cluster_mark) + "=" + dir.path().string(); }

    void write_munge_key();
    void make_gpu_devices();
    void write_config(int controller_port, int node_port);
    void wait_until_idle(const SlurmCluster& cluster);
    void end_jobs(const SlurmCluster& cluster);
    void kill_leftovers();
};

void SlurmCluster::Impl::write_munge_key()
{
    std::random_device device;
    std::string key;
    for (int i = 0; i < 1024; ++i)
        key.push_back(static_cast<char>(device() & 0xff));
    fs::path file = path("munge/munge.key");
    write_text(file, key);
    fs::permissions(file, fs::perms::owner_read, fs::perm_options::replace);
}

// Character devices (major 1, minor 3: what /dev/null is) named like GPUs: slurmd accepts only
// device files in gres.conf, and with them it sets CUDA_VISIBLE_DEVICES for each job's share.
void SlurmCluster::Impl::make_gpu_devices()
{
    fs::create_directories(path("dev"));
    for (int i = 0; i < options.gpus; ++i) {
        fs::path device = path(fmt::format("dev/nvidia{}", i));
        if (::mknod(device.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0)
            throw std::runtime_error("cannot create the device file " + device.string() + " for the simulated GPUs");
    }
}

void SlurmCluster::Impl::write_config(int controller_port, int node_port)
{
    std::string folder = dir.path().string();
    std::string conf = fmt::format(R"(# A one-node cluster for kforge's tests (tests/slurm_cluster.hpp).
ClusterName=kforgetest
SlurmctldHost={node}(127.0.0.1)
SlurmctldPort={controller_port}
SlurmdPort={node_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={folder}/munge/munge.sock
StateSaveLocation={folder}/state
SlurmdSpoolDir={folder}/spool
SlurmctldPidFile={folder}/slurmctld.pid
SlurmdPidFile={folder}/slurmd.pid
SlurmctldLogFile={folder}/log/slurmctld.log
SlurmdLogFile={folder}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
SlurmdParameters=config_overrides
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MailProg=/bin/true
KillWait={kill_wait}
MinJobAge=600
InactiveLimit=0
NodeName={node} NodeAddr=127.0.0.1 CPUs={cpus} Gres=gpu:{gpus} State=UNKNOWN
PartitionName=kforge Nodes={node} Default=YES MaxTime=INFINITE State=UP
)",
                                   fmt::arg("node", node), fmt::arg("controller_port", controller_port),
                                   fmt::arg("node_port", node_port), fmt::arg("folder", folder),
                                   fmt::arg("kill_wait", options.kill_wait_s), fmt::arg("cpus", options.cpus),
                                   fmt::arg("gpus", options.gpus));
    write_text(path("slurm.conf"), conf);
    write_text(path("gres.conf"),
               fmt::format("NodeName={} Name=gpu File={}/dev/nvidia[0-{}]\n", node, folder, options.gpus - 1));
}

void SlurmCluster::Impl::wait_until_idle(const SlurmCluster& cluster)
{
    std::string last;
    for (auto until = Clock::now() + std::chrono::seconds(60); Clock::now() < until;) {
        for (Daemon* daemon : {&munged, &slurmctld, &slurmd})
            if (!daemon->running())
                throw std::runtime_error(fmt::format("{} of the test's SLURM cluster ended at start-up:\n{}", daemon->name,
                                                     cluster.log_tails()));
        CommandResult state = cluster.run("sinfo", {"-h", "-N", "-o", "%T"});
        last = trim(state.out + state.err);
        if (state.exit_code == 0 && last == "idle")
            return;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    throw std::runtime_error(fmt::format("the test's SLURM node is not idle after 60 s (sinfo: '{}'):\n{}", last,
                                         cluster.log_tails()));
}

// Cancels every job of the cluster and waits until the queue is empty (KillWait and a margin).
void SlurmCluster::Impl::end_jobs(const SlurmCluster& cluster)
{
    if (!slurmctld.running())
        return;
    auto until = Clock::now() + std::chrono::seconds(options.kill_wait_s + 15);
    bool cancelled = false;
    while (Clock::now() < until) {
        CommandResult queue = cluster.run("squeue", {"-h", "-o", "%A"});
        std::vector<std::string> ids;
        for (const auto& line : split(queue.out, '\n'))
            if (!trim(line).empty())
                ids.push_back(trim(line));
        if (queue.exit_code != 0 || ids.empty())
            return;
        if (!cancelled) {
            cluster.run("scancel", ids);
            cancelled = true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
}

// What still carries the cluster's mark: slurmstepd and the tasks of a step that did not end.
void SlurmCluster::Impl::kill_leftovers()
{
    std::string mark_entry = mark();
    for (int pid : all_pids()) {
        if (pid == ::getpid())
            continue;
        auto entries = process_words(pid, "environ");
        if (std::find(entries.begin(), entries.end(), mark_entry) != entries.end())
            ::kill(pid, SIGKILL);
    }
}

SlurmCluster::SlurmCluster(SlurmClusterOptions options) : m_impl(std::make_unique<Impl>())
{
    Impl& c = *m_impl;
    c.options = options;
    // munged wants every folder above its socket searchable by everyone.
    fs::permissions(c.dir.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                      fs::perms::others_read | fs::perms::others_exec);
    for (const char* sub : {"munge", "state", "spool", "log"})
        fs::create_directories(c.path(sub));
    c.write_munge_key();
    c.make_gpu_devices();
    std::vector<int> ports = free_ports(2);
    c.write_config(ports[0], ports[1]);

    std::vector<std::string> daemon_env{c.mark(), "SLURM_CONF=" + conf().string()};
    c.munged.log = c.path("log/munged.out");
    c.munged.start(find_program("munged"),
                   {"-F", "--socket=" + c.path("munge/munge.sock").string(),
                    "--key-file=" + c.path("munge/munge.key").string(), "--pid-file=" + c.path("munge/munged.pid").string(),
                    "--seed-file=" + c.path("munge/munged.seed").string(), "--log-file=" + c.path("log/munged.log").string()},
                   daemon_env);
    for (auto until = Clock::now() + std::chrono::seconds(20); !fs::exists(c.path("munge/munge.sock"));) {
        if (!c.munged.running() || Clock::now() > until)
            throw std::runtime_error("munged did not start for the test's SLURM cluster:\n" + log_tails());
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    c.slurmctld.log = c.path("log/slurmctld.out");
    c.slurmctld.start(find_program("slurmctld"), {"-D", "-i", "-f", conf().string()}, daemon_env);
    c.slurmd.log = c.path("log/slurmd.out");
    c.slurmd.start(find_program("slurmd"), {"-D", "-N", c.node, "-f", conf().string()}, daemon_env);
    try {
        c.wait_until_idle(*this);
    } catch (...) {
        for (Daemon* daemon : {&c.slurmd, &c.slurmctld, &c.munged})
            daemon->stop(std::chrono::seconds(5));
        c.kill_leftovers();
        throw;
    }
}

SlurmCluster::~SlurmCluster()
{
    Impl& c = *m_impl;
    c.end_jobs(*this);
    for (Daemon* daemon : {&c.slurmd, &c.slurmctld, &c.munged})
        daemon->stop(std::chrono::seconds(5));
    c.kill_leftovers();
}

const fs::path& SlurmCluster::folder() const { return m_impl->dir.path(); }
fs::path SlurmCluster::conf() const { return m_impl->path("slurm.conf"); }

std::vector<std::string> SlurmCluster::env() const { return {"SLURM_CONF=" + conf().string(), m_impl->mark()}; }

fs::path SlurmCluster::client(const std::string& name)
{
    fs::path program = find_program(name);
    if (program.empty())
        throw std::runtime_error(name + " is not installed");
    return program;
}

CommandResult SlurmCluster::run(const std::string& client_name, const std::vector<std::string>& args,
                                const std::vector<std::string>& extra_env) const
{
    std::vector<std::string> environment = env();
    environment.insert(environment.end(), extra_env.begin(), extra_env.end());
    return run_program(client(client_name), args, environment);
}

std::unique_ptr<RunningProgram> SlurmCluster::start(const std::string& client_name, const std::vector<std::string>& args,
                                                    const std::vector<std::string>& extra_env) const
{
    std::vector<std::string> environment = env();
    environment.insert(environment.end(), extra_env.begin(), extra_env.end());
    return std::make_unique<RunningProgram>(client(client_name), args, environment);
}

long SlurmCluster::submit(const std::vector<std::string>& args, const std::vector<std::string>& extra_env) const
{
    std::vector<std::string> all{"--parsable"};
    all.insert(all.end(), args.begin(), args.end());
    CommandResult result = run("sbatch", all, extra_env);
    INFO("sbatch " << join(all, " ") << "\n" << result.out << result.err);
    REQUIRE(result.exit_code == 0);
    long id = to_long(trim(split(trim(result.out), ';').front()), 0);
    REQUIRE(id > 0);
    return id;
}

std::vector<SlurmJob> SlurmCluster::jobs(long id) const
{
    CommandResult result = run("scontrol", {"show", "job", "-o", std::to_string(id)});
    std::vector<SlurmJob> jobs;
    for (const auto& line : split(result.out, '\n')) {
        if (line.find("JobId=") == std::string::npos)
            continue;
        SlurmJob job;
        job.id = to_long(field(line, "JobId"), 0);
        job.array_job_id = to_long(field(line, "ArrayJobId"), 0);
        job.array_task_id = static_cast<int>(to_long(field(line, "ArrayTaskId"), -1));
        job.state = field(line, "JobState");
        job.reason = field(line, "Reason");
        job.exit_code = field(line, "ExitCode");
        jobs.push_back(job);
    }
    return jobs;
}

bool SlurmCluster::wait_until_ended(long id, int seconds) const
{
    for (auto until = Clock::now() + std::chrono::seconds(seconds);;) {
        std::vector<SlurmJob> known = jobs(id);
        bool active = known.empty(); // not listed yet counts as not ended
        for (const auto& job : known)
            active = active || job.state == "PENDING" || job.state == "RUNNING" || job.state == "COMPLETING" ||
                     job.state == "CONFIGURING" || job.state == "REQUEUED" || job.state == "SUSPENDED";
        if (!active)
            return true;
        if (Clock::now() >= until)
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
}

int SlurmCluster::task_process(long job_id, const std::string& entry, const std::string& word) const
{
    std::string binary = kforge_binary().filename().string();
    std::string mark_entry = m_impl->mark();
    for (int pid : all_pids()) {
        auto args = process_words(pid, "cmdline");
        if (args.empty() || fs::path(args.front()).filename() != binary ||
            std::find(args.begin(), args.end(), word) == args.end())
            continue;
        auto entries = process_words(pid, "environ");
        auto has = [&](const std::string& wanted) { return std::find(entries.begin(), entries.end(), wanted) != entries.end(); };
        if (has(mark_entry) && has(fmt::format("SLURM_JOB_ID={}", job_id)) && has(entry))
            return pid;
    }
    return -1;
}

std::string SlurmCluster::log_tails() const
{
    std::string text;
    for (const char* name : {"log/munged.out", "log/slurmctld.out", "log/slurmd.out", "log/slurmctld.log", "log/slurmd.log"}) {
        std::string content = slurp_file(m_impl->path(name));
        if (!content.empty())
            text += fmt::format("--- {}\n{}\n", name, tail_lines(content, 25));
    }
    return text;
}

} // namespace kforge::test
