#include "storage/segment_recovery.hpp"

namespace vigil::storage {

Result<RecoveredSegment> recover_segment(Volume& volume, std::uint64_t segment_id, const FrameVisitor& visit) noexcept {
  auto it = volume.segments().find(segment_id);
  if (it == volume.segments().end()) return errc::not_found;
  const auto& uses = it->second;
  if (uses.empty() || uses.front().header.ordinal != 0) return errc::corruption;
  const std::size_t block = volume.block_bytes();
  const std::uint64_t extent_bytes = volume.extent_bytes();

  AlignedBuffer extent(extent_bytes, block);
  RecoveredSegment out;
  std::optional<std::uint64_t> next_sequence;
  for (std::size_t i = 0; i < uses.size(); ++i) {
    const auto& use = uses[i];
    if (use.header.ordinal != i) break;  // a missing ordinal: nothing after it can follow on
    if (auto r = read_sync(volume.device(), volume.extent_offset(use.extent), extent.span()); !r) return r.error();
    std::size_t start = block;
    if (i == 0) {
      auto sh = decode_segment_header(extent.span().subspan(block));
      if (!sh || sh->segment_id != segment_id) return errc::corruption;
      out.header = std::move(*sh);
      start = block * (1 + segment_header_blocks(out.header.codec_parameters.size(), block));
      next_sequence = out.header.first_sequence;
      out.summary.segment_id = segment_id;
      out.summary.stream_id = out.header.stream_id;
      out.summary.first_sequence = out.header.first_sequence;
    }
    out.summary.extents.push_back(use.extent);
    RecordScanner scan(extent.span(), block, out.header.stream_id, next_sequence, start);
    while (auto rec = scan.next()) {
      if (visit) visit(*rec);
      const std::uint64_t logical = i * extent_bytes + rec->offset;
      if (rec->header.keyframe()) out.summary.gop_index.add({rec->header.pts, logical, rec->header.sequence});
      out.summary.frame_count++;
      out.summary.last_sequence = rec->header.sequence;
      if (rec->header.pts != kNoTimestamp) {
        if (out.summary.first_pts == kNoTimestamp) out.summary.first_pts = rec->header.pts;
        out.summary.end_pts = rec->header.pts + rec->header.duration;
      }
    }
    next_sequence = scan.next_sequence();
    out.stop = scan.stop();
    out.stop_offset = i * extent_bytes + scan.stop_offset();
    out.summary.end_offset = i * extent_bytes + scan.valid_end();
    // Zeros after the last batch of an extent: the segment may continue in the next one.
    if (scan.stop() != ScanStop::end_of_data) break;
  }
  return out;
}

}  // namespace vigil::storage
