#include "storage/segment_writer.hpp"

#include <algorithm>

#include "storage/crc32c.hpp"

namespace vigil::storage {

SegmentWriter::SegmentWriter(Volume& volume, std::uint64_t stream_id, SegmentWriterOptions options)
    : volume_(volume),
      stream_id_(stream_id),
      options_(options),
      buffer_bytes_((options.buffer_bytes + volume.block_bytes() - 1) / volume.block_bytes() * volume.block_bytes()),
      halves_{AlignedBuffer(buffer_bytes_, volume.block_bytes()), AlignedBuffer(buffer_bytes_, volume.block_bytes())},
      batch_(halves_[0].span(), volume.block_bytes()) {}

std::uint64_t SegmentWriter::data_start(std::uint32_t ordinal) const noexcept {
  return (ordinal == 0 ? 1 + header_blocks_ : 1) * static_cast<std::uint64_t>(volume_.block_bytes());
}

Result<void> SegmentWriter::open_segment(std::uint64_t segment_id, std::span<const std::byte> codec_parameters,
                                         std::uint64_t first_sequence, std::int64_t start_us) noexcept {
  if (auto r = open_segment_deferred(segment_id, codec_parameters, first_sequence, start_us); !r) return r;
  if (auto r = write_header(); !r) {
    open_ = false;
    return r;
  }
  return {};
}

Result<void> SegmentWriter::open_segment_deferred(std::uint64_t segment_id, std::span<const std::byte> codec_parameters,
                                                  std::uint64_t first_sequence, std::int64_t start_us) noexcept {
  if (open_ || codec_parameters.size() > kMaxCodecParametersBytes) return errc::invalid_argument;
  const std::size_t block = volume_.block_bytes();
  header_blocks_ = static_cast<std::uint32_t>(segment_header_blocks(codec_parameters.size(), block));
  // Every batch must fit in one extent, the first one included.
  if (buffer_bytes_ + data_start(0) > volume_.extent_bytes()) return errc::invalid_argument;
  header_ = SegmentHeader{};
  header_.segment_id = segment_id;
  header_.stream_id = stream_id_;
  header_.first_sequence = first_sequence;
  header_.start_us = start_us;
  header_.codec_parameters.assign(codec_parameters.begin(), codec_parameters.end());
  open_ = true;
  header_written_ = failed_ = false;
  failed_batch_offset_.reset();
  sealed_meta_.reset();
  start_summary(segment_id, first_sequence);
  next_sequence_ = first_sequence;
  appended_crc_ = batch_crc_start_ = 0;
  // A stream that starts at FIRST_SEQUENCE (a recorder resending after a failure or a restart)
  // has everything before it durable elsewhere: a failure before its first batch names that.
  if (first_sequence > 0) durable_sequence_ = std::max(durable_sequence_, first_sequence - 1);
  written_.clear();
  batch_ = RecordBatch(halves_[filling_].span(), block);
  filling_meta_ = Pending{0, {}, 0, kNoTimestamp, kNoTimestamp, 0};
  return {};
}

void SegmentWriter::start_summary(std::uint64_t segment_id, std::uint64_t first_sequence) noexcept {
  summary_ = SegmentSummary{};
  summary_.segment_id = segment_id;
  summary_.stream_id = stream_id_;
  summary_.first_sequence = first_sequence;
  write_offset_ = data_start(0);
  summary_.end_offset = write_offset_;
}

// Takes the segment's first extent and writes its header durably (the IO thread's job).
Result<void> SegmentWriter::write_header() noexcept {
  const std::size_t block = volume_.block_bytes();
  auto extent = volume_.allocate_extent(header_.segment_id, stream_id_, 0);
  if (!extent) return extent.error();
  AlignedBuffer hdr(header_blocks_ * block, block);
  if (auto r = encode_segment_header(hdr.span(), header_, block); !r) return r;
  if (auto r = write_sync(volume_.device(), volume_.extent_offset(*extent) + block, hdr.span(), true); !r) {
    // The extent is in use by a segment without a header, which no one could read: give it back
    // (best effort, the device is failing) and never take it again.
    volume_.mark_bad(*extent);
    (void)volume_.free_extent(*extent);
    return r;
  }
  summary_.extents = {*extent};
  header_written_ = true;
  return {};
}

Result<void> SegmentWriter::append(const RecordHeader& header, std::span<const std::byte> payload) noexcept {
  if (!open_ || header.sequence != next_sequence_ || header.padding()) return errc::invalid_argument;
  // Not policing: waiting for a fresh half would not help, only a larger buffer (a higher rate).
  if (kRecordHeaderBytes + payload.size() > buffer_bytes_) return errc::frame_exceeds_buffer;
  if (written_half_held_) {
    // Its frames are durable and it fills only after the next seal: until then its pages are
    // memory for nothing (at T = 1 s, most of a cycle). Inside the stream's mutex on purpose: the
    // IO thread's seal of this one stream may wait these few system calls, but outside it a seal
    // could swap this half for a grown one and free it under the madvise.
    halves_[filling_ ^ 1].release_pages();
    written_half_held_ = false;
  }
  if (!batch_.fits(payload.size())) return errc::unavailable;
  RecordHeader h = header;
  h.stream_id = stream_id_;
  const std::uint64_t offset_in_batch = batch_.used_bytes();
  if (auto r = batch_.append(h, payload); !r) return r;
  // The segment checksum grows record by record, in the order the records lie in the segment:
  // the filling half's records follow every sealed one's.
  appended_crc_ =
      crc32c(halves_[filling_].span().subspan(offset_in_batch, kRecordHeaderBytes + payload.size()), appended_crc_);
  filling_meta_.crc_after = appended_crc_;
  // Keyframe offsets are relative to the batch until write_cycle() knows where it lands.
  if (h.keyframe()) filling_meta_.keyframes.push_back({h.pts, offset_in_batch, h.sequence});
  filling_meta_.last_sequence = h.sequence;
  filling_meta_.frames++;
  if (h.pts != kNoTimestamp) {
    if (filling_meta_.first_pts == kNoTimestamp) filling_meta_.first_pts = h.pts;
    // The latest end, not the last frame's: B-frames show frames out of decode order.
    filling_meta_.end_pts = filling_meta_.end_pts == kNoTimestamp ? h.pts + h.duration
                                                                  : std::max(filling_meta_.end_pts, h.pts + h.duration);
  }
  ++next_sequence_;
  return {};
}

Result<void> SegmentWriter::write_cycle() noexcept {
  auto sealed = seal_cycle();
  if (!sealed) return sealed.error();
  if (!*sealed) return {};
  Result<void> r = write_sync(volume_.device(), (*sealed)->device_offset, (*sealed)->data, false);
  batch_written(r);
  return r;
}

Result<std::optional<SegmentWriter::SealedBatch>> SegmentWriter::seal_cycle(std::size_t max_carry_bytes) noexcept {
  if (failed_) return errc::io_error;
  if (!open_ || batch_.frame_count() == 0) return std::optional<SealedBatch>{};
  if (sealed_meta_) return errc::unavailable;  // the previous batch is still being written
  if (!header_written_) {
    if (auto r = write_header(); !r) {
      failed_ = true;
      return r.error();
    }
  }
  // A full segment waiting for a keyframe takes the frames before it, not the keyframe itself.
  std::optional<MovedRecords> moved;
  if (rotation_wanted() && !keyframe_wait_over() && !filling_meta_.keyframes.empty() &&
      filling_meta_.keyframes.front().offset > 0 &&
      batch_.used_bytes() - filling_meta_.keyframes.front().offset <= max_carry_bytes) {
    moved = cut_batch_at(filling_meta_.keyframes.front().offset);
  }
  const std::uint64_t extent_bytes = volume_.extent_bytes();
  const std::size_t bytes = batch_.finish();
  // The extent holding the last byte written so far (write_offset_ > 0: data never starts at 0).
  // A batch that ended exactly at an extent's end leaves no room in it.
  auto ordinal = static_cast<std::uint32_t>((write_offset_ - 1) / extent_bytes);
  if ((ordinal + 1) * extent_bytes - write_offset_ < bytes) {
    // The batch does not fit in what is left of this extent: continue in a new one. The rest
    // of the old extent may hold records of an earlier use of it (retention recycles extents),
    // which every reader (recovery, playback, fsck) would take for damage inside this segment:
    // a zero block where this segment's data stops reads as its end of data in this extent.
    // It is durable before the next extent's header is, so no crash leaves a stale tail
    // between two extents of the segment.
    const std::uint64_t room = (ordinal + 1) * extent_bytes - write_offset_;
    if (room >= volume_.block_bytes()) {
      AlignedBuffer zero(volume_.block_bytes(), volume_.block_bytes());
      const std::uint64_t at = volume_.extent_offset(summary_.extents[ordinal]) + write_offset_ % extent_bytes;
      if (auto r = write_sync(volume_.device(), at, zero.span(), /*durable=*/true); !r) {
        failed_ = true;
        return r.error();
      }
    }
    auto extent = volume_.allocate_extent(summary_.segment_id, stream_id_, ordinal + 1);
    if (!extent) {
      failed_ = true;
      return extent.error();
    }
    summary_.extents.push_back(*extent);
    ++ordinal;
    write_offset_ = ordinal * extent_bytes + data_start(ordinal);
  }
  SealedBatch out{volume_.extent_offset(summary_.extents[ordinal]) + write_offset_ % extent_bytes,
                  halves_[filling_].span().first(bytes)};
  sealed_offset_ = out.device_offset;
  for (auto& k : filling_meta_.keyframes) k.offset += write_offset_;
  sealed_meta_ = std::move(filling_meta_);
  sealed_end_ = write_offset_ + bytes;
  // Double buffering: the network fills the other half while this one is written.
  filling_ ^= 1;
  written_half_held_ = false;  // the written half fills now: its pages are wanted
  if (!grown_.empty()) {
    // Re-admitted at a higher rate: the half that came free is replaced by a larger one.
    halves_[filling_] = std::move(grown_.back());
    grown_.pop_back();
    buffer_bytes_ = halves_[filling_].size();
  }
  batch_ = RecordBatch(halves_[filling_].span(), volume_.block_bytes());
  filling_meta_ = Pending{0, {}, 0, kNoTimestamp, kNoTimestamp, 0};
  batch_crc_start_ = sealed_meta_->crc_after;
  if (moved) {
    batch_.set_contents(moved->bytes, moved->frames);
    filling_meta_ = std::move(moved->meta);
  }
  return std::optional<SealedBatch>{out};
}

SegmentWriter::MovedRecords SegmentWriter::cut_batch_at(std::size_t cut_bytes) noexcept {
  // The half that fills after this seal: the other one (its write completed: nothing is in
  // flight at a seal), or the larger one that replaces it.
  AlignedBuffer& next = grown_.empty() ? halves_[filling_ ^ 1] : grown_.back();
  const std::span<std::byte> filling = halves_[filling_].span();
  const std::size_t used = batch_.used_bytes();
  std::copy(filling.begin() + static_cast<std::ptrdiff_t>(cut_bytes),
            filling.begin() + static_cast<std::ptrdiff_t>(used), next.span().begin());
  // Which records go where, with their times: a scan of the batch's own records (once a rotation).
  MovedRecords moved;
  Pending head{0, {}, 0, kNoTimestamp, kNoTimestamp, 0};
  moved.meta = Pending{0, {}, 0, kNoTimestamp, kNoTimestamp, 0};
  const std::uint64_t first_sequence = next_sequence_ - filling_meta_.frames;
  RecordScanner scan(filling.first(used), volume_.block_bytes(), stream_id_, first_sequence);
  while (auto r = scan.next()) {
    Pending& part = r->offset < cut_bytes ? head : moved.meta;
    const RecordHeader& h = r->header;
    part.frames++;
    part.last_sequence = h.sequence;
    if (h.pts != kNoTimestamp) {
      if (part.first_pts == kNoTimestamp) part.first_pts = h.pts;
      part.end_pts = part.end_pts == kNoTimestamp ? h.pts + h.duration : std::max(part.end_pts, h.pts + h.duration);
    }
  }
  for (const auto& k : filling_meta_.keyframes) {
    if (k.offset < cut_bytes) head.keyframes.push_back(k);
    else moved.meta.keyframes.push_back({k.pts, k.offset - cut_bytes, k.sequence});
  }
  head.crc_after = crc32c(filling.first(cut_bytes), batch_crc_start_);
  moved.meta.crc_after = filling_meta_.crc_after;
  moved.bytes = used - cut_bytes;
  moved.frames = moved.meta.frames;
  batch_.set_contents(cut_bytes, head.frames);
  filling_meta_ = std::move(head);
  return moved;
}

std::int64_t SegmentWriter::durable_span_pts() const noexcept {
  if (summary_.first_pts == kNoTimestamp || summary_.end_pts == kNoTimestamp) return 0;
  return summary_.end_pts - summary_.first_pts;
}

bool SegmentWriter::rotation_wanted() const noexcept {
  if (!open_) return false;
  // By size the wait starts early enough to end by max_segment_bytes: the largest segment stays
  // what it was (every reader that holds a whole segment in memory counts on it).
  const std::uint64_t wait_bytes = std::min(options_.keyframe_wait_bytes, options_.max_segment_bytes / 4);
  if (write_offset_ + wait_bytes >= options_.max_segment_bytes) return true;
  return options_.max_segment_pts > 0 && durable_span_pts() >= options_.max_segment_pts;
}

bool SegmentWriter::keyframe_wait_over() const noexcept {
  if (write_offset_ >= options_.max_segment_bytes) return true;
  return options_.max_segment_pts > 0 && durable_span_pts() >= 2 * options_.max_segment_pts;
}

bool SegmentWriter::rotation_due() const noexcept {
  if (!rotation_wanted() || sealed_meta_ || !written_.empty()) return false;
  if (keyframe_wait_over()) return true;
  // The next segment must begin with a keyframe: wait for one (frames buffered and the first a keyframe).
  return batch_.frame_count() > 0 && !filling_meta_.keyframes.empty() && filling_meta_.keyframes.front().offset == 0;
}

Result<void> SegmentWriter::grow_buffer(std::array<AlignedBuffer, 2> halves) noexcept {
  const std::size_t bytes = halves[0].size();
  if (halves[1].size() != bytes || bytes <= buffer_bytes_ || bytes % volume_.block_bytes() != 0 ||
      bytes + data_start(0) > volume_.extent_bytes()) {
    return errc::invalid_argument;
  }
  grown_.clear();
  for (auto& h : halves) grown_.push_back(std::move(h));
  return {};
}

void SegmentWriter::batch_written(Result<void> result) noexcept {
  if (!sealed_meta_) return;
  if (!result) {
    failed_ = true;  // the batch may be partly on disk: nothing after it may follow in this segment
    sealed_meta_.reset();
    failed_batch_offset_ = sealed_offset_;
    // Its extent is not trusted for new segments (until vigild restarts).
    if (!summary_.extents.empty()) volume_.mark_bad(summary_.extents.back());
    return;
  }
  written_.push_back(std::move(*sealed_meta_));
  sealed_meta_.reset();
  write_offset_ = sealed_end_;
  summary_.end_offset = write_offset_;
  written_half_held_ = true;
}

std::size_t SegmentWriter::resident_buffer_bytes() const noexcept {
  return halves_[0].resident_bytes() + halves_[1].resident_bytes();
}

std::optional<std::uint64_t> SegmentWriter::mark_durable() noexcept {
  if (written_.empty()) return std::nullopt;
  for (auto& p : written_) {
    for (auto& k : p.keyframes) {
      const auto entries = summary_.gop_index.entries();
      if (options_.min_gop_spacing_pts > 0 && !entries.empty() &&
          k.pts - entries.back().pts < options_.min_gop_spacing_pts) {
        continue;
      }
      summary_.gop_index.add(k);
    }
    summary_.frame_count += p.frames;
    summary_.last_sequence = p.last_sequence;
    if (summary_.first_pts == kNoTimestamp) summary_.first_pts = p.first_pts;
    if (p.end_pts != kNoTimestamp) {
      summary_.end_pts = summary_.end_pts == kNoTimestamp ? p.end_pts : std::max(summary_.end_pts, p.end_pts);
    }
  }
  durable_sequence_ = written_.back().last_sequence;
  summary_.checksum_crc32c = written_.back().crc_after;
  written_.clear();
  return durable_sequence_;
}

Result<void> SegmentWriter::erase_failed_batch() noexcept {
  if (!failed_batch_offset_) return {};
  const std::size_t block = volume_.block_bytes();
  AlignedBuffer zero(block, block);
  auto r = write_sync(volume_.device(), *failed_batch_offset_, zero.span(), /*durable=*/true);
  failed_batch_offset_.reset();
  return r;
}

bool SegmentWriter::segment_full() const noexcept {
  if (!open_) return false;
  if (write_offset_ >= options_.max_segment_bytes) return true;
  return options_.max_segment_pts > 0 && summary_.first_pts != kNoTimestamp && summary_.end_pts != kNoTimestamp &&
         summary_.end_pts - summary_.first_pts >= options_.max_segment_pts;
}

SegmentSummary SegmentWriter::rotate_segment(std::uint64_t new_segment_id, std::int64_t start_us) noexcept {
  SegmentSummary done = std::move(summary_);
  const std::uint64_t first = next_sequence_ - filling_meta_.frames;
  header_.segment_id = new_segment_id;
  header_.first_sequence = first;
  header_.start_us = start_us;
  header_written_ = false;
  failed_ = false;
  failed_batch_offset_.reset();
  written_.clear();
  start_summary(new_segment_id, first);
  // Frames already buffered belong to the new segment: its checksum starts over from them (the
  // filling half holds them back to back, no padding before finish()).
  appended_crc_ = crc32c(halves_[filling_].span().first(batch_.used_bytes()));
  filling_meta_.crc_after = appended_crc_;
  batch_crc_start_ = 0;
  return done;
}

SegmentSummary SegmentWriter::close_segment() noexcept {
  open_ = false;
  return std::move(summary_);
}

}  // namespace vigil::storage
