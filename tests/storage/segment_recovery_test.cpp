// Recovery of a segment from the volume alone, on a real O_DIRECT file volume: damage in the
// middle of a segment is skipped by resynchronising on the next valid record, the damaged span
// names exactly the frames lost, and everything after it stays in the segment (frames, end,
// GOP index) and playable; damage with nothing valid after it is a torn tail, not a damaged
// span; stale records of an earlier use of an extent are never adopted.
#include <catch2/catch_test_macros.hpp>
#include <algorithm>
#include <cstring>
#include <map>

#include "storage/file_device.hpp"
#include "storage/retention.hpp"
#include "storage/segment_reader.hpp"
#include "storage/segment_recovery.hpp"
#include "tests/support/script_frames.hpp"
#include "tests/support/segment_fixture.hpp"
#include "tests/support/temp_dir.hpp"

using namespace vigil::storage;

namespace {

constexpr std::uint64_t kStream = 9;
constexpr std::uint64_t kFrames = 120;   // script frames 1..120: ~400 KiB, several 64 KiB extents
constexpr std::int64_t kFrameUs = 3600;  // script frame SEQ: pts SEQ * 3600, duration 3600

struct FileVolume {
  vigil::test::TempDir dir;
  std::unique_ptr<FileDevice> dev;
  std::unique_ptr<Volume> vol;
  SegmentSummary written;
  std::map<std::uint64_t, std::uint64_t> offset_of;  // sequence -> logical offset of its record

  FileVolume() {
    auto d = FileDevice::open(dir.path() / "vol", {.create_bytes = 8 << 20});
    REQUIRE(d.has_value());
    dev = std::move(*d);
    REQUIRE(Volume::format(*dev, {.extent_bytes = 64 * 1024}).has_value());
    vol = *Volume::open(*dev);
    written = vigil::test::write_script_segment(*vol, 1, kStream, kFrames);
    REQUIRE(written.extents.size() >= 4);
    auto pristine = recover_segment(*vol, 1, [&](const ScannedRecord&) {});
    REQUIRE(pristine.has_value());
    REQUIRE(pristine->damaged.empty());
    REQUIRE(pristine->summary.frame_count == kFrames);
    // Logical offsets, from the writer's layout: extent by extent, as the scan walks them.
    std::uint64_t ordinal = 0;
    recover_segment(*vol, 1, [&](const ScannedRecord& r) {
      if (!offset_of.empty() && r.offset < offset_of.rbegin()->second % vol->extent_bytes()) ++ordinal;
      offset_of[r.header.sequence] = ordinal * vol->extent_bytes() + r.offset;
    });
    REQUIRE(offset_of.size() == kFrames);
  }
  std::uint64_t device_offset(std::uint64_t logical) const {
    return vol->extent_offset(written.extents[logical / vol->extent_bytes()]) + logical % vol->extent_bytes();
  }
  // Flips one byte at logical offset L of the segment, on the file.
  void flip(std::uint64_t logical) {
    const std::uint64_t at = device_offset(logical);
    AlignedBuffer b(4096);
    REQUIRE(read_sync(*dev, at / 4096 * 4096, b.span()).has_value());
    b.data()[at % 4096] ^= std::byte{0x5a};
    REQUIRE(write_sync(*dev, at / 4096 * 4096, b.span(), true).has_value());
  }
};

}  // namespace

TEST_CASE("recovery skips damage in the middle of a segment and keeps what follows", "[recovery][storage]") {
  FileVolume f;
  // A frame in the middle of the segment and of a batch: neither it nor the next starts one.
  std::uint64_t hit = 50;
  const auto aligned = [&](std::uint64_t seq) { return f.offset_of[seq] % f.vol->block_bytes() == 0; };
  while (aligned(hit) || aligned(hit + 1)) ++hit;
  REQUIRE(hit < 90);
  f.flip(f.offset_of[hit] + kRecordHeaderBytes + 10);  // inside its payload: a CRC mismatch
  // The scan picks up again at the very next record, in the middle of the same batch.
  const std::uint64_t resume = hit + 1;

  auto rec = recover_segment(*f.vol, 1);
  REQUIRE(rec.has_value());
  // Exactly frames hit..resume-1 are lost; everything after is kept.
  REQUIRE(rec->damaged.size() == 1);
  const auto& d = rec->damaged[0];
  CHECK(d.stop == ScanStop::bad_crc);
  CHECK(d.first_sequence == hit);
  CHECK(d.last_sequence == resume - 1);
  CHECK(d.from_offset == f.offset_of[hit]);
  CHECK(d.to_offset == f.offset_of[resume]);
  CHECK(d.from_pts == static_cast<std::int64_t>(hit) * kFrameUs);  // end of frame hit-1
  CHECK(d.to_pts == static_cast<std::int64_t>(resume) * kFrameUs);
  CHECK(rec->clean());
  const auto& s = rec->summary;
  CHECK(s.frame_count == kFrames - (resume - hit));
  CHECK(s.last_sequence == kFrames);
  CHECK(s.end_pts == f.written.end_pts);
  CHECK(s.end_offset == f.written.end_offset);
  CHECK(s.extents == f.written.extents);
  // The GOP index has every keyframe the damage spared.
  std::vector<std::uint64_t> keys;
  for (const auto& g : s.gop_index.entries()) keys.push_back(g.sequence);
  std::vector<std::uint64_t> want;
  for (const auto& g : f.written.gop_index.entries()) {
    if (g.sequence < hit || g.sequence >= resume) want.push_back(g.sequence);
  }
  CHECK(keys == want);

  // Playback of the recovered segment skips the GOP holding the damage, reported as a gap, and
  // serves every frame of the GOPs after it, byte for byte.
  SegmentReader reader(*f.vol, s);
  std::vector<std::uint64_t> served;
  std::vector<ReadGap> gaps;
  auto r = reader.read_range(
      {.from_pts = 0, .to_pts = s.end_pts + 1},
      [&](const ScannedRecord& fr) {
        CHECK(vigil::test::matches_script(fr.header, fr.payload));
        served.push_back(fr.header.sequence);
      },
      [&](const ReadGap& g) { gaps.push_back(g); });
  REQUIRE(r.has_value());
  REQUIRE(gaps.size() == 1);
  CHECK(gaps[0].from_pts <= d.from_pts - kFrameUs);  // the damaged GOP starts at or before frame hit
  CHECK(gaps[0].to_pts >= d.to_pts);
  REQUIRE(!served.empty());
  CHECK(served.back() == kFrames);
  const std::uint64_t first_key_after = want[std::upper_bound(want.begin(), want.end(), hit) - want.begin()];
  for (std::uint64_t seq = first_key_after; seq <= kFrames; ++seq) {
    CHECK(std::count(served.begin(), served.end(), seq) == 1);
  }
}

TEST_CASE("recovery resynchronises in a later extent when the rest of an extent is damaged", "[recovery][storage]") {
  FileVolume f;
  const std::uint64_t eb = f.vol->extent_bytes();
  // The last frame of the first extent: nothing valid follows it in that extent.
  std::uint64_t last_in_first = 0;
  for (const auto& [seq, off] : f.offset_of) {
    if (off < eb) last_in_first = seq;
  }
  f.flip(f.offset_of[last_in_first] + 3);  // its magic: not a record any more
  auto rec = recover_segment(*f.vol, 1);
  REQUIRE(rec.has_value());
  REQUIRE(rec->damaged.size() == 1);
  CHECK(rec->damaged[0].stop == ScanStop::bad_magic);
  CHECK(rec->damaged[0].first_sequence == last_in_first);
  CHECK(rec->damaged[0].last_sequence == last_in_first);
  CHECK(rec->damaged[0].to_offset == f.offset_of[last_in_first + 1]);
  CHECK(rec->damaged[0].to_offset / eb == 1);
  CHECK(rec->summary.frame_count == kFrames - 1);
  CHECK(rec->summary.end_offset == f.written.end_offset);
}

TEST_CASE("a torn tail after a crash is the end of the segment, not damage", "[recovery][storage]") {
  vigil::test::TempDir dir;
  auto dev = *FileDevice::open(dir.path() / "vol", {.create_bytes = 8 << 20});
  REQUIRE(Volume::format(*dev, {.extent_bytes = 64 * 1024}).has_value());
  auto vol = *Volume::open(*dev);
  const auto open = vigil::test::write_script_segment(*vol, 1, kStream, 30, 16 * 1024, /*close=*/false);
  // What a crash mid-write leaves: the next batch's first record, cut short.
  auto next = vigil::test::script_frame(31, kStream);
  AlignedBuffer b(8192);
  encode_record(b.span().first(kRecordHeaderBytes + next.payload.size()), next.header, next.payload);
  std::memset(b.data() + 1500, 0, b.size() - 1500);
  const std::uint64_t end = open.end_offset;
  const std::uint64_t at = vol->extent_offset(open.extents[end / vol->extent_bytes()]) + end % vol->extent_bytes();
  REQUIRE(write_sync(*dev, at, b.span().first(4096), true).has_value());

  auto rec = recover_segment(*vol, 1);
  REQUIRE(rec.has_value());
  CHECK(rec->damaged.empty());
  CHECK_FALSE(rec->clean());
  CHECK(rec->stop_offset == end);
  CHECK(rec->summary.frame_count == 30);
  CHECK(rec->summary.end_offset == end);
}

TEST_CASE("stale records of an earlier use of an extent are never adopted", "[recovery][storage]") {
  vigil::test::TempDir dir;
  auto dev = *FileDevice::open(dir.path() / "vol", {.create_bytes = 8 << 20});
  REQUIRE(Volume::format(*dev, {.extent_bytes = 64 * 1024}).has_value());
  auto vol = *Volume::open(*dev);
  // Segment 1 fills extents with frames 1..120 of the stream; retention reclaims it.
  const auto old = vigil::test::write_script_segment(*vol, 1, kStream, kFrames);
  REQUIRE(reclaim_segment(*vol, 1).has_value());
  // Segment 2 of the same stream reuses the first of those extents for a few frames with
  // higher sequences, then a crash: the old frames after its end are still on the disk.
  SegmentWriter w(*vol, kStream, {.buffer_bytes = 16 * 1024});
  REQUIRE(w.open_segment(2, {}, 500, 0).has_value());
  for (std::uint64_t seq = 500; seq < 504; ++seq) {
    auto f = vigil::test::script_frame(seq, kStream);
    if (!w.append(f.header, f.payload)) {  // the half is full: this cycle's IO, then the frame
      REQUIRE(w.write_cycle().has_value());
      REQUIRE(w.append(f.header, f.payload).has_value());
    }
  }
  REQUIRE(w.write_cycle().has_value());
  REQUIRE(flush_sync(*dev).has_value());
  w.mark_durable();
  const auto fresh = w.current();
  REQUIRE(fresh.extents.front() == old.extents.front());
  vol = *Volume::open(*dev);

  auto rec = recover_segment(*vol, 2);
  REQUIRE(rec.has_value());
  CHECK(rec->damaged.empty());
  CHECK(rec->summary.frame_count == 4);
  CHECK(rec->summary.last_sequence == 503);
  CHECK(rec->summary.end_offset == fresh.end_offset);
}
