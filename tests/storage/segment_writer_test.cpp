// The segment writer: one aligned write per cycle, policing when a buffer half is full,
// frames out of order refused, extents rolled exactly at their end, and acknowledgement only
// after the flush.
#include <catch2/catch_test_macros.hpp>

#include "storage/segment_recovery.hpp"
#include "storage/segment_writer.hpp"
#include "storage/simulated_disk.hpp"

using namespace vigil::storage;
using vigil::errc;

namespace {

struct Fixture {
  VirtualClock clock;
  SimulatedDisk disk{clock, {.size_bytes = 2 << 20}};
  std::unique_ptr<Volume> vol;
  Fixture() {
    REQUIRE(Volume::format(disk, {.extent_bytes = 32 * 1024}).has_value());
    vol = *Volume::open(disk);
  }
};

RecordHeader frame(std::uint64_t seq, bool key = false) {
  RecordHeader h;
  h.sequence = seq;
  h.pts = static_cast<std::int64_t>(seq) * 3600;
  h.duration = 3600;
  h.flags = key ? kRecordKeyframe : 0;
  return h;
}

}  // namespace

TEST_CASE("a full buffer half refuses frames (policing) instead of dropping them", "[writer][storage]") {
  Fixture f;
  SegmentWriter w(*f.vol, 1, {.buffer_bytes = 8192});
  REQUIRE(w.open_segment(1, {}, 1, 0).has_value());
  std::vector<std::byte> p(3000);
  CHECK(w.append(frame(1, true), p).has_value());
  CHECK(w.append(frame(2), p).has_value());
  auto third = w.append(frame(3), p);  // 3 × 3056 > 8192
  REQUIRE(third.has_error());
  CHECK(third.error() == errc::unavailable);
  REQUIRE(w.write_cycle().has_value());
  CHECK(w.append(frame(3), p).has_value());  // room again in the other half
}

TEST_CASE("a written half gives its pages back at the next append; memory is what the halves hold",
          "[writer][storage]") {
  Fixture f;
  constexpr std::size_t kHalf = 16 * 1024;
  SegmentWriter w(*f.vol, 1, {.buffer_bytes = kHalf});
  REQUIRE(w.open_segment(1, {}, 1, 0).has_value());
  std::vector<std::byte> p(3000, std::byte{7});
  for (std::uint64_t s = 1; s <= 4; ++s) REQUIRE(w.append(frame(s, s == 1), p).has_value());
  // Sealed and being written: the written half keeps its pages until its write is reported.
  auto sealed = w.seal_cycle();
  REQUIRE(sealed.has_value());
  REQUIRE(sealed->has_value());
  const auto held = w.resident_buffer_bytes();
  REQUIRE(write_sync(f.disk, (*sealed)->device_offset, (*sealed)->data, false).has_value());
  w.batch_written({});
  CHECK(w.resident_buffer_bytes() == held);  // not on the IO thread's completion
  // The next append (the network side) gives the written half's pages back.
  REQUIRE(w.append(frame(5), p).has_value());
  CHECK(w.resident_buffer_bytes() <= kHalf);  // the filling half only
  REQUIRE(flush_sync(f.disk).has_value());
  CHECK(w.mark_durable() == std::optional<std::uint64_t>{4});
  // The released half fills again at the next seal, from zeros: its frames are whole too.
  REQUIRE(w.write_cycle().has_value());
  for (std::uint64_t s = 6; s <= 8; ++s) REQUIRE(w.append(frame(s), p).has_value());
  REQUIRE(w.write_cycle().has_value());
  REQUIRE(flush_sync(f.disk).has_value());
  CHECK(w.mark_durable() == std::optional<std::uint64_t>{8});
  const auto summary = w.close_segment();
  CHECK(summary.frame_count == 8);
  auto rec = recover_segment(*f.vol, 1);  // every record's CRC checked
  REQUIRE(rec.has_value());
  CHECK(rec->clean());
  CHECK(rec->summary.frame_count == 8);
}

TEST_CASE("frames out of sequence or larger than a half are refused", "[writer][storage]") {
  Fixture f;
  SegmentWriter w(*f.vol, 1, {.buffer_bytes = 8192});
  REQUIRE(w.open_segment(1, {}, 10, 0).has_value());
  std::vector<std::byte> p(100), huge(9000);
  CHECK(w.append(frame(11), p).error() == errc::invalid_argument);
  CHECK(w.append(frame(10), huge).error() == errc::frame_exceeds_buffer);  // no cycle could ever take it
  CHECK(w.append(frame(10), p).has_value());
}

TEST_CASE("nothing is acknowledged before the flush; everything after it", "[writer][storage]") {
  Fixture f;
  SegmentWriter w(*f.vol, 1, {.buffer_bytes = 8192});
  REQUIRE(w.open_segment(1, {}, 1, 0).has_value());
  std::vector<std::byte> p(500);
  REQUIRE(w.append(frame(1, true), p).has_value());
  REQUIRE(w.append(frame(2), p).has_value());
  CHECK_FALSE(w.mark_durable().has_value());  // nothing written yet
  const auto writes = f.disk.counters().writes;
  REQUIRE(w.write_cycle().has_value());
  CHECK(f.disk.counters().writes == writes + 1);  // the cycle's frames in one write
  REQUIRE(flush_sync(f.disk).has_value());
  CHECK(w.mark_durable() == 2u);
  CHECK(w.durable_sequence() == 2u);
  CHECK_FALSE(w.mark_durable().has_value());  // nothing new
}

TEST_CASE("a batch ending exactly at an extent's end sends the next one to a new extent", "[writer][storage]") {
  Fixture f;
  SegmentWriter w(*f.vol, 1, {.buffer_bytes = 4096});
  REQUIRE(w.open_segment(1, {}, 1, 0).has_value());
  // One record of exactly one block per cycle; extent 0 has 32 KiB - 2 blocks = 6 blocks of data.
  std::vector<std::byte> p(4096 - kRecordHeaderBytes);
  for (std::uint64_t seq = 1; seq <= 10; ++seq) {
    REQUIRE(w.append(frame(seq, seq == 1), p).has_value());
    REQUIRE(w.write_cycle().has_value());
  }
  REQUIRE(flush_sync(f.disk).has_value());
  REQUIRE(w.mark_durable() == 10u);
  auto summary = w.close_segment();
  CHECK(summary.extents.size() == 2);
  auto rec = recover_segment(*f.vol, 1);
  REQUIRE(rec.has_value());
  CHECK(rec->clean());
  CHECK(rec->summary.frame_count == 10);
  CHECK(rec->summary.extents == summary.extents);
}

TEST_CASE("a volume with no free extent refuses a new segment with not_found", "[writer][storage]") {
  Fixture f;
  std::uint64_t n = f.vol->free_extent_count();
  for (std::uint64_t i = 0; i < n; ++i) REQUIRE(f.vol->allocate_extent(100 + i, 1, 0).has_value());
  SegmentWriter w(*f.vol, 1, {.buffer_bytes = 4096});
  CHECK(w.open_segment(1, {}, 1, 0).error() == errc::not_found);
  // Freeing (tombstone first) makes room again, and survives a reopen.
  REQUIRE(f.vol->free_extent(f.vol->segments().begin()->second.front().extent).has_value());
  auto reopened = Volume::open(f.disk);
  REQUIRE(reopened.has_value());
  CHECK((*reopened)->free_extent_count() == 1);
  CHECK(w.open_segment(1, {}, 1, 0).has_value());
}

TEST_CASE("audio, every packet a keyframe, is indexed once per min_gop_spacing_pts", "[writer][storage][audio]") {
  Fixture f;
  // 20 ms audio packets (pts in us), each a keyframe; an index entry at most once a second.
  SegmentWriter w(*f.vol, 1, {.buffer_bytes = 16 * 1024, .min_gop_spacing_pts = 1'000'000});
  REQUIRE(w.open_segment(1, {}, 1, 0).has_value());
  std::vector<std::byte> p(40);               // 151 records in one buffer half
  for (std::uint64_t s = 1; s <= 151; ++s) {  // 0 .. 3.0 s
    RecordHeader h;
    h.sequence = s;
    h.pts = static_cast<std::int64_t>(s - 1) * 20'000;
    h.duration = 20'000;
    h.flags = kRecordKeyframe;
    REQUIRE(w.append(h, p).has_value());
  }
  REQUIRE(w.write_cycle().has_value());
  REQUIRE(flush_sync(f.disk).has_value());
  CHECK(w.mark_durable() == 151u);
  const auto entries = w.current().gop_index.entries();
  REQUIRE(entries.size() == 4);  // 0, 1, 2 and 3 s
  for (std::size_t i = 0; i < entries.size(); ++i) {
    CHECK(entries[i].pts == static_cast<std::int64_t>(i) * 1'000'000);
    CHECK(entries[i].sequence == i * 50 + 1);
  }
  // Without the spacing (video), every keyframe is an entry.
  SegmentWriter video(*f.vol, 2, {.buffer_bytes = 8192});
  REQUIRE(video.open_segment(2, {}, 1, 0).has_value());
  for (std::uint64_t s = 1; s <= 3; ++s) REQUIRE(video.append(frame(s, true), p).has_value());
  REQUIRE(video.write_cycle().has_value());
  REQUIRE(flush_sync(f.disk).has_value());
  CHECK(video.mark_durable() == 3u);
  CHECK(video.current().gop_index.size() == 3);
}
