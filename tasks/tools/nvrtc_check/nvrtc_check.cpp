// usage: nvrtc_check TASK.json... (VERBOSE=1 prints every ptxas report). Build: tasks/tools/README.md.
// Compiles every reference and seed of the given task specs with NVRTC (sm_90a, kforge-like options)
// at every param point, after kforge's own spec validation; reports registers/spills per kernel.
#include <nvrtc.h>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <regex>
#include "core/task.hpp"
#ifndef CHECK_DIR
#error "build with -DCHECK_DIR=\"<path of tasks/tools/nvrtc_check>\""
#endif
#include "core/plan.hpp"
#include "core/plan_check.hpp"
#include <map>
using namespace kforge;
static std::string slurp(const std::string& p){ std::ifstream f(p); std::stringstream s; s<<f.rdbuf(); return s.str(); }
int main(int argc, char** argv){
  std::string prelude = slurp(CHECK_DIR "/prelude.h"); int failures = 0, compiles = 0; bool verbose = getenv("VERBOSE") != nullptr;
  for (int a = 1; a < argc; ++a) {
    Task task = load_task(argv[a]);
    std::vector<const KernelFile*> files{&task.reference}; for (auto& s : task.seeds) files.push_back(&s);
    for (const KernelFile* kf : files) {
      auto points = enumerate_param_points(kf->plan, 1000);
      std::string worst;
      int max_regs = 0, max_spill = 0;
      for (const auto& point : points) {
        std::string src = prelude + "\n#line 1 \"" + kf->path.filename().string() + "\"\n" + kf->source;
        nvrtcProgram prog; nvrtcCreateProgram(&prog, src.c_str(), kf->path.filename().c_str(), 0, nullptr, nullptr);
        std::vector<std::string> opts = {"--gpu-architecture=sm_90a", "-default-device", "-lineinfo", "--ptxas-options=-v", "--std=c++17", "-I/usr/local/cuda/include"};
        for (auto& [k, v] : point) opts.push_back("-D" + k + "=" + std::to_string(v));
        std::vector<const char*> copts; for (auto& o : opts) copts.push_back(o.c_str());
        nvrtcResult res = nvrtcCompileProgram(prog, (int)copts.size(), copts.data()); ++compiles;
        size_t n; nvrtcGetProgramLogSize(prog, &n); std::string log(n, '\0'); nvrtcGetProgramLog(prog, log.data());
        if (res != NVRTC_SUCCESS) { ++failures; printf("FAIL %s %s\n%s\n", kf->path.c_str(), describe_param_point(point).c_str(), log.c_str()); }
        else {
          std::regex re_r("Used (\\d+) registers"), re_s("(\\d+) bytes spill stores");
          for (std::sregex_iterator it(log.begin(), log.end(), re_r), end; it != end; ++it) max_regs = std::max(max_regs, std::stoi((*it)[1]));
          for (std::sregex_iterator it(log.begin(), log.end(), re_s), end; it != end; ++it) { int s = std::stoi((*it)[1]); if (s > max_spill) { max_spill = s; worst = describe_param_point(point); } }
          // Per kernel: registers, static smem, spills; then every launch of the plan at every shape.
          std::map<std::string, std::pair<int,int>> res; std::string cur;
          std::istringstream ls(log); std::string line; std::regex re_f("Compiling entry function '([^']+)'"), re_u("Used (\\d+) registers.*?(?:, (\\d+) bytes smem)?");
          while (std::getline(ls, line)) { std::smatch mm; if (std::regex_search(line, mm, re_f)) cur = mm[1]; else if (std::regex_search(line, mm, re_u)) { int smem = 0; auto p = line.find("bytes smem"); if (p != std::string::npos) { auto q = line.rfind(", ", p); smem = std::stoi(line.substr(q + 2)); } res[cur] = {std::stoi(mm[1]), smem}; } }
          for (auto* list : {&task.tests, &task.bench, &task.held_out}) for (const auto& shape : *list) {
            ResolvedPlan rp = resolve_plan(task, kf->plan, shape, point);
            for (const auto& l : rp.launches) { auto it = res.find(l.kernel); if (it == res.end()) { printf("NO RESOURCES for %s\n", l.kernel.c_str()); ++failures; continue; }
              long threads = (long)l.block[0] * l.block[1] * l.block[2]; long regs = it->second.first; long regs_alloc = ((regs + 7) / 8) * 8; long warps = (threads + 31) / 32;
              if (regs_alloc * 32 * warps > 65536 || it->second.second + (long)l.smem > 227 * 1024) { ++failures; printf("RESOURCE FAIL %s %s %s: %ld threads x %ld regs, smem %d+%u\n", kf->path.c_str(), describe_param_point(point).c_str(), l.kernel.c_str(), threads, regs, it->second.second, l.smem); } }
          }
          if (log.find("warning") != std::string::npos) printf("WARN %s %s\n%s\n", kf->path.c_str(), describe_param_point(point).c_str(), log.c_str());
          if (verbose) printf("%s %s\n%s\n", kf->path.c_str(), describe_param_point(point).c_str(), log.c_str());
        }
        nvrtcDestroyProgram(&prog);
      }
      printf("%-45s %3zu point(s): max %d registers, max spill %d bytes %s\n", (task.name + "/" + kf->path.filename().string()).c_str(), points.size(), max_regs, max_spill, worst.c_str());
    }
  }
  printf("%d compiles, %d failures\n", compiles, failures); return failures ? 1 : 0;
}
