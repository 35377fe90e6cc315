#pragma once
// What a process and all its descendants cost, from /proc: CPU seconds and proportional memory,
// summed and grouped by command name (vigild, postgres, its recorders or ingest workers,
// whatever they are). `vigil bench rtsp` charges a server with everything it started.
// CPU of descendants that exited and were reaped inside the tree stays counted (their parent's
// cutime/cstime), so two samples give the tree's CPU over the window between them.
// Errors: none; processes that vanish while read are skipped.
#include <map>
#include <string>
#include <vector>

namespace vigil::bench {

struct TreeSample {
  std::map<std::string, double> cpu_s;      // by command name: utime + stime + cutime + cstime
  std::map<std::string, double> pss_bytes;  // by command name: Pss of /proc/PID/smaps_rollup
  std::map<std::string, int> processes;     // by command name
  double cpu_total_s() const;
  double pss_total_bytes() const;
  int process_count() const;
};

// ROOT and its descendants (found by parent pid), sampled now.
TreeSample sample_tree(int root);

// The pids of ROOT and its descendants.
std::vector<int> tree_pids(int root);

}  // namespace vigil::bench
