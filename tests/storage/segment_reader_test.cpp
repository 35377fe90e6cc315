// The read path: GOPs read back exactly what was written, time ranges start at the keyframe
// at or before their start, keyframes-only and reverse iteration, the GOP index rebuilt from
// the segment equals the one kept while writing, and a damaged GOP is reported as a gap and
// skipped, never served.
#include <catch2/catch_test_macros.hpp>
#include <algorithm>
#include <random>

#include "storage/segment_reader.hpp"
#include "storage/segment_recovery.hpp"
#include "storage/segment_writer.hpp"
#include "storage/simulated_disk.hpp"

using namespace vigil::storage;

namespace {

constexpr std::int64_t kFrameTicks = 3600;  // 25 fps at 90 kHz
constexpr int kGop = 5;                     // a keyframe every 5 frames

struct Fixture {
  VirtualClock clock;
  SimulatedDisk disk{clock, {.size_bytes = 4 << 20}};
  std::unique_ptr<Volume> vol;
  SegmentSummary summary;
  std::vector<std::vector<std::byte>> payloads;  // by sequence - 1

  explicit Fixture(int frames = 60) {
    REQUIRE(Volume::format(disk, {.extent_bytes = 32 * 1024}).has_value());
    vol = *Volume::open(disk);
    SegmentWriter w(*vol, 3, {.buffer_bytes = 8 * 1024});
    REQUIRE(w.open_segment(1, {}, 1, 0).has_value());
    std::mt19937 rng(5);
    for (int i = 0; i < frames; ++i) {
      RecordHeader h;
      h.sequence = static_cast<std::uint64_t>(i) + 1;
      h.pts = i * kFrameTicks;
      h.dts = h.pts;
      h.duration = kFrameTicks;
      h.flags = i % kGop == 0 ? kRecordKeyframe : 0;
      std::vector<std::byte> p(300 + rng() % 1500);
      for (auto& b : p) b = std::byte(rng());
      if (!w.append(h, p)) {  // the half is full: this cycle's IO, then the frame
        REQUIRE(w.write_cycle().has_value());
        REQUIRE(w.append(h, p).has_value());
      }
      payloads.push_back(std::move(p));
      if (i % 3 == 2) {
        auto wr = w.write_cycle();
        INFO("write_cycle: " << (wr ? "ok" : wr.error().message()) << " at frame " << i);
        REQUIRE(wr.has_value());
      }
    }
    REQUIRE(w.write_cycle().has_value());
    REQUIRE(flush_sync(disk).has_value());
    REQUIRE(w.mark_durable().has_value());
    summary = w.close_segment();
  }

  bool same(const ScannedRecord& r) const {
    const auto& p = payloads.at(r.header.sequence - 1);
    return std::equal(r.payload.begin(), r.payload.end(), p.begin(), p.end());
  }
};

}  // namespace

TEST_CASE("every GOP reads back exactly what was written, across extents", "[reader][storage]") {
  Fixture f;
  REQUIRE(f.summary.extents.size() > 1);  // the data really spans several extents
  SegmentReader reader(*f.vol, f.summary);
  REQUIRE(reader.gop_count() == 12);
  std::uint64_t next = 1;
  for (std::size_t i = 0; i < reader.gop_count(); ++i) {
    auto gop = reader.read_gop(i);
    REQUIRE(gop.has_value());
    REQUIRE(gop->frames.size() == kGop);
    CHECK(gop->frames.front().header.keyframe());
    for (const auto& r : gop->frames) {
      CHECK(r.header.sequence == next++);
      CHECK(f.same(r));
    }
  }
}

TEST_CASE("a time range starts at the keyframe at or before it and stops before its end", "[reader][storage]") {
  Fixture f;
  SegmentReader reader(*f.vol, f.summary);
  std::vector<std::uint64_t> seqs;
  int gaps = 0;
  // From frame 12 (inside the GOP of frames 10..14) to frame 23 (exclusive).
  REQUIRE(reader
              .read_range(
                  {.from_pts = 12 * kFrameTicks, .to_pts = 23 * kFrameTicks},
                  [&](const ScannedRecord& r) { seqs.push_back(r.header.sequence); }, [&](const ReadGap&) { ++gaps; })
              .has_value());
  CHECK(gaps == 0);
  REQUIRE_FALSE(seqs.empty());
  CHECK(seqs.front() == 11);  // frame 10, the keyframe
  CHECK(seqs.back() == 23);   // frame 22
  CHECK(seqs.size() == 13);
}

TEST_CASE("keyframes-only and reverse iteration serve fast-forward and rewind", "[reader][storage]") {
  Fixture f;
  SegmentReader reader(*f.vol, f.summary);
  std::vector<std::int64_t> pts;
  auto collect = [&](const ScannedRecord& r) { pts.push_back(r.header.pts); };
  auto no_gap = [](const ReadGap&) { FAIL("unexpected gap"); };
  REQUIRE(reader.read_range({.from_pts = 0, .to_pts = 60 * kFrameTicks, .keyframes_only = true}, collect, no_gap)
              .has_value());
  CHECK(pts.size() == 12);
  for (std::size_t i = 0; i < pts.size(); ++i) CHECK(pts[i] == static_cast<std::int64_t>(i) * kGop * kFrameTicks);

  pts.clear();
  REQUIRE(
      reader
          .read_range(
              {.from_pts = 0, .to_pts = 60 * kFrameTicks, .keyframes_only = true, .direction = ReadDirection::reverse},
              collect, no_gap)
          .has_value());
  REQUIRE(pts.size() == 12);
  CHECK(pts.front() == 55 * kFrameTicks);
  CHECK(pts.back() == 0);
  CHECK(std::is_sorted(pts.rbegin(), pts.rend()));
}

TEST_CASE("the GOP index rebuilt from the segment equals the one kept while writing", "[reader][storage]") {
  Fixture f;
  auto rec = recover_segment(*f.vol, f.summary.segment_id);
  REQUIRE(rec.has_value());
  CHECK(rec->clean());
  CHECK(rec->summary.gop_index == f.summary.gop_index);
  CHECK(rec->summary.frame_count == f.summary.frame_count);
  CHECK(rec->summary.last_sequence == f.summary.last_sequence);
  CHECK(rec->summary.end_pts == f.summary.end_pts);
  CHECK(rec->summary.end_offset == f.summary.end_offset);
  auto blob = f.summary.gop_index.encode();
  CHECK(GopIndex::decode(blob)->entries().size() == 12);
}

TEST_CASE("a damaged GOP is skipped and reported as a gap, never served", "[reader][storage]") {
  Fixture f;
  SegmentReader reader(*f.vol, f.summary);
  // Flip one byte inside GOP 4 (frames 20..24) on the disk itself.
  const auto& g = f.summary.gop_index.entries()[4];
  const std::uint64_t extent = f.summary.extents[g.offset / f.vol->extent_bytes()];
  const std::uint64_t at = f.vol->extent_offset(extent) + g.offset % f.vol->extent_bytes() + 200;
  AlignedBuffer block(4096);
  REQUIRE(read_sync(f.disk, at / 4096 * 4096, block.span()).has_value());
  block.data()[at % 4096] ^= std::byte{0x01};
  REQUIRE(write_sync(f.disk, at / 4096 * 4096, block.span(), true).has_value());

  CHECK(reader.read_gop(4).error() == vigil::errc::corruption);
  std::vector<std::uint64_t> seqs;
  std::vector<ReadGap> gaps;
  REQUIRE(reader
              .read_range(
                  {.from_pts = 0, .to_pts = 60 * kFrameTicks},
                  [&](const ScannedRecord& r) {
                    CHECK(f.same(r));
                    seqs.push_back(r.header.sequence);
                  },
                  [&](const ReadGap& gap) { gaps.push_back(gap); })
              .has_value());
  REQUIRE(gaps.size() == 1);
  CHECK(gaps[0].from_pts == 20 * kFrameTicks);
  CHECK(gaps[0].to_pts == 25 * kFrameTicks);
  CHECK(seqs.size() == 55);
  CHECK(std::find(seqs.begin(), seqs.end(), 21u) == seqs.end());
  CHECK(std::find(seqs.begin(), seqs.end(), 26u) != seqs.end());
}
