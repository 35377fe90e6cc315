#include "bench/process_tree.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

namespace fs = std::filesystem;

namespace vigil::bench {
namespace {

struct Stat {
  int pid = 0, ppid = 0;
  std::string comm;
  double cpu_ticks = 0;
};

bool read_stat(int pid, Stat& out) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(in)), {});
  const auto open = s.find('('), close = s.rfind(')');
  if (open == std::string::npos || close == std::string::npos) return false;
  out.pid = pid;
  out.comm = s.substr(open + 1, close - open - 1);
  std::istringstream rest(s.substr(close + 2));
  std::string field;
  out.cpu_ticks = 0;
  for (int i = 3; i <= 17 && rest >> field; ++i) {
    if (i == 4) out.ppid = std::stoi(field);
    if (i >= 14) out.cpu_ticks += std::stod(field);  // utime, stime, cutime, cstime
  }
  return true;
}

double pss_of(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/smaps_rollup");
  std::string key;
  double kb = 0;
  while (in >> key) {
    if (key == "Pss:") {
      in >> kb;
      return kb * 1024;
    }
    in.ignore(1 << 12, '\n');
  }
  return 0;
}

std::vector<Stat> tree_of(int root) {
  std::vector<Stat> all;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const auto name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    Stat s;
    if (read_stat(std::stoi(name), s)) all.push_back(std::move(s));
  }
  std::vector<Stat> tree;
  for (const auto& s : all)
    if (s.pid == root) tree.push_back(s);
  // Breadth first: each round adds the children of the last round's processes.
  for (std::size_t from = 0; from < tree.size(); ++from) {
    for (const auto& s : all)
      if (s.ppid == tree[from].pid) tree.push_back(s);
  }
  return tree;
}

}  // namespace

double TreeSample::cpu_total_s() const {
  return std::accumulate(cpu_s.begin(), cpu_s.end(), 0.0, [](double a, const auto& kv) { return a + kv.second; });
}

double TreeSample::pss_total_bytes() const {
  return std::accumulate(pss_bytes.begin(), pss_bytes.end(), 0.0,
                         [](double a, const auto& kv) { return a + kv.second; });
}

int TreeSample::process_count() const {
  return std::accumulate(processes.begin(), processes.end(), 0, [](int a, const auto& kv) { return a + kv.second; });
}

TreeSample sample_tree(int root) {
  TreeSample t;
  const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  for (const auto& s : tree_of(root)) {
    t.cpu_s[s.comm] += s.cpu_ticks / tick;
    t.pss_bytes[s.comm] += pss_of(s.pid);
    t.processes[s.comm] += 1;
  }
  return t;
}

std::vector<int> tree_pids(int root) {
  std::vector<int> pids;
  for (const auto& s : tree_of(root)) pids.push_back(s.pid);
  return pids;
}

}  // namespace vigil::bench
