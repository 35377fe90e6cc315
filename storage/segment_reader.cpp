#include "storage/segment_reader.hpp"

namespace vigil::storage {

Result<GopData> SegmentReader::read_gop(std::size_t i) noexcept {
  const auto& gops = summary_.gop_index.entries();
  if (i >= gops.size()) return errc::invalid_argument;
  const std::uint64_t extent_bytes = volume_.extent_bytes();
  const std::uint64_t block = volume_.block_bytes();
  const std::uint64_t begin = gops[i].offset;
  const std::uint64_t end = i + 1 < gops.size() ? gops[i + 1].offset : summary_.end_offset;
  if (end <= begin) return errc::corruption;

  GopData out;
  std::uint64_t next_sequence = gops[i].sequence;
  // A GOP may continue into the next extent(s): read and scan each piece.
  for (std::uint64_t pos = begin; pos < end;) {
    const std::uint64_t ordinal = pos / extent_bytes;
    if (ordinal >= summary_.extents.size()) return errc::corruption;
    const std::uint64_t in_extent = pos % extent_bytes;
    const std::uint64_t piece_end = std::min(end - ordinal * extent_bytes, extent_bytes);
    const std::uint64_t aligned = in_extent / block * block;
    const std::uint64_t length = (piece_end - aligned + block - 1) / block * block;
    AlignedBuffer buf(length, block);
    if (auto r = read_sync(volume_.device(), volume_.extent_offset(summary_.extents[ordinal]) + aligned, buf.span());
        !r) {
      return r.error();
    }
    RecordScanner scan(buf.span().first(piece_end - aligned), block, summary_.stream_id, next_sequence,
                       in_extent - aligned);
    while (auto rec = scan.next()) out.frames.push_back(*rec);
    // Only a clean end of the piece is acceptable: anything else means damage inside the GOP.
    if (scan.stop() != ScanStop::end_of_data) return errc::corruption;
    next_sequence = *scan.next_sequence();
    out.buffers.push_back(std::move(buf));
    pos = (ordinal + 1) * extent_bytes + block;  // data of the next extent starts after its header
  }
  if (out.frames.empty() || !out.frames.front().header.keyframe()) return errc::corruption;
  return out;
}

std::int64_t SegmentReader::gop_end_pts(std::size_t i) const noexcept {
  const auto& gops = summary_.gop_index.entries();
  return i + 1 < gops.size() ? gops[i + 1].pts : summary_.end_pts;
}

Result<void> SegmentReader::read_range(const ReadRange& range,
                                       const std::function<void(const ScannedRecord&)>& on_frame,
                                       const std::function<void(const ReadGap&)>& on_gap) noexcept {
  const auto& gops = summary_.gop_index.entries();
  if (gops.empty() || range.to_pts <= range.from_pts) return {};
  const std::size_t first = summary_.gop_index.at_or_before(range.from_pts).value_or(0);
  std::size_t last = first;
  while (last + 1 < gops.size() && gops[last + 1].pts < range.to_pts) ++last;

  auto serve = [&](std::size_t i) -> Result<void> {
    auto gop = read_gop(i);
    if (!gop) {
      if (gop.error() != errc::corruption) return gop.error();  // IO errors are the caller's to handle
      on_gap(ReadGap{gops[i].pts, gop_end_pts(i), errc::corruption, gops[i].offset});
      return {};
    }
    for (const auto& f : gop->frames) {
      if (range.direction == ReadDirection::forward && f.header.pts != kNoTimestamp && f.header.pts >= range.to_pts)
        break;
      if (range.keyframes_only && !f.header.keyframe()) continue;
      on_frame(f);
    }
    return {};
  };
  if (range.direction == ReadDirection::forward) {
    for (std::size_t i = first; i <= last; ++i) {
      if (auto r = serve(i); !r) return r;
    }
  } else {
    for (std::size_t i = last + 1; i-- > first;) {
      if (auto r = serve(i); !r) return r;
    }
  }
  return {};
}

}  // namespace vigil::storage
