#include "storage/segment_recovery.hpp"

#include <algorithm>
#include <cstring>

#include "storage/endian.hpp"

namespace vigil::storage {

std::optional<Resync> find_resync(std::span<const std::byte> data, std::size_t from, std::size_t block_bytes,
                                  std::uint64_t stream_id, std::uint64_t min_sequence) noexcept {
  // Every position holding the record magic is a candidate, not only block boundaries: a
  // cycle's batch can be megabytes of records that follow each other unaligned, and a record
  // damaged in its middle should cost that record, not the rest of the batch. The CRC, stream and
  // sequence checks make a false match in payload bytes practically impossible.
  // memchr for the magic's first byte: a zeroed or stale tail of a 64 MiB extent is passed
  // at memory speed.
  const int first = static_cast<int>(kRecordMagic & 0xff);
  for (std::size_t at = from; at + kRecordHeaderBytes <= data.size();) {
    const void* hit = std::memchr(data.data() + at, first, data.size() - kRecordHeaderBytes + 1 - at);
    if (hit == nullptr) break;
    at = static_cast<std::size_t>(static_cast<const std::byte*>(hit) - data.data());
    if (le::get<std::uint32_t>(data, at) != kRecordMagic) {
      ++at;
      continue;
    }
    RecordScanner probe(data, block_bytes, stream_id, std::nullopt, at);
    auto rec = probe.next();
    // A lower sequence is a stale record of an earlier use of the extent: never adopted.
    if (rec && rec->offset == at && rec->header.sequence >= min_sequence) return Resync{at, rec->header.sequence};
    ++at;
  }
  return std::nullopt;
}

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
  std::optional<DamagedSpan> pending;  // the scan stopped; no valid record found after it yet
  for (std::size_t i = 0; i < uses.size(); ++i) {
    const auto& use = uses[i];
    if (use.header.ordinal != i) break;  // a missing ordinal: nothing after it can follow on
    if (auto r = read_sync(volume.device(), volume.extent_offset(use.extent), extent.span()); !r) return r.error();
    std::size_t pos = block;
    if (i == 0) {
      auto sh = decode_segment_header(extent.span().subspan(block));
      if (!sh || sh->segment_id != segment_id) return errc::corruption;
      out.header = std::move(*sh);
      pos = block * (1 + segment_header_blocks(out.header.codec_parameters.size(), block));
      next_sequence = out.header.first_sequence;
      out.summary.segment_id = segment_id;
      out.summary.stream_id = out.header.stream_id;
      out.summary.first_sequence = out.header.first_sequence;
    }
    out.summary.extents.push_back(use.extent);
    const std::uint64_t base = i * extent_bytes;
    while (pos < extent_bytes) {
      if (pending) {
        auto resume = find_resync(extent.span(), pos, block, out.header.stream_id, pending->first_sequence);
        if (!resume) break;  // nothing valid in the rest of this extent: perhaps in the next one
        // Zeros or a bad padding record followed by the very frame expected next lose nothing
        // (normally: the end of one extent's data and the start of the next).
        if (resume->sequence != pending->first_sequence) {
          pending->to_offset = base + resume->at;
          pending->last_sequence = resume->sequence - 1;
          out.damaged.push_back(*pending);
        }
        pending.reset();
        pos = resume->at;
        next_sequence = resume->sequence;
      }
      RecordScanner scan(extent.span(), block, out.header.stream_id, next_sequence, pos);
      while (auto rec = scan.next()) {
        if (visit) visit(*rec);
        const std::uint64_t logical = base + rec->offset;
        if (rec->header.keyframe()) out.summary.gop_index.add({rec->header.pts, logical, rec->header.sequence});
        out.summary.frame_count++;
        out.summary.last_sequence = rec->header.sequence;
        if (rec->header.pts != kNoTimestamp) {
          if (out.summary.first_pts == kNoTimestamp) out.summary.first_pts = rec->header.pts;
          // The latest end, as the writer keeps it (B-frames show frames out of decode order).
          const std::int64_t end = rec->header.pts + rec->header.duration;
          out.summary.end_pts = out.summary.end_pts == kNoTimestamp ? end : std::max(out.summary.end_pts, end);
          if (!out.damaged.empty() && out.damaged.back().to_pts == kNoTimestamp) {
            out.damaged.back().to_pts = rec->header.pts;
          }
        }
      }
      next_sequence = scan.next_sequence();
      out.summary.end_offset = base + scan.valid_end();
      out.stop_offset = base + scan.stop_offset();
      // The end of what was written, or damage. Which one only the rest of the segment tells:
      // a valid record of this stream further on (looked for at the top of the loop, here or in
      // a later extent) means damage in the middle; none means the data ends here.
      DamagedSpan d;
      d.from_offset = base + scan.stop_offset();
      d.first_sequence = next_sequence.value_or(out.header.first_sequence);
      d.from_pts = out.summary.end_pts != kNoTimestamp ? out.summary.end_pts : out.header.start_us;
      d.stop = scan.stop();
      pending = d;
      // Zeros are an end the writer made (the end of an extent's data before the segment goes on
      // in the next, or the erased first block of a failed, unacknowledged batch): nothing after
      // them in this extent belongs to the segment — the rest of a failed batch that landed must
      // not be adopted. Only the next extent may continue it.
      if (scan.stop() == ScanStop::end_of_data) break;
      pos = scan.stop_offset();  // probed again: a sequence break may resume right there
    }
  }
  out.stop = pending ? pending->stop : ScanStop::end_of_data;
  if (pending) out.stop_offset = pending->from_offset;
  return out;
}

}  // namespace vigil::storage
