// Recording through the cycle scheduler on a simulated disk: frames from the "network" side,
// one durable stream IO per stream per cycle, acknowledgements only after the cycle's flush,
// segments rolling over. Then power is cut at random command counts: after recovery, every
// acknowledged frame of every stream is there, byte for byte, and nothing is served that was
// not written.
#include <catch2/catch_test_macros.hpp>

#include <map>
#include <set>
#include <random>

#include "storage/cycle_scheduler.hpp"
#include "storage/recording_stream.hpp"
#include "storage/segment_recovery.hpp"
#include "storage/simulated_disk.hpp"
#include "tests/support/script_frames.hpp"

using namespace vigil::storage;
using namespace std::chrono_literals;
using vigil::errc;

namespace {

struct Recorder {
  std::uint64_t stream;
  std::unique_ptr<RecordingStream> rec;
  std::uint64_t next_seq = 1;
  std::uint64_t acked = 0;
  std::vector<SegmentSummary> closed;
};

struct Rig {
  Rig() : disk(clock, {.size_bytes = 64 << 20}) {
    REQUIRE(Volume::format(disk, {.extent_bytes = 1 << 20}).has_value());
    volume = std::move(*Volume::open(disk));
    sched = std::make_unique<CycleScheduler>(disk, clock, model, SchedulerConfig{.cycle = 1s, .chunk_bytes = 16 * 1024},
                                             &clock);
    for (std::uint64_t s = 1; s <= 3; ++s) {
      auto r = std::make_unique<Recorder>();
      r->stream = s;
      Recorder* raw = r.get();
      r->rec = std::make_unique<RecordingStream>(
          *volume, s, std::vector<std::byte>(40, std::byte{0x42}), 1, 0,
          RecordingStreamOptions{.io_bytes = 48 * 1024, .max_segment_bytes = 300 * 1024},
          [this] { return ++next_segment; },
          [raw](std::uint64_t seq) {
            CHECK(seq > raw->acked);  // acknowledgements only move forward
            raw->acked = seq;
          },
          [raw](const SegmentSummary& c) { raw->closed.push_back(c); });
      sched->add_stream(s, *r->rec, clock.now());
      recorders.push_back(std::move(r));
    }
  }
  // One cycle: each recorder sends frames until its half is full (policing says so), then the
  // scheduler writes, flushes and acknowledges.
  void cycle() {
    for (auto& r : recorders) {
      for (int i = 0; i < 30; ++i) {
        auto f = vigil::test::script_frame(r->next_seq, r->stream);
        auto ok = r->rec->append(f.header, f.payload);
        if (!ok) {
          CHECK(ok.error() == errc::rate_exceeded);
          break;
        }
        ++r->next_seq;
      }
    }
    sched->run_cycle();
  }
  VirtualClock clock;
  SimulatedDisk disk;
  LinearServiceModel model{100us, 200e6};
  std::unique_ptr<Volume> volume;
  std::unique_ptr<CycleScheduler> sched;
  std::vector<std::unique_ptr<Recorder>> recorders;
  std::uint64_t next_segment = 100;
};

}  // namespace

TEST_CASE("recording through the scheduler acknowledges only flushed frames and rolls segments", "[recording]") {
  Rig rig;
  for (int i = 0; i < 40; ++i) rig.cycle();
  CHECK(rig.sched->totals().misses == 0);
  for (auto& r : rig.recorders) {
    INFO("stream " << r->stream);
    CHECK(r->acked > 100);
    CHECK(r->acked < r->next_seq);  // the last cycle's frames are still in the filling half
    CHECK(r->closed.size() >= 2);   // 300 KiB segments over ~1.9 MB of frames
    std::uint64_t expect = 1;
    for (const auto& c : r->closed) {
      CHECK(c.first_sequence == expect);  // segments continue each other without a hole
      expect = c.last_sequence + 1;
    }
    CHECK(r->rec->refused_frames() > 0);  // 30 frames a cycle is more than 48 KiB holds
    CHECK(r->rec->memory_bytes() == 2 * 48 * 1024);
    // Measured over the last 60 cycles: close to a full half per cycle, and it varies (VBR frames).
    const auto rate = r->rec->measured_rate();
    CHECK(rate.cycles == 40);
    CHECK(rate.mean > 0.6 * 48 * 1024);
    CHECK(rate.mean <= 48 * 1024);
    CHECK(rate.stddev > 0);
  }
  CHECK(rig.disk.counters().flushes >= 39);  // one per cycle, not one per stream
  CHECK(rig.disk.counters().flushes < 60);
}

TEST_CASE("power cut at random moments: every acknowledged frame survives, byte for byte", "[recording][crash]") {
  std::mt19937_64 rng(11);
  for (int iteration = 0; iteration < 25; ++iteration) {
    Rig rig;
    const std::uint64_t cut = 20 + rng() % 400;
    rig.disk.power_fail_after(cut);
    for (int i = 0; i < 60 && !rig.disk.powered_off(); ++i) rig.cycle();
    std::map<std::uint64_t, std::uint64_t> acked;
    for (auto& r : rig.recorders) acked[r->stream] = r->acked;
    rig.sched.reset();
    rig.disk.crash(/*lose_cache=*/true);

    auto vol = Volume::open(rig.disk);
    REQUIRE(vol.has_value());
    std::map<std::uint64_t, std::set<std::uint64_t>> found;
    for (const auto& [id, uses] : (*vol)->segments()) {
      auto rec = recover_segment(**vol, id, [&](const ScannedRecord& r) {
        CHECK(vigil::test::matches_script(r.header, r.payload));  // never garbage
        found[r.header.stream_id].insert(r.header.sequence);
      });
      if (!rec) continue;  // a segment whose header never became durable holds no acked frame
    }
    for (const auto& [stream, upto] : acked) {
      INFO("iteration " << iteration << " cut after " << cut << " commands, stream " << stream << " acked " << upto);
      for (std::uint64_t seq = 1; seq <= upto; ++seq) {
        if (!found[stream].count(seq)) {
          FAIL_CHECK("acknowledged frame " << seq << " lost");
          break;
        }
      }
    }
  }
}
