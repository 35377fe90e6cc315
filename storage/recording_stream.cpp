#include "storage/recording_stream.hpp"

#include <algorithm>
#include <cmath>

#include "common/log.hpp"

namespace vigil::storage {

RecordingStream::RecordingStream(Volume& volume, std::uint64_t stream_id, std::vector<std::byte> codec_parameters,
                                 std::uint64_t first_sequence, std::int64_t start_us, RecordingStreamOptions options,
                                 NextSegmentId next_segment_id, DurableFn on_durable, SegmentFn on_segment_closed,
                                 FailedFn on_failed)
    : volume_(volume),
      volume_failing_(options.volume_failing),
      writer_(volume, stream_id,
              {.buffer_bytes = options.io_bytes,
               .max_segment_bytes = options.max_segment_bytes,
               .max_segment_pts = options.max_segment_pts,
               .min_gop_spacing_pts = options.min_gop_spacing_pts,
               .keyframe_wait_bytes = options.keyframe_wait_bytes}),
      next_segment_id_(std::move(next_segment_id)),
      on_durable_(std::move(on_durable)),
      on_segment_closed_(std::move(on_segment_closed)),
      on_failed_(std::move(on_failed)),
      progress_every_pts_(options.progress_every_pts) {
  // No IO here (this may run on a network thread): the header goes out with the first write.
  (void)writer_.open_segment_deferred(next_segment_id_(), codec_parameters, first_sequence, start_us);
}

Result<void> RecordingStream::append(const RecordHeader& header, std::span<const std::byte> payload) noexcept {
  std::lock_guard lock(mu_);
  if (failed_at_) return errc::io_error;
  auto r = writer_.append(header, payload);
  if (!r && r.error() == errc::unavailable) {
    ++refused_;
    refused_because_ = held_;
    return errc::rate_exceeded;
  }
  if (r) {
    cycle_bytes_ += kRecordHeaderBytes + payload.size();
    if (header.pts != kNoTimestamp) last_end_us_ = header.pts + header.duration;
  }
  return r;
}

StreamIo RecordingStream::prepare(std::uint64_t) {
  std::optional<SegmentSummary> closed, rotated;
  StreamIo io;
  {
    std::unique_lock lock(mu_);
    // After a failure: here, not inside the device's poll (fail_locked).
    if (auto discarded = cleanup_locked()) {
      lock.unlock();
      if (on_segment_closed_) on_segment_closed_(*discarded);
      return {.write = true, .skip_reason = "stream_failed"};
    }
    if (failed_at_) return {.write = true, .skip_reason = "stream_failed"};
    if (volume_failing_ && volume_failing_->load(std::memory_order_acquire)) {
      // The volume is out of service: end here, at the last durable frame, once no write of ours
      // is in flight (its outcome still decides what is durable).
      if (writer_.batch_in_flight()) {
        held_ = Held::segment_failed;  // the volume's doing: its failure ends the stream
        return {.write = true, .skip_reason = "previous_write_pending"};
      }
      closed = fail_locked();
      auto discarded = cleanup_locked();
      lock.unlock();
      if (discarded && on_segment_closed_) on_segment_closed_(*discarded);
      report_failure(closed);
      return {.write = true, .skip_reason = "volume_failed"};
    }
    // One sample per cycle, idle cycles included: the rate is what arrived, not what was written.
    if (window_.size() < kRateWindow) window_.push_back(static_cast<double>(cycle_bytes_));
    else window_[window_next_] = static_cast<double>(cycle_bytes_);
    window_next_ = (window_next_ + 1) % kRateWindow;
    cycle_bytes_ = 0;
    // A full segment whose last batch left no keyframe at the head of the buffered frames
    // (finished() could not rotate then) rotates as soon as one is.
    if (writer_.rotation_due()) {
      rotated = writer_.rotate_segment(next_segment_id_(), last_end_us_);
      last_rotated_ = rotated;
    }
    // A cut before a keyframe carries the rest of the batch into the next cycle's half: only as
    // much as leaves room there for the largest cycle this stream sent lately, so waiting for a
    // keyframe never refuses a frame that would have been taken (a stream that fills its half every
    // cycle waits until the keyframe heads a batch, or rotates mid-GOP at the wait's end).
    const double largest_cycle = window_.empty() ? 0.0 : *std::max_element(window_.begin(), window_.end());
    const double room = static_cast<double>(writer_.buffer_bytes()) - largest_cycle;
    auto sealed = writer_.seal_cycle(room > 0 ? static_cast<std::size_t>(room) : 0);
    held_ = sealed ? Held::no : sealed.error() == errc::unavailable ? Held::write_pending : Held::segment_failed;
    if (sealed) {
      io = !*sealed ? StreamIo{.write = true, .skip_reason = "no_data"}
                    : StreamIo{.write = true, .pieces = {{(*sealed)->device_offset, (*sealed)->data}}, .durable = true};
    } else if (sealed.error() == errc::unavailable) {
      io = {.write = true, .skip_reason = "previous_write_pending"};
    } else {
      // The segment could not be started or extended (the volume is full until retention runs, or
      // an IO error): nothing of the unsealed half was written or acknowledged, so it stays buffered
      // and goes to a new segment next cycle; the old one keeps its durable frames for the catalog.
      ++failed_;
      closed = keep_or_free(writer_.rotate_segment(next_segment_id_(), last_end_us_));
      io = {.write = true, .skip_reason = "segment_failed"};
    }
  }
  if (rotated && on_segment_closed_ && rotated->frame_count > 0) on_segment_closed_(*rotated);
  if (closed && on_segment_closed_) on_segment_closed_(*closed);
  return io;
}

void RecordingStream::finished(std::uint64_t, Result<void> result) {
  std::optional<std::uint64_t> durable;
  std::optional<SegmentSummary> closed, progress;
  {
    std::lock_guard lock(mu_);
    writer_.batch_written(result);
    if (!result) {
      // The batch may be partly on disk, but none of it may ever be acknowledged.
      closed = fail_locked();
    } else {
      durable = writer_.mark_durable();
      // Rotation waits for a keyframe at the head of what is buffered (rotation_due): the next
      // segment starts with one, so no reader that starts a segment at its first keyframe loses frames.
      if (writer_.rotation_due()) {
        closed = writer_.rotate_segment(next_segment_id_(), last_end_us_);
        last_rotated_ = closed;
      } else if (durable && on_progress_) {
        const SegmentSummary& open = writer_.current();
        if (open.segment_id != reported_segment_ || reported_end_pts_ == kNoTimestamp ||
            (progress_every_pts_ > 0 && open.end_pts != kNoTimestamp &&
             open.end_pts - reported_end_pts_ >= progress_every_pts_)) {
          progress = open;
          reported_segment_ = open.segment_id;
          reported_end_pts_ = open.end_pts;
        }
      }
    }
  }
  if (!result) {
    report_failure(closed);
    return;
  }
  // Callbacks outside the lock: they may take their time (catalog batcher, network ack queue).
  if (durable && on_durable_) on_durable_(*durable);
  if (closed && on_segment_closed_ && closed->frame_count > 0) on_segment_closed_(*closed);
  if (progress) on_progress_(*progress);
}

std::optional<SegmentSummary> RecordingStream::fail_locked() {
  ++failed_;
  // mark_durable() has run for every batch before the failed one, so this is exactly what the
  // device holds; the failed batch's frames and those buffered after them are the sender's to resend.
  failed_at_ = writer_.durable_sequence();
  if (!writer_.segment_open()) return std::nullopt;
  // Its volume work (erasing the failed batch, freeing an empty segment's extents) is synchronous
  // IO: it waits for the next prepare() or close(), since this may run inside the device's poll.
  cleanup_pending_ = true;
  SegmentSummary closed = writer_.close_segment();
  if (closed.frame_count > 0) return closed;
  empty_segment_ = std::move(closed);
  return std::nullopt;
}

std::optional<SegmentSummary> RecordingStream::cleanup_locked() {
  if (!cleanup_pending_) return std::nullopt;
  cleanup_pending_ = false;
  if (auto r = writer_.erase_failed_batch(); !r) {
    log::error("cannot erase a failed batch; recovery may read unacknowledged frames into the segment",
               {{"segment", writer_.current().segment_id}, {"error", r.error().message()}});
  }
  return keep_or_free(std::move(empty_segment_));
}

std::optional<SegmentSummary> RecordingStream::keep_or_free(SegmentSummary closed) {
  if (closed.frame_count > 0) return closed;
  bool freed = true;
  for (auto e : closed.extents) {
    if (auto r = volume_.free_extent(e); !r) {
      freed = false;
      log::error("cannot free the extent of a segment without frames; the catalog has it freed at the next start",
                 {{"segment", closed.segment_id}, {"extent", e}, {"error", r.error().message()}});
    }
  }
  if (freed) return std::nullopt;
  closed.discard = true;
  return closed;
}

void RecordingStream::report_failure(const std::optional<SegmentSummary>& closed) {
  // The segment first: what was durable is on its way to the catalog before the stream is ended.
  if (closed && on_segment_closed_) on_segment_closed_(*closed);
  std::uint64_t last_durable = 0;
  {
    std::lock_guard lock(mu_);
    last_durable = *failed_at_;
  }
  if (on_failed_) on_failed_(last_durable);
}

Result<void> RecordingStream::grow(std::size_t io_bytes) {
  std::size_t block = 0;
  {
    std::lock_guard lock(mu_);
    block = writer_.block_bytes();
  }
  const std::size_t bytes = (io_bytes + block - 1) / block * block;
  std::array<AlignedBuffer, 2> halves{AlignedBuffer(bytes, block), AlignedBuffer(bytes, block)};
  std::lock_guard lock(mu_);
  return writer_.grow_buffer(std::move(halves));
}

std::optional<SegmentSummary> RecordingStream::durable_view() const {
  std::lock_guard lock(mu_);
  if (!writer_.segment_open() || writer_.current().frame_count == 0) return std::nullopt;
  return writer_.current();
}

std::optional<SegmentSummary> RecordingStream::last_rotated() const {
  std::lock_guard lock(mu_);
  return last_rotated_;
}

std::optional<SegmentSummary> RecordingStream::close() {
  std::lock_guard lock(mu_);
  // A stream that failed has no open segment; what its failure left is returned instead.
  if (auto discarded = cleanup_locked()) return discarded;
  if (!writer_.segment_open()) return std::nullopt;
  auto last = keep_or_free(writer_.close_segment());
  // Readers see it as the last one closed until whoever ends the stream hands it on.
  if (last && !last->discard) last_rotated_ = last;
  return last;
}

RecordingStream::MeasuredRate RecordingStream::measured_rate() const {
  std::lock_guard lock(mu_);
  MeasuredRate m;
  m.cycles = window_.size();
  if (window_.empty()) return m;
  double sum = 0, sum_sq = 0;
  for (double x : window_) {
    sum += x;
    sum_sq += x * x;
  }
  m.mean = sum / static_cast<double>(window_.size());
  m.stddev = std::sqrt(std::max(0.0, sum_sq / static_cast<double>(window_.size()) - m.mean * m.mean));
  return m;
}

std::uint64_t RecordingStream::durable_sequence() const {
  std::lock_guard lock(mu_);
  return writer_.durable_sequence();
}

RecordingStream::Held RecordingStream::refused_because() const {
  std::lock_guard lock(mu_);
  return refused_because_;
}

RecordingStream::Held RecordingStream::held() const {
  std::lock_guard lock(mu_);
  return held_;
}

std::uint64_t RecordingStream::refused_frames() const {
  std::lock_guard lock(mu_);
  return refused_;
}

std::optional<std::uint64_t> RecordingStream::failed_at() const {
  std::lock_guard lock(mu_);
  return failed_at_;
}

std::uint64_t RecordingStream::failed_writes() const {
  std::lock_guard lock(mu_);
  return failed_;
}

}  // namespace vigil::storage
