// Background work at full admitted load on the simulated Atlas 10K (issue 23's "over 10^5 cycles:
// 0 misses"), virtual time: every stream admission allows, recording beside the scrubber's
// pattern (tier 1, as vigild runs) and playback beside a whole-disk scrub with tier 3. No stream
// ever misses a deadline and no foreground command completes later than tier 3 planned.
// VIGIL_SOAK_CYCLES sets the length: CI runs the bounded default; the soak is 100000
// (`VIGIL_SOAK_CYCLES=100000 ctest --preset default -R soak`, docs/freeblock.md).
#include <catch2/catch_test_macros.hpp>

#include <cstdlib>
#include <iostream>
#include <string>

#include "bench/scrub_share.hpp"
#include "bench/tier_share.hpp"

namespace {

int soak_cycles() {
  const char* env = std::getenv("VIGIL_SOAK_CYCLES");
  return env ? std::stoi(env) : 2000;
}

}  // namespace

TEST_CASE("soak: background work at full admitted load, recording and playback, never a miss", "[bench][soak]") {
  const int cycles = soak_cycles();
  const auto rec = vigil::bench::scrub_share_run({.cycles = cycles, .load = 1.0});
  INFO("recording: " << rec.streams << " streams, " << rec.cycles << " cycles, scrub " << rec.scrub_Bps() / 1e6
                     << " MB/s");
  CHECK(rec.streams == rec.admissible);
  CHECK(rec.cycles == static_cast<std::uint64_t>(cycles));
  CHECK(rec.misses == 0);
  CHECK(rec.scrub_bytes > 0);
  const auto play = vigil::bench::tier_share_run({.cycles = cycles, .rotational = true, .load = 1.0});
  INFO("playback: " << play.streams << " streams, " << play.free_reads << " free reads");
  CHECK(play.streams == play.admissible);
  CHECK(play.cycles == static_cast<std::uint64_t>(cycles));
  CHECK(play.misses == 0);
  CHECK(play.free_late == 0);
  CHECK(play.free_reads > 0);
  std::cout << "soak: " << cycles << " cycles each: recording " << rec.streams << " streams + scrub "
            << rec.scrub_Bps() / 1e6 << " MB/s, " << rec.misses << " misses; playback " << play.streams
            << " streams + tiers 1+3 scrub " << play.scrub_Bps() / 1e6 << " MB/s (" << play.free_reads
            << " free reads), " << play.misses << " misses, " << play.free_late << " late\n";
}
