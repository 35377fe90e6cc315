// Retention and a full disk: the oldest unlocked segments are reclaimed so recording never
// stops; evidence-locked segments survive; per-stream age and byte limits apply; admission is
// refused (not a mid-write failure) when only locked data is left; no orphans remain.
#include <catch2/catch_test_macros.hpp>
#include <set>

#include "storage/retention.hpp"
#include "storage/segment_recovery.hpp"
#include "storage/segment_writer.hpp"
#include "storage/simulated_disk.hpp"
#include "tests/support/script_frames.hpp"

using namespace vigil::storage;
using vigil::errc;
using vigil::Rate;

namespace {
ClosedSegment seg(std::uint64_t id, std::uint64_t stream, std::int64_t start, std::int64_t end,
                  std::uint64_t extents = 1) {
  return {id, stream, start, end, extents};
}
}  // namespace

TEST_CASE("the oldest unlocked segments are chosen to restore the reserve", "[retention]") {
  RetentionPolicy policy{.reserve_seconds = 10};
  RetentionInput in;
  in.closed = {seg(3, 1, 300, 400), seg(1, 1, 100, 200), seg(2, 2, 150, 250), seg(4, 1, 500, 600)};
  in.locks = {{1, 120, 130}};  // covers segment 1
  in.extent_bytes = 1000;
  in.admitted_ingest = Rate::from_Bps(300);  // 10 s reserve = 3000 B = 3 extents
  in.free_extents = 1;
  auto chosen = choose_reclaim(policy, in);
  CHECK(chosen == std::vector<std::uint64_t>{2, 3});  // 1 is locked; 2 and 3 are the oldest others
  in.free_extents = 3;
  CHECK(choose_reclaim(policy, in).empty());
}

TEST_CASE("per-stream age and byte limits reclaim without space pressure", "[retention]") {
  RetentionPolicy policy;
  policy.per_stream[1] = {.max_age_us = 1000};
  policy.per_stream[2] = {.max_extents = 2};
  RetentionInput in;
  in.closed = {seg(1, 1, 0, 500), seg(2, 1, 500, 5000), seg(3, 2, 0, 10), seg(4, 2, 10, 20), seg(5, 2, 20, 30)};
  in.extent_bytes = 1 << 20;
  in.free_extents = 100;
  in.now_us = 5000;
  auto chosen = choose_reclaim(policy, in);
  CHECK(chosen == std::vector<std::uint64_t>{1, 3});  // 1 is too old; stream 2 keeps its newest 2
}

TEST_CASE("admission is refused when only locked data would be left", "[retention]") {
  RetentionPolicy policy{.reserve_seconds = 10};
  RetentionInput in;
  in.closed = {seg(1, 1, 0, 100, 5), seg(2, 1, 100, 200, 5)};
  in.extent_bytes = 1000;
  in.free_extents = 0;
  in.admitted_ingest = Rate::from_Bps(400);  // needs 4 extents of reserve
  CHECK(space_admission_check(policy, in, Rate::from_Bps(100)).has_value());
  in.locks = {{1, 0, 1000}};  // everything is evidence now
  auto r = space_admission_check(policy, in, Rate::from_Bps(100));
  REQUIRE(r.has_error());
  CHECK(r.error() == errc::admission_refused);
}

TEST_CASE("a full disk keeps recording by reclaiming; locked segments survive; no orphans", "[retention][storage]") {
  VirtualClock clock;
  SimulatedDisk disk(clock, {.size_bytes = 2 << 20});
  REQUIRE(Volume::format(disk, {.extent_bytes = 64 * 1024}).has_value());
  auto vol = *Volume::open(disk);
  const std::uint64_t capacity_extents = vol->extent_count();

  constexpr int kStreams = 2;
  std::vector<std::unique_ptr<SegmentWriter>> writers;
  std::vector<std::uint64_t> next_seq(kStreams + 1, 1);
  std::vector<std::int64_t> segment_start(kStreams + 1, 0);
  std::uint64_t next_segment = 1;
  for (int s = 1; s <= kStreams; ++s) {
    writers.push_back(std::make_unique<SegmentWriter>(*vol, s,
                                                      SegmentWriterOptions{.buffer_bytes = 16 * 1024,
                                                                           .max_segment_bytes = 40 * 1024}));
    REQUIRE(writers.back()->open_segment(next_segment++, {}, 1, 0).has_value());
  }
  RetentionPolicy policy{.reserve_seconds = 4};
  std::vector<ClosedSegment> closed;
  std::vector<EvidenceLock> locks;
  std::uint64_t locked_segment = 0, reclaimed = 0, bytes_written = 0;
  const Rate ingest = Rate::from_Bps(kStreams * 12'000);  // ~12 KB per stream per cycle (1 s)

  for (int cycle = 1; bytes_written < 10 * capacity_extents * 64 * 1024; ++cycle) {
    // Retention runs before the cycle's IO, in the leftover time (background work).
    RetentionInput in{closed, locks, vol->free_extent_count(), vol->extent_bytes(), ingest, cycle * 1'000'000LL};
    for (auto id : choose_reclaim(policy, in)) {
      REQUIRE(reclaim_segment(*vol, id).has_value());
      std::erase_if(closed, [&](const ClosedSegment& c) { return c.segment_id == id; });
      ++reclaimed;
    }
    for (int s = 1; s <= kStreams; ++s) {
      auto& w = *writers[s - 1];
      for (int k = 0; k < 3; ++k) {
        auto f = vigil::test::script_frame(next_seq[s], s);
        if (!w.append(f.header, f.payload)) break;
        bytes_written += f.payload.size();
        ++next_seq[s];
      }
      REQUIRE(w.write_cycle().has_value());  // never fails: retention keeps room
    }
    REQUIRE(flush_sync(disk).has_value());
    for (int s = 1; s <= kStreams; ++s) {
      auto& w = *writers[s - 1];
      w.mark_durable();
      if (w.segment_full()) {
        auto summary = w.close_segment();
        const std::int64_t now = cycle * 1'000'000LL;
        closed.push_back(
            {summary.segment_id, static_cast<std::uint64_t>(s), segment_start[s], now, summary.extents.size()});
        // An operator locks the first closed segment of stream 1 as evidence.
        if (s == 1 && locks.empty()) {
          locks.push_back({1, segment_start[s], now});
          locked_segment = summary.segment_id;
        }
        segment_start[s] = now;
        REQUIRE(w.open_segment(next_segment++, {}, next_seq[s], now).has_value());
      }
    }
  }
  CHECK(reclaimed > capacity_extents);  // the disk really turned over many times
  // The locked segment is intact.
  REQUIRE(locked_segment != 0);
  std::uint64_t bad = 0, frames = 0;
  auto rec = recover_segment(*vol, locked_segment, [&](const ScannedRecord& r) {
    ++frames;
    bad += vigil::test::matches_script(r.header, r.payload) ? 0 : 1;
  });
  REQUIRE(rec.has_value());
  CHECK(rec->clean());
  CHECK(frames > 0);
  CHECK(bad == 0);
  // No orphans: what the volume holds is exactly the closed segments plus the open ones.
  std::set<std::uint64_t> expected;
  for (const auto& c : closed) expected.insert(c.segment_id);
  for (auto& w : writers) expected.insert(w->current().segment_id);
  auto reopened = Volume::open(disk);
  REQUIRE(reopened.has_value());
  std::set<std::uint64_t> on_disk;
  for (const auto& [id, uses] : (*reopened)->segments()) on_disk.insert(id);
  CHECK(on_disk == expected);
}

TEST_CASE("segments over their camera's byte quota go without space pressure, never a locked one", "[retention]") {
  RetentionPolicy policy;
  RetentionInput in;
  in.closed = {seg(1, 1, 0, 10), seg(2, 1, 10, 20), seg(3, 1, 20, 30)};
  in.closed[0].over_quota = true;
  in.closed[1].over_quota = true;
  in.extent_bytes = 1 << 20;
  in.free_extents = 100;
  in.locks = {{1, 12, 15}};  // segment 2 is evidence
  CHECK(choose_reclaim(policy, in) == std::vector<std::uint64_t>{1});
}
