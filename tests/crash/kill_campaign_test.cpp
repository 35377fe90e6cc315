// The kill campaign (issue 18, R1) against a real vigild: 16 cameras recording at real time over
// three file volumes, each recorder logging every durable acknowledgement; vigild SIGKILLed after
// a random amount of recording progress (seeded: VIGIL_KILL_SEED, printed), started again on the
// same volumes and catalog; the recorders reconnect and resend what was not acknowledged. After
// each round the catalog's segments are read from the volumes with the storage engine: every
// acknowledged frame is there byte-identical at the time it was captured, nothing else is there,
// the catalog and the volumes agree, and each camera's timeline has no hole without a gap.
// 20 kills in the normal pass; `crash_tests "[.soak]"` runs 1,000 (rounds of 20, a fresh
// vigild and volumes each round, so the volumes never fill and retention never runs).
#include <signal.h>

#include <catch2/catch_test_macros.hpp>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <numeric>
#include <random>

#include "bench/crash_rig.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using namespace vigil;
using namespace std::chrono_literals;

namespace {

constexpr int kCameras = 16;
constexpr int kKillsPerRound = 20;

std::uint32_t campaign_seed() {
  const char* s = std::getenv("VIGIL_KILL_SEED");
  return s ? static_cast<std::uint32_t>(std::strtoul(s, nullptr, 10)) : 20261125u;
}

struct Totals {
  int kills = 0;
  std::uint64_t acked = 0, read = 0, duplicates = 0, crash_gaps = 0;
};

std::uint64_t acked_over(const std::vector<std::unique_ptr<bench::KillRecorder>>& recorders) {
  return std::accumulate(recorders.begin(), recorders.end(), std::uint64_t{0},
                         [](std::uint64_t n, const auto& r) { return n + r->acked(); });
}

bool all_recording_on(const std::vector<std::unique_ptr<bench::KillRecorder>>& recorders, std::uint64_t generation) {
  return std::all_of(recorders.begin(), recorders.end(), [&](const auto& r) { return r->recording_on(generation); });
}

std::string recorder_errors(const std::vector<std::unique_ptr<bench::KillRecorder>>& recorders) {
  std::string out;
  for (const auto& r : recorders) {
    if (!r->error().empty()) out += r->name() + ": " + r->error() + "\n";
  }
  return out;
}

// One round: a fresh vigild on three fresh volumes, KILLS kills, then the check.
void one_round(int kills, std::mt19937& rng, Totals& totals) {
  test::TempDir dir("vigil-kills");
  const auto profile = test::make_sim_profile(dir.path());
  std::vector<std::string> args;
  for (int i = 0; i < 3; ++i)
    args.insert(args.end(), {"--volume", (dir.path() / ("vol" + std::to_string(i))).string()});
  // Every stream (one per camera per kill) keeps its segments: 1 MiB extents, sparse 1 GiB files.
  args.insert(args.end(),
              {"--volume-size", std::to_string(1 << 30), "--extent-bytes", std::to_string(1 << 20), "--profile",
               profile.string(), "--cycle-ms", "200", "--model-check-cycles", "0", "--no-camera-pull"});
  const auto data = dir.path() / "data";
  auto vigild = std::make_unique<test::VigildProcess>(data, args);
  REQUIRE(vigild->wait_ready());

  bench::VigildAddress address;
  address.up(vigild->wire());
  std::vector<std::unique_ptr<bench::KillRecorder>> recorders;
  for (int i = 0; i < kCameras; ++i) {
    recorders.push_back(std::make_unique<bench::KillRecorder>(
        bench::RecorderOptions{.camera = i, .token = vigild->token(), .declared_rate_bps = 4'000'000}, address));
  }
  {
    INFO(recorder_errors(recorders));
    REQUIRE(test::eventually([&] { return all_recording_on(recorders, 1); }));
  }

  for (int k = 0; k < kills; ++k) {
    // A random amount of recording progress, then the kill wherever vigild is (the random poll
    // spreads the kill over the cycle instead of landing just after an acknowledgement).
    const std::uint64_t target = acked_over(recorders) + 1 + rng() % 600;
    const auto poll = std::chrono::milliseconds(1 + rng() % 40);
    REQUIRE(test::eventually([&] { return acked_over(recorders) >= target; }, 60s, poll));
    address.down();
    vigild->stop(SIGKILL);
    vigild = std::make_unique<test::VigildProcess>(data, args);
    {
      INFO("kill " << k + 1 << ": vigild did not start again\n" << vigild->output());
      REQUIRE(vigild->wait_ready());
    }
    address.up(vigild->wire());
    const auto generation = address.generation();
    INFO("kill " << k + 1 << ": not every recorder records again\n" << recorder_errors(recorders));
    REQUIRE(test::eventually([&] { return all_recording_on(recorders, generation); }));
    ++totals.kills;
  }

  for (auto& r : recorders) {
    INFO(r->name() << ": " << r->error());
    CHECK(r->finish(60s));
  }
  const auto snapshot =
      bench::snapshot_catalog("host=" + (data / "pg" / "run").string() + " port=5432 user=vigil dbname=vigil", 60s);
  REQUIRE(vigild->stop(SIGTERM) == 0);
  const auto verdict = bench::verify_round(snapshot, recorders);
  std::string problems;
  for (const auto& p : verdict.problems) problems += p + "\n";
  INFO(problems);
  CHECK(verdict.frames_acked > 0);
  CHECK(verdict.acked_lost == 0);
  CHECK(verdict.invalid_frames == 0);
  CHECK(verdict.unreadable_segments == 0);
  CHECK(verdict.count_mismatches == 0);
  CHECK(verdict.orphans == 0);
  CHECK(verdict.holes == 0);
  // Each kill ends every camera's stream: each such end is a crash_recovery gap.
  CHECK(verdict.crash_gaps >= static_cast<std::uint64_t>(kills) * kCameras);
  totals.acked += verdict.frames_acked;
  totals.read += verdict.frames_read;
  totals.duplicates += verdict.duplicates;
  totals.crash_gaps += verdict.crash_gaps;
}

void run_campaign(int kills) {
  const auto seed = campaign_seed();
  std::cout << "kill campaign: " << kills << " kills, seed " << seed << " (VIGIL_KILL_SEED)" << std::endl;
  UNSCOPED_INFO("seed " << seed);
  std::mt19937 rng(seed);
  Totals totals;
  for (int done = 0; done < kills; done += kKillsPerRound) {
    one_round(std::min(kKillsPerRound, kills - done), rng, totals);
    // After each round: a long soak stopped early still leaves its figures.
    std::cout << "kill campaign: " << totals.kills << " kills survived; " << totals.acked << " frames acknowledged, "
              << totals.read << " read back (" << totals.duplicates
              << " stored twice: durable, not acknowledged, resent); " << totals.crash_gaps << " crash_recovery gaps"
              << std::endl;
  }
  CHECK(totals.kills == kills);
}

}  // namespace

TEST_CASE("SIGKILL of vigild with 16 cameras on three volumes loses no acknowledged frame", "[crash][vigild]") {
  run_campaign(kKillsPerRound);
}

TEST_CASE("soak: 1,000 SIGKILLs of vigild with 16 cameras on three volumes", "[.soak]") {
  const char* n = std::getenv("VIGIL_KILLS");
  run_campaign(n ? std::atoi(n) : 1000);
}
