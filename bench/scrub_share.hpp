#pragma once
// Part C of `vigil bench freeblock` (docs/freeblock.md): Vigil's own workload on the simulated
// Atlas 10K in virtual time. Recording streams (one durable write per stream per cycle, each in
// its own region, as segments fill) admitted at a fraction of what the conservative admission
// controller allows on the disk's profile, beside the integrity scrubber's pattern: a
// BackgroundBroker task reading a set of closed segments (long sequential extents spread over the
// disk) again and again. The real CycleScheduler drives the disk; the broker's blocks are tier 1
// (IoClass::background in a cycle's slack), as vigild runs today. Errors: exceptions.
#include <cstdint>

#include "storage/clock.hpp"

namespace vigil::bench {

struct ScrubShareOptions {
  int cycles = 600;
  bool scrub = true;
  double load = 0.9;                              // of the streams admission allows
  double stream_Bps = 500e3;                      // one camera: 4 Mbit/s
  storage::Nanos background_budget{200'000'000};  // per cycle; vigild's (SchedulerConfig's default)
  std::uint64_t seed = 1;
};

struct ScrubShareResult {
  std::size_t admissible = 0, streams = 0;  // what admission allows, what ran
  std::uint64_t cycles = 0, misses = 0;
  double elapsed_s = 0;
  double scrub_bytes = 0;
  double foreground_s = 0;                        // Σ stream IO and its flushes
  double residual_s = 0;                          // Σ (T − foreground)
  double scrub_busy_s = 0;                        // Σ the scrubber's device time
  double rt_done_p99_ms = 0, rt_done_max_ms = 0;  // when a cycle's last stream IO finished, from its start
  double scrub_Bps() const { return elapsed_s > 0 ? scrub_bytes / elapsed_s : 0; }
  double residual_share() const { return residual_s > 0 ? scrub_busy_s / residual_s : 0; }
};

ScrubShareResult scrub_share_run(const ScrubShareOptions& options);

}  // namespace vigil::bench
