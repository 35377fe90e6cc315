#pragma once
// A recording stream on the cycle scheduler (docs/scheduler.md, docs/durability.md): frames
// arrive from the network side into the filling half of the stream's double buffer (the
// SegmentWriter's); once per cycle the scheduler writes the full half as the stream IO, flushes,
// and only then is the writer told which frames are durable — the acknowledgement. Segments
// roll over at max_segment_bytes or max_segment_pts of media, at the next keyframe (each segment
// starts with one: docs/format.md); each closed segment is reported for the catalog.
// Policing: a frame that does not fit in this cycle's half is refused with rate_exceeded.
// A failed write or flush ends the stream: its segment is closed at the last durable frame,
// durable_sequence() stays there for good, and every later append() is refused with io_error.
// Continuing in a new segment instead would let the next batch's cumulative acknowledgement
// cover the frames of the failed one, which were never on the device; the sender must resend
// them from failed_at() + 1 in a new stream. (A segment that cannot be started or extended is
// different: nothing was written, the frames stay buffered, the stream goes on in a new segment.)
// Whatever ends a segment, it ends properly: one with frames goes to the catalog (a failed batch
// after them erased on the volume, so recovery never reads unacknowledged frames into it); one
// without frames gives its extents back, so nothing is left on the volume that no row names.
// Thread: append() from one network thread; prepare()/finished()/close() and all callbacks on
// the IO thread. One mutex guards the writer; it is held for a frame copy or a seal, never
// for the device IO itself. Errors: values.
#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "storage/segment_writer.hpp"
#include "storage/stream_io.hpp"

namespace vigil::storage {

struct RecordingStreamOptions {
  std::size_t io_bytes = 1 << 20;  // S = T·BR: each half of the double buffer
  std::uint64_t max_segment_bytes = 256ull << 20;
  std::int64_t max_segment_pts = 0;                 // SegmentWriterOptions::max_segment_pts
  std::uint64_t keyframe_wait_bytes = 32ull << 20;  // SegmentWriterOptions::keyframe_wait_bytes
  std::int64_t min_gop_spacing_pts = 0;             // SegmentWriterOptions::min_gop_spacing_pts (audio)
  // Set when the volume is taken out of service (storage/guarded_device.hpp): the stream then
  // ends at its next cycle like after a failed write, so its sender moves to another volume.
  const std::atomic<bool>* volume_failing = nullptr;
  // The open segment is reported (on_progress) at its first durable cycle and then whenever its
  // durable frames reach this much more media time (pts units; 0: at its first durable cycle only).
  std::int64_t progress_every_pts = 0;
};

class RecordingStream final : public CycleStream {
 public:
  using NextSegmentId = std::function<std::uint64_t()>;
  using DurableFn = std::function<void(std::uint64_t last_sequence)>;
  using SegmentFn = std::function<void(const SegmentSummary& closed)>;
  // The stream failed; LAST_DURABLE is the last sequence it will ever acknowledge (0: none).
  using FailedFn = std::function<void(std::uint64_t last_durable)>;

  RecordingStream(Volume& volume, std::uint64_t stream_id, std::vector<std::byte> codec_parameters,
                  std::uint64_t first_sequence, std::int64_t start_us, RecordingStreamOptions options,
                  NextSegmentId next_segment_id, DurableFn on_durable, SegmentFn on_segment_closed,
                  FailedFn on_failed = {});

  // Network side. rate_exceeded: the cycle's half is full (the sender is told; nothing is
  // dropped silently); frame_exceeds_buffer: a frame larger than S; invalid_argument: an
  // out-of-order sequence; io_error: the stream has failed (failed_at()).
  Result<void> append(const RecordHeader& header, std::span<const std::byte> payload) noexcept;

  StreamIo prepare(std::uint64_t cycle) override;
  void finished(std::uint64_t cycle, Result<void> result) override;

  // Re-admission at a higher rate (network side): the double buffer grows to halves of
  // IO_BYTES (rounded up to whole blocks), allocated here, outside the lock, and swapped in by
  // the IO thread as each half comes free. Errors as SegmentWriter::grow_buffer.
  Result<void> grow(std::size_t io_bytes);

  // The open segment as far as it is durable (acknowledged): its extents, end offset, frames
  // and GOP index up to the last flushed cycle, never a frame beyond it; nullopt when no segment
  // is open or none of it is durable yet. A copy (the GOP index of one segment: small), taken
  // under the stream's lock; any thread.
  std::optional<SegmentSummary> durable_view() const;
  // The segment closed last (by rotation, or by close()) from its close on: readers may ask
  // before whoever got it has handed it on; nullopt before the first one.
  std::optional<SegmentSummary> last_rotated() const;
  // Called on the IO thread, outside the lock, with durable_view() of the open segment at its
  // first durable cycle and every RecordingStreamOptions::progress_every_pts of media after that
  // (for the catalog's row of the open segment). Set before the stream joins a scheduler.
  void on_progress(SegmentFn fn) { on_progress_ = std::move(fn); }

  // Ends the stream: the open segment's summary (call after its last write was acknowledged), or
  // after a failure one to catalog as discarded (SegmentSummary::discard).
  std::optional<SegmentSummary> close();

  // Why the half was full when append() last refused a frame with rate_exceeded (call on the
  // network thread after that refusal): the sender sent more than a cycle's worth (no), or the
  // half was not taken at this cycle's start, so it had to hold more — the previous write was
  // still pending (the IO thread was late with this stream: write_pending) or the segment could
  // not be started or extended (segment_failed). Set by prepare() until the next cycle's start.
  enum class Held : std::uint8_t { no, write_pending, segment_failed };
  Held refused_because() const;
  // Why the half was not taken at the last cycle's start (no: it was, or it was empty).
  Held held() const;

  std::size_t memory_bytes() const noexcept { return 2 * writer_.buffer_bytes(); }
  // The stream's measured rate over the last kRateWindow cycles (bytes per cycle): what the
  // statistical admission policy charges a VBR stream with, instead of its declared peak.
  static constexpr std::size_t kRateWindow = 60;
  struct MeasuredRate {
    double mean = 0, stddev = 0;
    std::size_t cycles = 0;
  };
  MeasuredRate measured_rate() const;
  std::uint64_t durable_sequence() const;
  std::uint64_t refused_frames() const;
  std::uint64_t failed_writes() const;
  // The last durable sequence when the stream failed; nullopt while it is healthy.
  std::optional<std::uint64_t> failed_at() const;

 private:
  mutable std::mutex mu_;
  Volume& volume_;
  const std::atomic<bool>* volume_failing_;
  SegmentWriter writer_;
  NextSegmentId next_segment_id_;
  DurableFn on_durable_;
  SegmentFn on_segment_closed_;
  FailedFn on_failed_;
  SegmentFn on_progress_;
  std::int64_t progress_every_pts_ = 0;
  std::optional<SegmentSummary> last_rotated_;
  std::uint64_t reported_segment_ = 0;            // the open segment last given to on_progress_
  std::int64_t reported_end_pts_ = kNoTimestamp;  // its end then
  std::uint64_t refused_ = 0, failed_ = 0;
  std::uint64_t cycle_bytes_ = 0;  // payload + headers appended since the last seal
  std::vector<double> window_;     // bytes per cycle, ring of kRateWindow
  std::size_t window_next_ = 0;
  std::int64_t last_end_us_ = 0;
  std::optional<std::uint64_t> failed_at_;
  Held held_ = Held::no, refused_because_ = Held::no;

  // Ends the stream after an IO failure (mu_ held): the open segment, for the catalog.
  std::optional<SegmentSummary> fail_locked();
  // A closed segment for the catalog, or nullopt for one without frames, whose extents are
  // freed here (IO thread, never inside the device's poll: synchronous header writes).
  std::optional<SegmentSummary> keep_or_free(SegmentSummary closed);
  // What fail_locked() left for the volume (mu_ held; IO thread outside the device's poll): a
  // segment to catalog as discarded when its extents could not be freed.
  std::optional<SegmentSummary> cleanup_locked();
  bool cleanup_pending_ = false;
  SegmentSummary empty_segment_;  // a failed segment without frames, its extents to free
  // Outside mu_: hands the closed segment to the catalog, then says the stream failed.
  void report_failure(const std::optional<SegmentSummary>& closed);
};

}  // namespace vigil::storage
