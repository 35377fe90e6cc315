// Playback through the cycle scheduler: a recorded segment (spanning several extents) is served
// GOP by GOP exactly as written, never more than the per-cycle budget (bar one GOP), with the
// double buffer holding back IO while the viewer has not drained; keyframes-only and reverse
// read just the keyframes; a damaged GOP becomes a gap, never served.
#include <catch2/catch_test_macros.hpp>
#include <algorithm>
#include <random>

#include "storage/cycle_scheduler.hpp"
#include "storage/playback_stream.hpp"
#include "storage/segment_writer.hpp"
#include "storage/simulated_disk.hpp"

using namespace vigil::storage;
using namespace std::chrono_literals;

namespace {

constexpr std::int64_t kFrameUs = 40'000;  // 25 fps, pts in microseconds
constexpr int kGop = 10;

struct Rig {
  VirtualClock clock;
  SimulatedDisk disk{clock, {.size_bytes = 16 << 20}};
  std::unique_ptr<Volume> vol;
  SegmentSummary summary;
  std::vector<std::vector<std::byte>> payloads;  // by sequence - 1
  LinearServiceModel model{1ms, 100e6};

  explicit Rig(int frames = 100, int big_keyframe = -1) {
    REQUIRE(Volume::format(disk, {.extent_bytes = 64 * 1024}).has_value());
    vol = *Volume::open(disk);
    SegmentWriter w(*vol, 7, {.buffer_bytes = 32 * 1024});
    REQUIRE(w.open_segment(1, {}, 1, 0).has_value());
    std::mt19937 rng(11);
    for (int i = 0; i < frames; ++i) {
      RecordHeader h;
      h.sequence = static_cast<std::uint64_t>(i) + 1;
      h.pts = i * kFrameUs;
      h.dts = h.pts;
      h.duration = kFrameUs;
      h.flags = i % kGop == 0 ? kRecordKeyframe : 0;
      std::vector<std::byte> p(i == big_keyframe ? 24'000 : i % kGop == 0 ? 6000 + rng() % 2000 : 2000 + rng() % 1000);
      for (auto& b : p) b = std::byte(rng());
      if (!w.append(h, p)) {
        REQUIRE(w.write_cycle().has_value());
        REQUIRE(w.append(h, p).has_value());
      }
      payloads.push_back(std::move(p));
      if (i % 4 == 3) REQUIRE(w.write_cycle().has_value());
    }
    REQUIRE(w.write_cycle().has_value());
    REQUIRE(flush_sync(disk).has_value());
    REQUIRE(w.mark_durable().has_value());
    summary = w.close_segment();
  }

  PlaybackSegment segment() const {
    PlaybackSegment s{.segment_id = summary.segment_id,
                      .stream_id = summary.stream_id,
                      .extent_bytes = vol->extent_bytes(),
                      .end_offset = summary.end_offset,
                      .end_pts = summary.end_pts,
                      .gops = summary.gop_index};
    for (auto e : summary.extents) s.extent_offsets.push_back(vol->extent_offset(e));
    return s;
  }

  bool same(const ScannedRecord& r) const {
    const auto& p = payloads.at(r.header.sequence - 1);
    return std::equal(r.payload.begin(), r.payload.end(), p.begin(), p.end());
  }
};

// Runs cycles, draining the stream after each, until it is done; returns the frames' sequences.
std::vector<std::uint64_t> play(Rig& rig, PlaybackStream& ps, int max_cycles = 200, std::size_t* gaps = nullptr,
                                std::uint64_t* max_cycle_bytes = nullptr) {
  CycleScheduler sched(rig.disk, rig.clock, rig.model, {.cycle = 100ms, .chunk_bytes = 64 * 1024}, &rig.clock);
  sched.add_stream(1, ps, rig.clock.now());
  std::vector<std::uint64_t> seqs;
  std::uint64_t last_read = 0;
  for (int c = 0; c < max_cycles && !ps.done(); ++c) {
    sched.run_cycle();
    if (max_cycle_bytes) *max_cycle_bytes = std::max(*max_cycle_bytes, ps.bytes_read() - last_read);
    last_read = ps.bytes_read();
    while (auto g = ps.pop()) {
      if (g->damaged) {
        if (gaps) ++*gaps;
        continue;
      }
      for (const auto& f : g->frames) {
        REQUIRE(rig.same(f));
        seqs.push_back(f.header.sequence);
      }
    }
  }
  REQUIRE(ps.done());
  REQUIRE_FALSE(ps.error());
  return seqs;
}

}  // namespace

TEST_CASE("playback serves a range GOP by GOP, exactly as written, within its cycle budget", "[playback][storage]") {
  Rig rig;
  REQUIRE(rig.summary.extents.size() > 2);
  const std::size_t budget = 16 * 1024;
  int ready_calls = 0;
  PlaybackStream ps({rig.segment()}, {.from_pts = 25 * kFrameUs, .to_pts = 75 * kFrameUs}, budget, 4096,
                    [&] { ++ready_calls; });
  std::uint64_t max_cycle = 0;
  const auto seqs = play(rig, ps, 200, nullptr, &max_cycle);
  // From the keyframe at or before 25 (frame 20) up to frame 74.
  REQUIRE(seqs.size() == 55);
  CHECK(seqs.front() == 21);
  CHECK(seqs.back() == 75);
  CHECK(std::is_sorted(seqs.begin(), seqs.end()));
  CHECK(ready_calls > 0);
  // One GOP is ~33 KB: a cycle reads at most the budget plus block rounding of one GOP.
  CHECK(max_cycle <= budget + 2 * 4096 + 40 * 1024);
}

TEST_CASE("a viewer that does not drain holds the stream's reads back (double buffer)", "[playback][storage]") {
  Rig rig;
  PlaybackStream ps({rig.segment()}, {.from_pts = 0, .to_pts = 100 * kFrameUs}, 16 * 1024, 4096);
  CycleScheduler sched(rig.disk, rig.clock, rig.model, {.cycle = 100ms, .chunk_bytes = 64 * 1024}, &rig.clock);
  sched.add_stream(1, ps, rig.clock.now());
  for (int c = 0; c < 20; ++c) sched.run_cycle();
  // Nobody popped: reading stopped once a cycle's worth was waiting.
  const auto held = ps.bytes_read();
  CHECK(held >= 16 * 1024);
  CHECK(held < 3 * 16 * 1024 + 4 * 4096);
  CHECK_FALSE(ps.done());
  CHECK(sched.totals().misses == 0);
  while (ps.pop()) {}
  sched.run_cycle();
  CHECK(ps.bytes_read() > held);
}

TEST_CASE("keyframes-only and reverse read only the keyframes", "[playback][storage]") {
  Rig rig;
  SECTION("forward fast-forward") {
    PlaybackStream ps({rig.segment()}, {.from_pts = 0, .to_pts = 100 * kFrameUs, .keyframes_only = true}, 64 * 1024,
                      4096);
    const auto seqs = play(rig, ps);
    CHECK(seqs == std::vector<std::uint64_t>{1, 11, 21, 31, 41, 51, 61, 71, 81, 91});
    // After the first GOP (read whole to learn the keyframe size) only ~keyframes are read.
    std::uint64_t all = rig.summary.end_offset;
    CHECK(ps.bytes_read() < all * 3 / 4);
  }
  SECTION("a keyframe larger than the estimate is read again whole") {
    Rig big(100, 50);
    PlaybackStream ps({big.segment()}, {.from_pts = 0, .to_pts = 100 * kFrameUs, .keyframes_only = true}, 64 * 1024,
                      4096);
    const auto seqs = play(big, ps);
    CHECK(seqs == std::vector<std::uint64_t>{1, 11, 21, 31, 41, 51, 61, 71, 81, 91});
  }
  SECTION("reverse") {
    PlaybackStream ps({rig.segment()},
                      {.from_pts = 15 * kFrameUs, .to_pts = 65 * kFrameUs, .direction = ReadDirection::reverse},
                      64 * 1024, 4096);
    const auto seqs = play(rig, ps);
    CHECK(seqs == std::vector<std::uint64_t>{61, 51, 41, 31, 21, 11});
  }
}

TEST_CASE("a damaged GOP is a gap, the rest still plays", "[playback][storage]") {
  Rig rig;
  // Corrupt a byte inside GOP 3 (frames 31..40): its keyframe's payload.
  auto seg = rig.segment();
  const auto off = seg.gops.entries()[3].offset + kRecordHeaderBytes + 100;
  const auto dev = seg.extent_offsets[off / seg.extent_bytes] + off % seg.extent_bytes;
  AlignedBuffer b(4096, 4096);
  const auto base = dev / 4096 * 4096;
  REQUIRE(read_sync(rig.disk, base, b.span()).has_value());
  b.data()[dev - base] ^= std::byte{0x5a};
  REQUIRE(write_sync(rig.disk, base, b.span(), true).has_value());
  REQUIRE(flush_sync(rig.disk).has_value());

  PlaybackStream ps({seg}, {.from_pts = 0, .to_pts = 100 * kFrameUs}, 32 * 1024, 4096);
  std::size_t gaps = 0;
  const auto seqs = play(rig, ps, 200, &gaps);
  CHECK(gaps == 1);
  CHECK(seqs.size() == 90);
  CHECK(std::find(seqs.begin(), seqs.end(), 31) == seqs.end());
}

TEST_CASE("a range starting inside the last GOP serves that GOP (a live tail re-reading its end)",
          "[playback][storage]") {
  Rig rig;
  PlaybackStream ps({rig.segment()}, {.from_pts = 99 * kFrameUs + 1, .to_pts = 200 * kFrameUs}, 16 * 1024, 4096);
  std::size_t gaps = 0;
  const auto seqs = play(rig, ps, 200, &gaps);
  CHECK(gaps == 0);
  REQUIRE(seqs.size() == 10);
  CHECK(seqs.front() == 91);
  CHECK(seqs.back() == 100);
}

TEST_CASE("no second read while the first is in flight (a first IO still queued when the next cycle starts)",
          "[playback][storage]") {
  Rig rig;
  PlaybackStream ps({rig.segment()}, {.from_pts = 0, .to_pts = 100 * kFrameUs}, 16 * 1024, 4096);
  auto first = ps.prepare(0);
  REQUIRE(!first.pieces.empty());
  // The scheduler starts the next cycle before the first read completed: nothing more is read,
  // or it would be handed over with the first one, unread, and land later in freed buffers.
  const auto second = ps.prepare(1);
  CHECK(second.pieces.empty());
  CHECK(std::string(second.skip_reason) == "previous_read_pending");
  for (auto& p : first.pieces) REQUIRE(read_sync(rig.disk, p.offset, p.buf).has_value());
  ps.finished(0, {});
  std::size_t frames = 0;
  while (auto g = ps.pop()) {
    REQUIRE_FALSE(g->damaged);
    for (const auto& f : g->frames) {
      REQUIRE(rig.same(f));
      ++frames;
    }
  }
  CHECK(frames > 0);
  CHECK(!ps.prepare(2).pieces.empty());  // and then the next batch
}
