// The volume check: clean volumes pass; damage in the middle of a segment is named with its
// segment and offsets; a torn tail is told apart (informational); an unreadable segment
// header is reported and reclaimed by repair.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cstring>

#include "storage/fsck.hpp"
#include "storage/segment_writer.hpp"
#include "storage/simulated_disk.hpp"
#include "tests/support/script_frames.hpp"

using namespace vigil::storage;

namespace {

struct Fixture {
  VirtualClock clock;
  SimulatedDisk disk{clock, {.size_bytes = 2 << 20}};
  std::unique_ptr<Volume> vol;
  SegmentSummary summary;
  Fixture() {
    REQUIRE(Volume::format(disk, {.extent_bytes = 64 * 1024}).has_value());
    vol = *Volume::open(disk);
    SegmentWriter w(*vol, 9, {.buffer_bytes = 16 * 1024});
    REQUIRE(w.open_segment(1, {}, 1, 0).has_value());
    for (std::uint64_t seq = 1; seq <= 40; ++seq) {
      auto f = vigil::test::script_frame(seq, 9);
      if (!w.append(f.header, f.payload)) {
        REQUIRE(w.write_cycle().has_value());
        REQUIRE(w.append(f.header, f.payload).has_value());
      }
    }
    REQUIRE(w.write_cycle().has_value());
    REQUIRE(flush_sync(disk).has_value());
    w.mark_durable();
    summary = w.close_segment();
  }
  // Flips one byte at logical offset L of the segment, on the disk.
  void flip(std::uint64_t logical) {
    const std::uint64_t at =
        vol->extent_offset(summary.extents[logical / vol->extent_bytes()]) + logical % vol->extent_bytes();
    AlignedBuffer b(4096);
    REQUIRE(read_sync(disk, at / 4096 * 4096, b.span()).has_value());
    b.data()[at % 4096] ^= std::byte{0x20};
    REQUIRE(write_sync(disk, at / 4096 * 4096, b.span(), true).has_value());
  }
};

}  // namespace

TEST_CASE("fsck passes a clean volume and counts what it checked", "[fsck][storage]") {
  Fixture f;
  auto r = check_volume(*f.vol);
  REQUIRE(r.has_value());
  CHECK(r->problems.empty());
  CHECK(r->segments == 1);
  CHECK(r->records == 40);
}

TEST_CASE("fsck names the segment and offset of damage in the middle of a segment", "[fsck][storage]") {
  Fixture f;
  const auto& gop = f.summary.gop_index.entries()[1];
  f.flip(gop.offset + 100);
  auto r = check_volume(*f.vol);
  REQUIRE(r.has_value());
  REQUIRE(r->problems.size() == 1);
  const auto& p = r->problems[0];
  CHECK(p.kind == ProblemKind::damaged_records);
  CHECK(p.segment_id == 1);
  CHECK(p.stream_id == 9);
  CHECK(p.logical_offset == gop.offset);  // the record holding the flipped byte
  CHECK(p.resumes_at > p.logical_offset);
  CHECK(r->serious() == 1);
  CHECK_THAT(p.describe(), Catch::Matchers::ContainsSubstring("segment 1"));
}

TEST_CASE("fsck reports a torn tail as an unclean stop, not as lost data", "[fsck][storage]") {
  Fixture f;
  // What a crash mid-write leaves: the next batch's first record, cut short, after the last
  // valid one.
  const std::uint64_t end = f.summary.end_offset;
  REQUIRE(end % f.vol->extent_bytes() != 0);
  auto next = vigil::test::script_frame(41, 9);
  AlignedBuffer b(8192);
  encode_record(b.span().first(kRecordHeaderBytes + next.payload.size()), next.header, next.payload);
  std::memset(b.data() + 2000, 0, b.size() - 2000);  // only the first 2000 bytes reached the disk
  const std::uint64_t at =
      f.vol->extent_offset(f.summary.extents[end / f.vol->extent_bytes()]) + end % f.vol->extent_bytes();
  REQUIRE(write_sync(f.disk, at, b.span().first(4096), true).has_value());
  auto r = check_volume(*f.vol);
  REQUIRE(r.has_value());
  REQUIRE(r->problems.size() == 1);
  CHECK(r->problems[0].kind == ProblemKind::torn_tail);
  CHECK(r->problems[0].logical_offset == end);
  CHECK(r->serious() == 0);
}

TEST_CASE("fsck --repair reclaims a segment whose header is unreadable", "[fsck][storage]") {
  Fixture f;
  f.flip(4096 + 20);  // inside the segment header (block 1 of extent 0)
  auto r = check_volume(*f.vol);
  REQUIRE(r.has_value());
  REQUIRE(r->problems.size() == 1);
  CHECK(r->problems[0].kind == ProblemKind::segment_header);
  const auto free_before = f.vol->free_extent_count();
  auto fixed = repair_volume(*f.vol, *r);
  REQUIRE(fixed.has_value());
  CHECK(*fixed == 1);
  CHECK(f.vol->free_extent_count() == free_before + f.summary.extents.size());
  CHECK(check_volume(*f.vol)->problems.empty());
}

TEST_CASE("fsck reads on past damage: each damaged span of a segment is named", "[fsck][storage]") {
  Fixture f;
  const auto& gops = f.summary.gop_index.entries();
  REQUIRE(gops.size() >= 4);
  f.flip(gops[1].offset + 100);
  f.flip(gops[3].offset + 100);
  auto r = check_volume(*f.vol);
  REQUIRE(r.has_value());
  REQUIRE(r->problems.size() == 2);
  CHECK(r->problems[0].kind == ProblemKind::damaged_records);
  CHECK(r->problems[0].logical_offset == gops[1].offset);
  CHECK(r->problems[1].kind == ProblemKind::damaged_records);
  CHECK(r->problems[1].logical_offset == gops[3].offset);
  CHECK(r->records == 38);  // every record but the two damaged ones was read and verified
}
