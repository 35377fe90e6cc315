#include "storage/segment_verify.hpp"

#include <algorithm>

#include "storage/crc32c.hpp"
#include "storage/volume_layout.hpp"

namespace vigil::storage {

std::uint64_t SegmentVerifier::extent_read_bytes(std::uint32_t ordinal) const noexcept {
  const std::uint64_t before = static_cast<std::uint64_t>(ordinal) * shape_.extent_bytes;
  if (shape_.end_offset <= before) return 0;
  const std::uint64_t end = std::min(shape_.end_offset - before, shape_.extent_bytes);
  return (end + shape_.block_bytes - 1) / shape_.block_bytes * shape_.block_bytes;
}

void SegmentVerifier::scan_from(RecordScanner& scan, std::uint32_t ordinal, std::span<const std::byte> data) noexcept {
  while (auto rec = scan.next()) {
    const auto bytes = data.subspan(rec->offset, kRecordHeaderBytes + rec->payload.size());
    check_.checksum_crc32c = crc32c(bytes, check_.checksum_crc32c);
    ++check_.frame_count;
    if (rec->header.pts != kNoTimestamp) {
      if (open_damage_) {
        check_.damage.back().to_us = rec->header.pts;
        open_damage_ = false;
      }
      good_end_us_ = have_good_ ? std::max(good_end_us_, rec->header.pts + rec->header.duration)
                                : rec->header.pts + rec->header.duration;
      have_good_ = true;
    }
  }
  next_sequence_ = scan.next_sequence();
  (void)ordinal;
}

void SegmentVerifier::add_extent(std::uint32_t ordinal, std::span<const std::byte> extent) noexcept {
  const std::size_t block = shape_.block_bytes;
  const std::uint64_t before = static_cast<std::uint64_t>(ordinal) * shape_.extent_bytes;
  const std::uint64_t data_end =
      shape_.end_offset > before ? std::min(shape_.end_offset - before, shape_.extent_bytes) : 0;
  const auto data = extent.first(std::min<std::size_t>(extent.size(), data_end));
  // Block 0 is the extent header; the first extent also holds the segment header after it.
  std::size_t start = block;
  if (ordinal == 0) {
    auto header =
        data.size() > block ? decode_segment_header(data.subspan(block)) : Result<SegmentHeader>(errc::corruption);
    if (!header) {
      check_.damage.push_back({ordinal, block, ScanStop::bad_magic, shape_.start_us, shape_.end_us});
      return;  // without the header nothing says where the data starts: the segment is lost
    }
    start = (1 + segment_header_blocks(header->codec_parameters.size(), block)) * block;
    next_sequence_ = header->first_sequence;
  }
  if (start >= data.size()) return;
  RecordScanner scan(data, block, shape_.stream_id, next_sequence_, start);
  scan_from(scan, ordinal, data);
  while (scan.stop() != ScanStop::end_of_data) {
    if (!open_damage_) {
      check_.damage.push_back(
          {ordinal, scan.stop_offset(), scan.stop(), have_good_ ? good_end_us_ : shape_.start_us, shape_.end_us});
      open_damage_ = true;
    }
    // Find the stream again at a later block boundary (a batch or a record may start there).
    std::size_t at = (scan.stop_offset() / block + 1) * block;
    bool found = false;
    for (; at < data.size() && !found; at += block) {
      RecordScanner probe(data, block, shape_.stream_id, std::nullopt, at);
      if (probe.next()) {
        scan = RecordScanner(data, block, shape_.stream_id, std::nullopt, at);
        scan_from(scan, ordinal, data);
        found = true;
      }
    }
    if (!found) {
      next_sequence_.reset();  // the hole's length is unknown: the next extent resyncs
      return;
    }
  }
}

SegmentCheck SegmentVerifier::finish() noexcept {
  open_damage_ = false;
  return std::move(check_);
}

}  // namespace vigil::storage
