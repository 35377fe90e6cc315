#pragma once
// Verifies a closed segment from the bytes of its extents (docs/scrubber.md): every frame
// record's CRC, the sequence running on without a hole, and the segment checksum
// (SegmentSummary::checksum_crc32c: CRC32C over every frame record's bytes, header and payload,
// in logical order). Damage is reported as the media time it costs: from the end of the last
// good frame before it to the first good frame after it (found again at a later block
// boundary), or the segment's end.
// Thread: pure code, any thread; fed by whoever reads the extents (the scrubber through the
// disk's background broker, tests with read_sync). Errors: values (what it found is the result).
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "storage/record.hpp"

namespace vigil::storage {

struct SegmentDamage {
  std::uint32_t ordinal = 0;           // the extent holding it
  std::uint64_t offset_in_extent = 0;  // where the scan stopped
  ScanStop why = ScanStop::none;
  std::int64_t from_us = 0, to_us = 0;  // the media time lost
};

struct SegmentCheck {
  std::uint32_t checksum_crc32c = 0;  // recomputed over the frame records found
  std::uint64_t frame_count = 0;
  std::vector<SegmentDamage> damage;
};

struct SegmentShape {
  std::uint64_t stream_id = 0;
  std::uint64_t extent_bytes = 0;
  std::uint32_t block_bytes = 0;
  std::uint64_t end_offset = 0;  // logical end of its data (SegmentSummary::end_offset)
  std::int64_t start_us = 0, end_us = 0;
};

class SegmentVerifier {
 public:
  explicit SegmentVerifier(const SegmentShape& shape) noexcept : shape_(shape) {}

  // Bytes a whole read of extent ORDINAL needs (the rest of it holds no data of the segment).
  std::uint64_t extent_read_bytes(std::uint32_t ordinal) const noexcept;
  // EXTENT: the first extent_read_bytes(ORDINAL) bytes of extent ORDINAL, extents in order.
  void add_extent(std::uint32_t ordinal, std::span<const std::byte> extent) noexcept;
  // What was found; damage still open runs to the segment's end.
  SegmentCheck finish() noexcept;

 private:
  void scan_from(RecordScanner& scan, std::uint32_t ordinal, std::span<const std::byte> data) noexcept;

  SegmentShape shape_;
  SegmentCheck check_;
  std::optional<std::uint64_t> next_sequence_;
  std::int64_t good_end_us_ = 0;  // end of the last good frame
  bool have_good_ = false;
  bool open_damage_ = false;  // damage[back] waits for the next good frame
};

}  // namespace vigil::storage
