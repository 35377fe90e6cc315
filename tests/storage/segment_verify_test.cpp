// The segment checksum the writer stores at close, and the verifier the scrubber runs over a
// closed segment's extents: read back intact, the checksum is the stored one and nothing is
// damaged; one flipped byte in a record is found with the media time it costs.
#include <catch2/catch_test_macros.hpp>

#include "storage/segment_verify.hpp"
#include "storage/segment_writer.hpp"
#include "storage/simulated_disk.hpp"

using namespace vigil::storage;

namespace {

constexpr std::int64_t kFrameUs = 40'000;

struct Fixture {
  VirtualClock clock;
  SimulatedDisk disk{clock, {.size_bytes = 4 << 20}};
  std::unique_ptr<Volume> vol;
  Fixture() {
    REQUIRE(Volume::format(disk, {.extent_bytes = 32 * 1024}).has_value());
    vol = *Volume::open(disk);
  }
};

RecordHeader frame(std::uint64_t seq) {
  RecordHeader h;
  h.sequence = seq;
  h.pts = static_cast<std::int64_t>(seq) * kFrameUs;
  h.duration = kFrameUs;
  h.flags = seq % 5 == 1 ? kRecordKeyframe : 0;
  return h;
}

// Frames FIRST..LAST, 3 per cycle, each written and made durable.
void record(Fixture& f, SegmentWriter& w, std::uint64_t first, std::uint64_t last) {
  for (std::uint64_t s = first; s <= last; ++s) {
    std::vector<std::byte> payload(1500 + s * 37 % 900, static_cast<std::byte>(s));
    REQUIRE(w.append(frame(s), payload).has_value());
    if (s % 3 == 0 || s == last) {
      REQUIRE(w.write_cycle().has_value());
      REQUIRE(flush_sync(f.disk).has_value());
      w.mark_durable();
    }
  }
}

SegmentCheck verify(Fixture& f, const SegmentSummary& s) {
  SegmentVerifier v({.stream_id = s.stream_id,
                     .extent_bytes = f.vol->extent_bytes(),
                     .block_bytes = f.vol->block_bytes(),
                     .end_offset = s.end_offset,
                     .start_us = s.first_pts,
                     .end_us = s.end_pts});
  for (std::uint32_t i = 0; i < s.extents.size(); ++i) {
    AlignedBuffer buf(v.extent_read_bytes(i), f.vol->block_bytes());
    REQUIRE(read_sync(f.disk, f.vol->extent_offset(s.extents[i]), buf.span()).has_value());
    v.add_extent(i, buf.span());
  }
  return v.finish();
}

}  // namespace

TEST_CASE("the stored segment checksum is the CRC32C of its records read back", "[verify][storage]") {
  Fixture f;
  SegmentWriter w(*f.vol, 7, {.buffer_bytes = 8192});
  REQUIRE(w.open_segment(1, {}, 1, 0).has_value());
  record(f, w, 1, 60);  // several extents of 32 KiB
  const auto s = w.close_segment();
  REQUIRE(s.extents.size() >= 3);
  CHECK(s.checksum_crc32c != 0);
  const auto check = verify(f, s);
  CHECK(check.damage.empty());
  CHECK(check.frame_count == 60);
  CHECK(check.checksum_crc32c == s.checksum_crc32c);
}

TEST_CASE("after a rotation each segment's checksum covers exactly its own records", "[verify][storage]") {
  Fixture f;
  SegmentWriter w(*f.vol, 7, {.buffer_bytes = 8192});
  REQUIRE(w.open_segment(1, {}, 1, 0).has_value());
  record(f, w, 1, 20);
  // Frames buffered before the rotation belong to the new segment.
  std::vector<std::byte> payload(1000, std::byte{9});
  REQUIRE(w.append(frame(21), payload).has_value());
  const auto first = w.rotate_segment(2, 21 * kFrameUs);
  REQUIRE(w.write_cycle().has_value());
  REQUIRE(flush_sync(f.disk).has_value());
  w.mark_durable();
  record(f, w, 22, 40);
  const auto second = w.close_segment();
  CHECK(first.frame_count == 20);
  CHECK(second.frame_count == 20);
  CHECK(verify(f, first).checksum_crc32c == first.checksum_crc32c);
  const auto check = verify(f, second);
  CHECK(check.damage.empty());
  CHECK(check.checksum_crc32c == second.checksum_crc32c);
}

TEST_CASE("one flipped byte is found with the media time it costs; the checksum no longer matches",
          "[verify][storage]") {
  Fixture f;
  SegmentWriter w(*f.vol, 7, {.buffer_bytes = 8192});
  REQUIRE(w.open_segment(1, {}, 1, 0).has_value());
  record(f, w, 1, 60);
  const auto s = w.close_segment();
  // Flip a byte in the middle of the second extent's data: inside some record.
  const std::uint64_t at = f.vol->extent_offset(s.extents[1]) + f.vol->extent_bytes() / 2;
  AlignedBuffer block(f.vol->block_bytes(), f.vol->block_bytes());
  const std::uint64_t block_at = at / f.vol->block_bytes() * f.vol->block_bytes();
  REQUIRE(read_sync(f.disk, block_at, block.span()).has_value());
  block.span()[at - block_at] ^= std::byte{0x5a};
  REQUIRE(write_sync(f.disk, block_at, block.span(), true).has_value());

  const auto check = verify(f, s);
  REQUIRE(check.damage.size() == 1);
  const auto& d = check.damage[0];
  CHECK(d.ordinal == 1);
  CHECK(d.why != ScanStop::end_of_data);
  // The lost time is a whole number of frames inside the segment, and not all of it.
  CHECK(d.from_us > s.first_pts);
  CHECK(d.to_us < s.end_pts);
  CHECK(d.to_us > d.from_us);
  CHECK((d.to_us - d.from_us) % kFrameUs == 0);
  CHECK(check.frame_count < 60);
  CHECK(check.frame_count >= 60 - static_cast<std::uint64_t>((d.to_us - d.from_us) / kFrameUs));
  CHECK(check.checksum_crc32c != s.checksum_crc32c);
}
