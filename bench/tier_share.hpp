#pragma once
// Part E of `vigil bench freeblock` (docs/freeblock.md, "Tiers 2 and 3 in the cycle scheduler"):
// the broker's three tiers on the simulated Atlas 10K in virtual time. Playback streams (one read
// per stream per cycle, each continuing its own recording in its own region, as viewers of
// recorded video) admitted at a fraction of what the conservative admission controller allows,
// beside a whole-disk scrub: one any-order BackgroundBroker task over the disk. The same run with
// tier 1 only (the cycles' slack), with tier 2 (blocks prepended to stream reads), with tier 3
// (reads inside the rotational latency) and with all three. Errors: exceptions.
#include <cstdint>

#include "storage/clock.hpp"

namespace vigil::bench {

struct TierShareOptions {
  int cycles = 600;
  bool prepend = false;     // tier 2
  bool rotational = false;  // tier 3
  bool scrub = true;
  double load = 0.9;                              // of the streams admission allows
  double stream_Bps = 500e3;                      // one viewer of a 4 Mbit/s camera
  storage::Nanos background_budget{200'000'000};  // per cycle; vigild's
};

struct TierShareResult {
  std::size_t admissible = 0, streams = 0;
  std::uint64_t cycles = 0, misses = 0, free_late = 0;
  std::uint64_t free_reads = 0, prepend_reads = 0;
  double elapsed_s = 0;
  double scrub_bytes = 0;    // delivered to the task, all tiers
  double free_bytes = 0;     // of which by tier 3
  double prepend_bytes = 0;  // of which by tier 2
  double rt_done_p99_ms = 0;
  double scrub_Bps() const { return elapsed_s > 0 ? scrub_bytes / elapsed_s : 0; }
  double free_Bps() const { return elapsed_s > 0 ? free_bytes / elapsed_s : 0; }
};

TierShareResult tier_share_run(const TierShareOptions& options);

}  // namespace vigil::bench
