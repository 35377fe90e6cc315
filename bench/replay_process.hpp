#pragma once
// The load generator of `vigil bench ingest` in its own process (docs/benchmarks.md): K replays
// (replay.hpp), one thread each, all started at once (a start-up burst), run in a child forked
// from the bench, pinned to CPUS where given (sched_setaffinity), so its CPU time is its own and
// not vigild's, and the scheduler can keep it off vigild's IO thread's CPU. The results come back
// over a pipe; the child's CPU time from wait4. Also: pinning vigild's IO threads (named
// "vigil-io") to a CPU. Thread: the caller's; the child process runs K threads. Errors:
// exceptions (tool layer); a replay's own failure is in its result.
#include <string>
#include <vector>

#include "bench/replay.hpp"

namespace vigil::bench {

struct ReplayProcessResult {
  std::vector<ReplayResult> results;  // one per stream, in order
  double cpu_seconds = 0;             // the generator process's user + system time
};

// Streams NAME_PREFIX-0 .. -(K-1) on WIRE, each replaying CLIP with OPTIONS (on_open, on_ack
// and stop are not carried into the child). CPUS empty: not pinned.
ReplayProcessResult replay_in_process(const std::string& wire, const std::string& name_prefix, int k,
                                      const ReplayClip& clip, const ReplayOptions& options,
                                      const std::vector<int>& cpus);

// Pins every thread of process PID named COMM (/proc/PID/task/*/comm) to CPUS; how many.
int pin_threads(int pid, const std::string& comm, const std::vector<int>& cpus);

}  // namespace vigil::bench
