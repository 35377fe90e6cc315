#pragma once
// Writes one stream's frames into segments on a volume (docs/durability.md, "Write order").
//
// Double buffering: frames are appended as records into the filling half of two aligned
// buffers of T·BR bytes each; once per cycle write_cycle() seals that half and writes it as
// one aligned IO at the segment's write position while the other half starts filling. The
// data is durable only after the disk's flush: mark_durable() then returns the last
// sequence number that may be acknowledged.
//
// Layout: a segment's logical offset L lives in its extent of ordinal L / extent_bytes, at
// byte L % extent_bytes of that extent (block 0 of each extent is its header; the first
// extent also holds the segment header). A batch never straddles two extents.
//
// Thread: one caller at a time, not thread-safe itself: RecordingStream calls append() from a
// network thread and the rest from the IO thread, under its own mutex. Errors: values. Memory: 2 × buffer_bytes + the GOP index
// at most; in memory, what the halves hold: a half that was written gives its pages back at the next
// append (on the network thread, not the IO thread), and fills them again as it is written.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "storage/gop_index.hpp"
#include "storage/record.hpp"
#include "storage/volume.hpp"

namespace vigil::storage {

struct SegmentWriterOptions {
  std::size_t buffer_bytes = 1 << 20;              // each half; rounded up to a block multiple
  std::uint64_t max_segment_bytes = 256ull << 20;  // close and start a new segment beyond this
  // ... or once its durable frames span this much media time (pts units; 0: no limit): a slow
  // camera's segment closes in minutes, not hours, so retention and recovery work in small units.
  std::int64_t max_segment_pts = 0;
  // The GOP index takes a keyframe only this long (pts units) after the last one it took (0: every
  // keyframe). Audio, every packet of which is a keyframe, is indexed about once a second this
  // way instead of 50 times: playback starts at most that much before its time.
  std::int64_t min_gop_spacing_pts = 0;
  // A segment closes only where the next one can start with a keyframe (docs/format.md,
  // "Segments start at a keyframe"). By size it starts waiting for one this many bytes (at most a
  // quarter of max_segment_bytes) before max_segment_bytes, and closes mid-GOP anyway at
  // max_segment_bytes, as before: the largest segment does not grow. By time it waits past
  // max_segment_pts, up to twice that span.
  std::uint64_t keyframe_wait_bytes = 32ull << 20;
};

// What the catalog needs when a segment closes.
struct SegmentSummary {
  std::uint64_t segment_id = 0;
  std::uint64_t stream_id = 0;
  std::uint64_t first_sequence = 0;
  std::uint64_t last_sequence = 0;  // 0 if no frame
  std::uint64_t frame_count = 0;
  std::int64_t first_pts = kNoTimestamp;
  // The latest pts + duration of its frames: with B-frames the last frame in decode order is not
  // the last one shown, and an end taken from it would cut the latest-shown frame off exports.
  std::int64_t end_pts = kNoTimestamp;
  std::uint64_t end_offset = 0;        // logical end of written data
  std::vector<std::uint64_t> extents;  // by ordinal
  GopIndex gop_index;
  // CRC32C over the bytes of every frame record (header and payload, no padding) in logical
  // order, as far as the segment is durable; what the scrubber re-checks. 0: unknown (a segment
  // rebuilt by recovery, or written before the checksum was kept).
  std::uint32_t checksum_crc32c = 0;
  // Nothing of it may ever be served, but its extents could not be freed (the device failed):
  // catalogued as being deleted, so the next start frees them (catalog/recovery_plan.hpp).
  bool discard = false;
};

class SegmentWriter {
 public:
  SegmentWriter(Volume& volume, std::uint64_t stream_id, SegmentWriterOptions options);

  // Starts a segment: takes its first extent and writes the segment header (durably).
  Result<void> open_segment(std::uint64_t segment_id, std::span<const std::byte> codec_parameters,
                            std::uint64_t first_sequence, std::int64_t start_us) noexcept;
  // The same without IO: frames can be appended at once (from the network side) and the
  // extent and header are written by the first seal_cycle() on the IO thread.
  Result<void> open_segment_deferred(std::uint64_t segment_id, std::span<const std::byte> codec_parameters,
                                     std::uint64_t first_sequence, std::int64_t start_us) noexcept;
  bool segment_open() const noexcept { return open_; }

  // Buffers one frame into the filling half. errc::unavailable when the half is full for
  // this cycle (the caller refuses the frame to its sender: policing, never a silent drop);
  // errc::frame_exceeds_buffer for a frame that can never fit, invalid_argument for a sequence out of order.
  Result<void> append(const RecordHeader& header, std::span<const std::byte> payload) noexcept;

  // The cycle's stream IO: seals the filling half and writes it (not yet durable).
  // A no-op when nothing was buffered.
  Result<void> write_cycle() noexcept;

  // write_cycle() in two steps, for the cycle scheduler's asynchronous, chunked IO: seal the
  // filling half and say where it goes (nullopt: nothing buffered), then report the write's
  // outcome. The other half fills meanwhile; the sealed one must not be sealed again before
  // batch_written(). A failed write fails the segment: later seals return io_error, and
  // mark_durable() never covers the failed batch (the owner ends the segment there).
  struct SealedBatch {
    std::uint64_t device_offset = 0;
    std::span<std::byte> data{};
  };
  // A segment waiting to rotate (rotation_due) has the batch cut before its first keyframe only
  // when the records from there on, which then take room in the next cycle's half, are at most
  // MAX_CARRY_BYTES: the caller's room for them without refusing frames it would have taken.
  // 0: never cut (a caller that closes at segment_full() itself, as write_cycle()'s do).
  Result<std::optional<SealedBatch>> seal_cycle(std::size_t max_carry_bytes = 0) noexcept;
  void batch_written(Result<void> result) noexcept;
  bool failed() const noexcept { return failed_; }
  // A batch is sealed and its write not yet reported.
  bool batch_in_flight() const noexcept { return sealed_meta_.has_value(); }
  // After a failed batch write: part of the batch may have landed, and whole records of it would
  // be read as data at recovery (frames never acknowledged, past the catalog's end of the
  // segment). Writes one zero block where the batch began, which the scanner reads as the end of
  // the segment's data. A no-op when no batch failed.
  Result<void> erase_failed_batch() noexcept;
  // Call after the disk's flush completed: returns the last durable sequence, if any new.
  std::optional<std::uint64_t> mark_durable() noexcept;

  // Whether the open segment has reached max_segment_bytes or max_segment_pts (a caller that
  // writes whole cycles itself, without rotation_due(), closes it then).
  bool segment_full() const noexcept;
  // Whether to rotate now (the caller then calls rotate_segment): the segment is at its limit
  // (less the keyframe wait, by size), nothing of it is sealed and not yet durable, and the
  // buffered frames that would begin the next segment start with a keyframe (or the wait is
  // over). Until then the segment takes the frames of its last GOP: seal_cycle() cuts the batch
  // before its first keyframe.
  bool rotation_due() const noexcept;
  // Ends the segment (after write_cycle + flush + mark_durable of its last frames).
  SegmentSummary close_segment() noexcept;
  // Ends the segment and continues in a new one (its header written at the next seal); frames
  // already buffered for the next cycle go to the new segment. Call between batch_written()
  // and the next seal, after mark_durable().
  SegmentSummary rotate_segment(std::uint64_t new_segment_id, std::int64_t start_us) noexcept;

  // Larger halves for a stream re-admitted at a higher rate: HALVES (two buffers of the new
  // stream IO size, allocated by the caller outside any IO thread) replace the current ones as
  // each comes free at a seal, so the IO thread only moves pointers. invalid_argument when they
  // are not larger, not whole blocks, or a batch of that size would not fit in an extent.
  Result<void> grow_buffer(std::array<AlignedBuffer, 2> halves) noexcept;

  std::uint64_t durable_sequence() const noexcept { return durable_sequence_; }
  const SegmentSummary& current() const noexcept { return summary_; }
  std::size_t buffer_bytes() const noexcept { return buffer_bytes_; }
  // Bytes of the two halves in memory now (AlignedBuffer::resident_bytes).
  std::size_t resident_buffer_bytes() const noexcept;
  std::uint32_t block_bytes() const noexcept { return volume_.block_bytes(); }

 private:
  std::uint64_t data_start(std::uint32_t ordinal) const noexcept;

  Volume& volume_;
  std::uint64_t stream_id_;
  SegmentWriterOptions options_;
  std::size_t buffer_bytes_;
  AlignedBuffer halves_[2];
  std::vector<AlignedBuffer> grown_;  // larger halves waiting for theirs to come free (grow_buffer)
  int filling_ = 0;
  // The half written last still holds its pages: the next append gives them back. Not at the
  // write's completion, which runs on the IO thread (a madvise there would be its time).
  bool written_half_held_ = false;
  RecordBatch batch_;
  bool open_ = false;
  std::uint32_t header_blocks_ = 1;
  std::uint64_t write_offset_ = 0;  // logical offset of the next batch
  std::uint64_t next_sequence_ = 0;
  std::uint32_t appended_crc_ = 0;  // running CRC32C over the segment's records appended so far
  SegmentSummary summary_;          // grows as batches are written
  // Frames written but not yet durable: (last sequence, GOP entries) per written batch.
  struct Pending {
    std::uint64_t last_sequence;
    std::vector<GopEntry> keyframes;
    std::uint64_t frames;
    std::int64_t first_pts, end_pts;
    std::uint32_t crc_after = 0;  // the segment's running checksum after this batch's last record
  };
  std::vector<Pending> written_;
  Pending filling_meta_{};
  std::optional<Pending> sealed_meta_;  // the batch being written
  std::uint64_t sealed_end_ = 0;        // write_offset_ after it
  std::uint64_t sealed_offset_ = 0;     // its device offset
  std::uint64_t durable_sequence_ = 0;
  bool header_written_ = false, failed_ = false;
  std::optional<std::uint64_t> failed_batch_offset_;  // device offset of the batch that failed
  std::uint32_t batch_crc_start_ = 0;  // the segment's running checksum before the filling half's records
  SegmentHeader header_{};
  // The filling half's records from the first keyframe on (offset CUT_BYTES) move to the half
  // that fills next: they begin the next segment (seal_cycle of a full segment).
  struct MovedRecords {
    Pending meta;  // keyframe offsets from the start of the half they move to
    std::size_t bytes = 0, frames = 0;
  };
  MovedRecords cut_batch_at(std::size_t cut_bytes) noexcept;
  bool rotation_wanted() const noexcept;
  bool keyframe_wait_over() const noexcept;
  std::int64_t durable_span_pts() const noexcept;
  Result<void> write_header() noexcept;
  void start_summary(std::uint64_t segment_id, std::uint64_t first_sequence) noexcept;
};

}  // namespace vigil::storage
