// The long fault simulation (issue [H], R6): three cameras record through the cycle scheduler on
// a small simulated disk for many cycles while faults are injected at random — a write or flush
// that fails, a write torn and the power lost with it, a plain power loss, and a volume let run
// full (retention held off). Retention reclaims the oldest closed segments as vigild's would.
// A failed stream is reopened from its last durable frame (what a recorder does on IO_ERROR);
// after a power loss the volume is opened and recovered from the disk alone, as at a restart.
// Invariants, checked all along:
//  - acknowledged ⊆ durable: after every power loss each acknowledged frame that retention did not
//    reclaim is on the volume, byte for byte; nothing recovered is torn or stale;
//  - extents are never shared: no extent belongs to two segments, and in-use + free + bad = all;
//  - catalog and volume agree after recovery: every segment the "catalog" (what the callbacks
//    reported) holds as closed is on the volume with at least its frames.
// Seeded and reproducible: the seed is in every failure message. A bounded run is in the unit
// pass; `storage_tests "[.soak]"` runs 10^6 cycles.
#include <catch2/catch_test_macros.hpp>
#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <random>
#include <set>

#include "storage/cycle_scheduler.hpp"
#include "storage/recording_stream.hpp"
#include "storage/segment_recovery.hpp"
#include "storage/simulated_disk.hpp"
#include "tests/support/script_frames.hpp"

using namespace vigil::storage;
using namespace std::chrono_literals;
using vigil::errc;

namespace {

constexpr int kCameras = 3;
constexpr std::size_t kIoBytes = 48 * 1024;
constexpr std::uint64_t kExtentBytes = 256 * 1024;
constexpr std::uint64_t kSegmentBytes = 2 * kExtentBytes;
constexpr std::uint64_t kReserveExtents = 6;  // retention keeps this many extents free

struct CatalogSegment {
  int camera = 0;
  std::uint64_t stream = 0, first_sequence = 0, last_sequence = 0, frames = 0;
};

struct Camera {
  int id = 0;
  std::uint64_t stream = 0;  // the current stream id (a new one after every failure or restart)
  std::unique_ptr<RecordingStream> rec;
  std::uint64_t next_seq = 1;
  std::uint64_t acked = 0;
  std::optional<std::uint64_t> failed;  // last durable sequence, when the stream failed
};

struct Totals {
  std::uint64_t cycles = 0, io_faults = 0, torn = 0, power_losses = 0, full_spells = 0, stream_failures = 0,
                reclaimed = 0, acked_checked = 0;
};

class Simulation {
 public:
  explicit Simulation(std::uint64_t seed) : seed_(seed), rng_(seed), disk_(clock_, {.size_bytes = 16 << 20}) {
    REQUIRE(Volume::format(disk_, {.extent_bytes = kExtentBytes}).has_value());
    for (int c = 0; c < kCameras; ++c) cameras_[c].id = c;
    start();
  }

  void run(std::uint64_t cycles) {
    for (std::uint64_t i = 0; i < cycles; ++i) {
      inject();
      cycle();
      if (disk_.powered_off()) power_loss();
    }
    power_loss();  // the last word: everything acknowledged survives a final crash too
  }
  const Totals& totals() const { return totals_; }

 private:
  // Volume open (recovery) and a fresh scheduler with one new stream per camera.
  void start() {
    auto vol = Volume::open(disk_);
    REQUIRE(vol.has_value());
    volume_ = std::move(*vol);
    scheduler_ = std::make_unique<CycleScheduler>(disk_, clock_, model_,
                                                  SchedulerConfig{.cycle = 1s, .chunk_bytes = 16 * 1024}, &clock_);
    for (auto& cam : cameras_) open_stream(cam);
  }

  void open_stream(Camera& cam) {
    cam.stream = next_stream_++;
    cam.failed.reset();
    cam.next_seq = cam.acked + 1;  // the recorder resends everything not acknowledged
    stream_camera_[cam.stream] = cam.id;
    Camera* raw = &cam;
    cam.rec = std::make_unique<RecordingStream>(
        *volume_, cam.stream, std::vector<std::byte>(32, std::byte{0x17}), cam.next_seq, 0,
        RecordingStreamOptions{.io_bytes = kIoBytes, .max_segment_bytes = kSegmentBytes},
        [this] { return next_segment_++; },
        [raw](std::uint64_t seq) {
          REQUIRE(seq > raw->acked);  // acknowledgements only move forward
          raw->acked = seq;
        },
        [this, raw](const SegmentSummary& s) {
          catalog_[s.segment_id] = {raw->id, s.stream_id, s.first_sequence, s.last_sequence, s.frame_count};
        },
        [raw](std::uint64_t last_durable) { raw->failed = last_durable; });
    scheduler_->add_stream(cam.stream, *cam.rec, clock_.now());
  }

  void inject() {
    if (rng_() % 40 != 0) return;  // about one fault every 40 cycles
    switch (rng_() % 5) {
      case 0:
      case 1:
        disk_.fail_io(1 + rng_() % 12, errc::io_error);
        ++totals_.io_faults;
        break;
      case 2:
        disk_.tear_write(1 + rng_() % 8, rng_() % kIoBytes);
        ++totals_.torn;
        break;
      case 3: disk_.power_fail_after(rng_() % 16); break;
      case 4:
        retention_off_ = 20 + rng_() % 100;  // let the volume run full for a while
        ++totals_.full_spells;
        break;
    }
  }

  void cycle() {
    ++totals_.cycles;
    for (auto& cam : cameras_) {
      for (int i = 0; i < 30 && !cam.failed; ++i) {
        auto f = vigil::test::script_frame(cam.next_seq, static_cast<std::uint64_t>(cam.id) + 1);
        auto ok = cam.rec->append(f.header, f.payload);
        if (!ok) {
          INFO("seed " << seed_ << " camera " << cam.id);
          REQUIRE((ok.error() == errc::rate_exceeded || ok.error() == errc::io_error));
          break;
        }
        ++cam.next_seq;
      }
    }
    scheduler_->run_cycle();
    if (disk_.powered_off()) return;
    for (auto& cam : cameras_) {
      if (!cam.failed) continue;
      // What a recorder does on IO_ERROR: a new session from the last durable frame on.
      ++totals_.stream_failures;
      INFO("seed " << seed_ << " cycle " << totals_.cycles << " camera " << cam.id);
      REQUIRE(*cam.failed == cam.acked);  // the failure names exactly the last acknowledged frame
      scheduler_->remove_stream(cam.stream);
      cam.rec.reset();
      forget_unreported_segments(cam.stream);
      open_stream(cam);
    }
    check_extents_not_shared();
    if (retention_off_ > 0) --retention_off_;
    else retention();
  }

  // A failed stream's segment that never reached the catalog (it failed before its first
  // durable batch) holds nothing acknowledged: free it, as start-up recovery would.
  void forget_unreported_segments(std::uint64_t stream) {
    std::vector<std::uint64_t> extents;
    for (const auto& [id, uses] : volume_->segments()) {
      if (catalog_.count(id) || uses.empty() || uses.front().header.stream_id != stream) continue;
      for (const auto& u : uses) extents.push_back(u.extent);
    }
    for (auto e : extents) (void)volume_->free_extent(e);
  }

  // The oldest closed segments go until the reserve of free extents is back. As in vigild, a
  // segment is first taken out of the catalog (it is no longer owed), then its extents are
  // tombstoned; a fault in between leaves it "deleting", finished later or by recovery.
  void retention() {
    while (volume_->free_extent_count() < kReserveExtents && !catalog_.empty() && deleting_.empty()) {
      const auto [id, seg] = *catalog_.begin();
      note_reclaimed(seg.camera, seg.first_sequence, seg.last_sequence);
      catalog_.erase(catalog_.begin());
      deleting_.insert(id);
      ++totals_.reclaimed;
      finish_deleting(*volume_);
    }
    finish_deleting(*volume_);
  }

  void finish_deleting(Volume& volume) {
    for (auto it = deleting_.begin(); it != deleting_.end();) {
      const auto found = volume.segments().find(*it);
      if (found != volume.segments().end()) {
        const auto uses = found->second;
        for (const auto& u : uses) {
          if (!volume.free_extent(u.extent)) return;  // a fault: try again next cycle
        }
      }
      it = deleting_.erase(it);
    }
  }

  void check_extents_not_shared() {
    std::set<std::uint64_t> in_use;
    std::uint64_t count = 0;
    for (const auto& [id, uses] : volume_->segments()) {
      for (const auto& u : uses) {
        in_use.insert(u.extent);
        ++count;
      }
    }
    INFO("seed " << seed_ << " cycle " << totals_.cycles);
    REQUIRE(in_use.size() == count);
    // Bad extents (a write failed there) are out of use once their segment is freed.
    std::uint64_t bad_unused = 0;
    for (std::uint64_t e = 0; e < volume_->extent_count(); ++e) {
      if (volume_->is_bad(e) && !in_use.count(e)) ++bad_unused;
    }
    REQUIRE(count + volume_->free_extent_count() + bad_unused == volume_->extent_count());
  }

  // Retention took [FIRST, LAST] of CAMERA: those frames are no longer owed. Ranges that join
  // the reclaimed prefix move the camera's check start instead of being kept.
  void note_reclaimed(int camera, std::uint64_t first, std::uint64_t last) {
    auto& ranges = reclaimed_[camera];
    ranges.push_back({first, last});
    auto& from = check_from_[camera];
    if (from == 0) from = 1;
    for (bool moved = true; moved;) {
      moved = false;
      for (auto it = ranges.begin(); it != ranges.end();) {
        if (it->first <= from && it->second >= from) {
          from = it->second + 1;
          moved = true;
        }
        if (it->second < from) it = ranges.erase(it);
        else ++it;
      }
    }
  }

  bool reclaimed(int camera, std::uint64_t seq) const {
    auto it = reclaimed_.find(camera);
    if (it == reclaimed_.end()) return false;
    for (const auto& [first, last] : it->second) {
      if (seq >= first && seq <= last) return true;
    }
    return false;
  }

  // Power is cut (or was): everything in flight is gone, the volume is recovered from the disk.
  void power_loss() {
    ++totals_.power_losses;
    for (auto& cam : cameras_) {
      if (cam.rec) scheduler_->remove_stream(cam.stream);
    }
    scheduler_.reset();
    for (auto& cam : cameras_) cam.rec.reset();
    volume_.reset();
    disk_.crash(/*lose_cache=*/true);

    auto vol = Volume::open(disk_);
    INFO("seed " << seed_ << " cycle " << totals_.cycles);
    REQUIRE(vol.has_value());
    finish_deleting(**vol);  // what start-up recovery does with segments left "deleting"
    std::map<int, std::set<std::uint64_t>> found;
    std::vector<std::uint64_t> empty_segments;
    for (const auto& [id, uses] : (*vol)->segments()) {
      std::uint64_t frames = 0, first = 0, last = 0;
      auto rec = recover_segment(**vol, id, [&](const ScannedRecord& r) {
        const int camera = stream_camera_.at(r.header.stream_id);
        const auto want = vigil::test::script_frame(r.header.sequence, static_cast<std::uint64_t>(camera) + 1);
        // Never torn, never stale (a plain test: this runs for every recovered frame).
        if (r.header.pts != want.header.pts ||
            !std::equal(r.payload.begin(), r.payload.end(), want.payload.begin(), want.payload.end())) {
          FAIL("seed " << seed_ << ": camera " << camera << " frame " << r.header.sequence << " recovered wrong");
        }
        found[camera].insert(r.header.sequence);
        if (frames++ == 0) first = r.header.sequence;
        last = r.header.sequence;
      });
      const auto known = catalog_.find(id);
      if (known != catalog_.end()) {
        // The catalog's closed segment is on the volume with at least the frames it recorded.
        REQUIRE(rec.has_value());
        CHECK(rec->summary.first_sequence == known->second.first_sequence);
        CHECK(last >= known->second.last_sequence);
      } else if (!rec || frames == 0) {
        empty_segments.push_back(id);  // nothing to keep: freed, as start-up recovery does
      } else {
        // Open at the crash: closed by recovery where its valid records end, and catalogued (its
        // first sequence is its header's: damage at its start is a span recovery skipped).
        const int camera = stream_camera_.at(rec->summary.stream_id);
        catalog_[id] = {camera, rec->summary.stream_id, rec->summary.first_sequence, last, frames};
      }
    }
    for (auto& cam : cameras_) {
      for (std::uint64_t seq = std::max<std::uint64_t>(1, check_from_[cam.id]); seq <= cam.acked; ++seq) {
        if (reclaimed(cam.id, seq)) continue;
        ++totals_.acked_checked;
        if (!found[cam.id].count(seq)) {
          FAIL("seed " << seed_ << ": camera " << cam.id << " acknowledged frame " << seq << " lost (acked up to "
                       << cam.acked << ", cycle " << totals_.cycles << ")");
        }
      }
    }
    for (auto id : empty_segments) {
      for (const auto& u : std::vector<ExtentUse>((*vol)->segments().at(id))) (void)(*vol)->free_extent(u.extent);
    }
    volume_ = std::move(*vol);
    scheduler_ = std::make_unique<CycleScheduler>(disk_, clock_, model_,
                                                  SchedulerConfig{.cycle = 1s, .chunk_bytes = 16 * 1024}, &clock_);
    for (auto& cam : cameras_) open_stream(cam);
    check_extents_not_shared();
  }

  std::uint64_t seed_;
  std::mt19937_64 rng_;
  VirtualClock clock_;
  SimulatedDisk disk_;
  LinearServiceModel model_{100us, 200e6};
  std::unique_ptr<Volume> volume_;
  std::unique_ptr<CycleScheduler> scheduler_;
  std::array<Camera, kCameras> cameras_;
  std::map<std::uint64_t, int> stream_camera_;
  std::map<std::uint64_t, CatalogSegment> catalog_;  // closed segments, by id (oldest first)
  std::set<std::uint64_t> deleting_;                 // out of the catalog, extents not yet all freed
  std::map<int, std::vector<std::pair<std::uint64_t, std::uint64_t>>> reclaimed_;  // beyond check_from_
  std::map<int, std::uint64_t> check_from_;  // every frame below was reclaimed: not owed any more
  std::uint64_t next_stream_ = 1, next_segment_ = 1;
  std::uint64_t retention_off_ = 0;
  Totals totals_;
};

void simulate(std::uint64_t seed, std::uint64_t cycles) {
  Simulation sim(seed);
  sim.run(cycles);
  const auto& t = sim.totals();
  // The run really exercised what it claims to.
  CHECK(t.io_faults > 0);
  CHECK(t.torn > 0);
  CHECK(t.power_losses > 1);
  CHECK(t.stream_failures > 0);
  CHECK(t.full_spells > 0);
  CHECK(t.reclaimed > 0);
  CHECK(t.acked_checked > 0);
  WARN("seed " << seed << ": " << t.cycles << " cycles, " << t.io_faults << " IO faults, " << t.torn << " torn writes, "
               << t.power_losses << " power losses, " << t.full_spells << " full spells, " << t.stream_failures
               << " stream failures, " << t.reclaimed << " segments reclaimed, " << t.acked_checked
               << " acknowledged frames checked");
}

}  // namespace

TEST_CASE("random faults over 8000 cycles: acknowledged frames survive, extents never shared", "[crash][storage]") {
  for (std::uint64_t seed : {1u, 2u}) simulate(seed, 4'000);
}

TEST_CASE("random faults over 10^6 cycles (soak)", "[.soak][crash][storage]") { simulate(7, 1'000'000); }
