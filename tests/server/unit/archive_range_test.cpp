// Which bytes of an archived segment's object a read fetches (server/disks/archive_reads.hpp):
// the GOP walk (storage::PlaybackStream) over a segment laid out as its object
// (catalog::lay_out_as_object) asks only for the GOPs of the range, and range_gets turns its
// pieces into Range GETs of exactly those bytes — one GET where a GOP crosses an extent header,
// clipped to the object's end, never a segment's other GOPs.
#include <catch2/catch_test_macros.hpp>

#include "catalog/playback_rows.hpp"
#include "server/disks/archive_reads.hpp"
#include "storage/playback_stream.hpp"

using namespace vigil;

namespace {

constexpr std::uint64_t kExtent = 64 * 1024, kBlock = 4096, kBytes = 210'000;

// Four GOPs, one a second: at 8192 (after the headers), 40000, 70000 (past extent 1's header at
// 65536..69631) and 150000; the data ends at 210000, in extent 3 (its data from 200704).
storage::PlaybackSegment segment(std::size_t slot) {
  storage::PlaybackSegment seg;
  seg.segment_id = 7;
  seg.stream_id = 3;
  seg.extent_bytes = kExtent;
  seg.end_offset = kBytes;
  seg.end_pts = 4'000'000;
  const std::uint64_t offsets[] = {8192, 40000, 70000, 150000};
  for (std::uint64_t i = 0; i < 4; ++i) {
    seg.gops.add({.pts = static_cast<std::int64_t>(i) * 1'000'000, .offset = offsets[i], .sequence = 1 + 25 * i});
  }
  catalog::lay_out_as_object(seg, slot);
  return seg;
}

std::vector<std::optional<catalog::ArchivedObject>> objects() {
  // Slot 0 is a segment on a volume; slot 1 the archived one.
  return {std::nullopt, catalog::ArchivedObject{.bucket = "b", .key = "k", .bytes = kBytes, .block_bytes = kBlock}};
}

std::vector<storage::IoPiece> pieces_for(std::int64_t from_us, std::int64_t to_us) {
  storage::PlaybackStream walk({segment(1)}, {.from_pts = from_us, .to_pts = to_us}, 1u << 20, kBlock);
  return walk.prepare(0).pieces;
}

}  // namespace

TEST_CASE("archived segments are laid out as their objects, one slot each") {
  const auto seg = segment(1);
  REQUIRE(seg.extent_offsets.size() == 4);  // 210000 bytes of 64 KiB extents
  for (std::size_t i = 0; i < 4; ++i) CHECK(seg.extent_offsets[i] == catalog::kArchiveSlotBytes + i * kExtent);
}

TEST_CASE("range_gets fetches only the GOPs of the range, one GET across an extent header") {
  // [1.5 s, 2.5 s): GOPs 1 and 2, bytes [40000, 150000): four pieces (each GOP crosses an extent).
  const auto pieces = pieces_for(1'500'000, 2'500'000);
  REQUIRE(pieces.size() == 4);
  const auto gets = server::range_gets(pieces, objects());
  REQUIRE(gets.size() == 1);
  CHECK(gets[0].slot == 1);
  CHECK(gets[0].first == 36864);  // GOP 1's block: not GOP 0's bytes
  CHECK(gets[0].last == 151551);  // GOP 2's end, to its block: not GOP 3
  CHECK(gets[0].pieces == std::vector<std::size_t>{0, 1, 2, 3});

  // No merging across gaps: the header between extents splits GOP 1's GET; GOP 2's first piece
  // shares GOP 1's last block and joins that GET.
  const auto exact = server::range_gets(pieces, objects(), 0);
  REQUIRE(exact.size() == 3);
  CHECK(exact[0].first == 36864);
  CHECK(exact[0].last == 65535);   // extent 0's end
  CHECK(exact[1].first == 69632);  // past extent 1's header
  CHECK(exact[1].last == 131071);
  CHECK(exact[2].first == 135168);  // past extent 2's header
  CHECK(exact[2].last == 151551);
}

TEST_CASE("range_gets clips the last GOP's block to the object's end and refuses pieces it cannot name") {
  const auto pieces = pieces_for(3'500'000, 4'000'000);  // GOP 3: [150000, 210000), two extents
  REQUIRE(pieces.size() == 2);
  const auto gets = server::range_gets(pieces, objects());
  REQUIRE(gets.size() == 1);
  CHECK(gets[0].first == 147456);     // GOP 3's block
  CHECK(gets[0].last == kBytes - 1);  // the last piece runs to 212991; the object ends at 209999

  auto wrong_slot = pieces;
  wrong_slot[0].offset -= catalog::kArchiveSlotBytes;  // slot 0: a segment on a volume
  CHECK_THROWS_AS(server::range_gets(wrong_slot, objects()), std::out_of_range);
  auto past_end = pieces;
  past_end[0].offset = catalog::kArchiveSlotBytes + kBytes;
  CHECK_THROWS_AS(server::range_gets(past_end, objects()), std::out_of_range);
}
