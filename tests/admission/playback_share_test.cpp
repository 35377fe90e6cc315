// Recording comes first (admission/playback_share.hpp): playbacks are admitted within their own
// share f·B of the real-time budget B = r_RT·T; a recording is refused only when the recordings
// alone would not fit, and the newest playbacks give way when it needs their time. On the
// hand-computed profile (exact figures), then on the simulated WD400BB in virtual time: a flood
// of 64x playbacks, then recordings up to what the recordings alone allow, and the admitted set
// runs without a miss.
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <random>

#include "admission/admission.hpp"
#include "admission/playback_share.hpp"
#include "admission/profiler.hpp"
#include "storage/cycle_scheduler.hpp"
#include "storage/hdd_model.hpp"
#include "storage/stream_buffer.hpp"
#include "tests/admission/hand_profile.hpp"

using namespace vigil::admission;
using namespace vigil::storage;
using Catch::Approx;
using Catch::Matchers::ContainsSubstring;
using vigil::Rate;

namespace {

constexpr Rate MBps = Rate::from_Bps(1e6);

StreamDemand demand(std::uint64_t id, bool write, Rate rate) { return {id, write, rate, {}, {}}; }

// Admits CANDIDATE into SET under the rule (the ended playbacks leave SET); returns the decision.
SharedDecision admit(const AdmissionController& adm, std::vector<StreamDemand>& set, const StreamDemand& candidate) {
  auto d = decide_shared(adm, set, candidate);
  if (d.decision.admitted) {
    for (const auto id : d.ended) std::erase_if(set, [&](const StreamDemand& s) { return s.id == id; });
    set.push_back(candidate);
  }
  return d;
}

}  // namespace

TEST_CASE("playbacks stay within their share; recordings are decided alone and end the newest playbacks",
          "[admission][playback_share]") {
  // Conservative policy, min curve: a 2 MB/s stream at S_avg = 2 MB costs 2 MB / 20 MB/s = 0.1 s
  // of a 1 s cycle. B = 0.9 s; the playbacks' share f·B = 0.25 · 0.9 = 0.225 s: two of them.
  AdmissionController adm(vigil::test::hand_profile(),
                          {.policy = Policy::conservative, .cycle_s = 1, .r_rt = 0.9, .playback_share = 0.25});
  std::vector<StreamDemand> set;
  std::uint64_t id = 0;
  CHECK(admit(adm, set, demand(++id, false, 2 * MBps)).decision.admitted);
  CHECK(admit(adm, set, demand(++id, false, 2 * MBps)).decision.admitted);
  CHECK(playback_busy(adm, set) == Approx(0.2));
  const auto third = admit(adm, set, demand(++id, false, 2 * MBps));
  CHECK_FALSE(third.decision.admitted);
  CHECK(third.decision.cause == RefuseCause::cycle_full);
  CHECK_THAT(third.decision.reason, ContainsSubstring("playbacks' share of the disk is full"));
  CHECK_THAT(third.decision.reason, ContainsSubstring("225 ms playback share"));
  // What would fit in the share: 0.025 s more at S_avg = (4 MB + x)/3 — well under 2 MB/s.
  CHECK(third.decision.max_rate > Rate{});
  CHECK(third.decision.max_rate < 2 * MBps);

  // Recordings: 0.9 s / 0.1 s = 9 fit on their own, whatever the playbacks hold.
  const std::size_t alone = adm.max_streams(demand(0, true, 2 * MBps));
  REQUIRE(alone == 9);
  std::vector<std::uint64_t> ended;
  for (std::size_t i = 0; i < alone; ++i) {
    const auto d = admit(adm, set, demand(++id, true, 2 * MBps));
    INFO("recording " << i + 1);
    REQUIRE(d.decision.admitted);
    ended.insert(ended.end(), d.ended.begin(), d.ended.end());
    // Never more than the budget, playbacks included.
    CHECK(adm.predicted_busy(set) <= adm.budget_s() + 1e-12);
    // The 8th recording needs the newest playback's time, the 9th the other's.
    CHECK(d.ended.size() == (i + 1 >= 8 ? 1u : 0u));
  }
  CHECK(ended == std::vector<std::uint64_t>{2, 1});  // newest first
  // The 10th recording does not fit beside the other recordings: refused, and it says so.
  const auto tenth = admit(adm, set, demand(++id, true, 2 * MBps));
  CHECK_FALSE(tenth.decision.admitted);
  CHECK_THAT(tenth.decision.reason, ContainsSubstring("(recordings alone)"));
  // Recordings hold the whole budget: no playback fits, whatever its share.
  CHECK_FALSE(admit(adm, set, demand(++id, false, 1 * MBps)).decision.admitted);
}

TEST_CASE("recordings use the playbacks' share while playbacks do not; share 0 admits no playback",
          "[admission][playback_share]") {
  AdmissionController adm(vigil::test::hand_profile(),
                          {.policy = Policy::conservative, .cycle_s = 1, .r_rt = 0.9, .playback_share = 0.25});
  std::vector<StreamDemand> set;
  std::uint64_t id = 0;
  for (int i = 0; i < 9; ++i) {
    const auto d = admit(adm, set, demand(++id, true, 2 * MBps));
    REQUIRE(d.decision.admitted);
    CHECK(d.ended.empty());
  }
  CHECK(adm.predicted_busy(set) == Approx(0.9));

  AdmissionController off(vigil::test::hand_profile(),
                          {.policy = Policy::conservative, .cycle_s = 1, .r_rt = 0.9, .playback_share = 0});
  const auto d = decide_shared(off, {}, demand(1, false, 1 * MBps));
  CHECK_FALSE(d.decision.admitted);
  CHECK_THAT(d.decision.reason, ContainsSubstring("playback share is 0"));
  CHECK(decide_shared(off, {}, demand(1, true, 1 * MBps)).decision.admitted);
}

namespace {

struct SimDisk {
  SimDisk() {
    auto m = std::make_unique<HddModel>(hdd_preset("wd400bb"));
    model = m.get();
    disk = std::make_unique<SimulatedDisk>(clock,
                                           SimulatedDiskOptions{.size_bytes = model->capacity_bytes() / 4096 * 4096,
                                                                .block_bytes = 512,
                                                                .max_in_flight = 8,
                                                                .store_data = false},
                                           std::move(m));
  }
  VirtualClock clock;
  HddModel* model = nullptr;
  std::unique_ptr<SimulatedDisk> disk;
};

// One IO of BYTES at OFFSET every cycle, in its direction.
class DummyStream final : public CycleStream {
 public:
  DummyStream(bool write, std::uint64_t offset, std::size_t bytes) : write_(write), offset_(offset), buf_(bytes) {}
  StreamIo prepare(std::uint64_t) override { return {.write = write_, .pieces = {{offset_, buf_.span()}}}; }
  void finished(std::uint64_t, vigil::Result<void>) override {}

 private:
  bool write_;
  std::uint64_t offset_;
  AlignedBuffer buf_;
};

}  // namespace

TEST_CASE("on the simulated WD400BB: a flood of 64x playbacks never costs a recording, and nothing misses",
          "[admission][playback_share][hdd]") {
  SimDisk profiled;
  const auto p = profile_device(*profiled.disk, profiled.clock, {.quick = true});
  AdmissionController adm(p, {.policy = Policy::conservative, .cycle_s = 1, .r_rt = 0.9, .playback_share = 0.25});
  // Cameras of 64 kbit/s played at 64x: 512 kB/s each; recordings of 1 MB/s (8 Mbit/s).
  const Rate fast = Rate::from_bps(64e3) * 64, recording = 1 * MBps;
  std::vector<StreamDemand> set;
  std::uint64_t id = 0;
  std::size_t playbacks = 0, refused = 0;
  for (int i = 0; i < 100; ++i) {  // the flood: every viewer asks
    const auto d = admit(adm, set, demand(++id, false, fast));
    if (d.decision.admitted) {
      ++playbacks;
    } else {
      ++refused;
      CHECK_THAT(d.decision.reason, ContainsSubstring("playbacks' share of the disk is full"));
    }
  }
  INFO("playbacks admitted " << playbacks);
  REQUIRE(playbacks >= 3);
  CHECK(refused == 100 - playbacks);
  CHECK(playback_busy(adm, set) <= 0.25 * adm.budget_s() + 1e-12);

  // Then the recordings: exactly as many as fit on their own.
  const std::size_t alone = adm.max_streams(demand(0, true, recording));
  std::size_t recordings = 0, ended = 0;
  for (;;) {
    const auto d = admit(adm, set, demand(++id, true, recording));
    if (!d.decision.admitted) {
      CHECK_THAT(d.decision.reason, ContainsSubstring("(recordings alone)"));
      break;
    }
    ++recordings;
    ended += d.ended.size();
    REQUIRE(adm.predicted_busy(set) <= adm.budget_s() + 1e-12);
  }
  INFO("recordings " << recordings << ", alone " << alone << ", playbacks ended " << ended);
  CHECK(recordings == alone);
  CHECK(ended >= 1);  // they filled the disk: the playbacks gave way
  CHECK(ended <= playbacks);

  // What stays admitted runs 300 cycles of the simulated disk without a miss.
  SimDisk d;
  ProfiledServiceModel model(p);
  CycleScheduler sched(*d.disk, d.clock, model,
                       {.cycle = std::chrono::seconds(1),
                        .r_rt = 0.9,
                        .chunk_bytes = static_cast<std::size_t>(p.chunk_bytes())},
                       &d.clock);
  std::vector<std::unique_ptr<DummyStream>> streams;
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<std::uint64_t> pos(0, d.model->capacity_bytes() / 4096 - 4096);
  for (const auto& s : set) {
    streams.push_back(std::make_unique<DummyStream>(s.write, pos(rng) * 4096, stream_io_bytes(s.peak_rate, 1.0, 4096)));
    sched.add_stream(s.id, *streams.back(), d.clock.now());
  }
  for (int i = 0; i < 300; ++i) sched.run_cycle();
  CHECK(sched.totals().misses == 0);
}
