#pragma once
// Recovery of a segment from the volume alone (docs/durability.md, "Recovery"): read its
// extents in ordinal order and scan the records from the start of its data. At a record that
// is not valid the scan resynchronises: it looks for the next valid record (its magic, then
// its CRC) of the segment's stream with a higher sequence, in this extent or a later one, and
// goes on from there. What lies between is a damaged span
// (damage inside the segment: frames lost, a corruption gap); damage with nothing valid after
// it is the torn tail a crash leaves (nothing acknowledged lost). Stale records of an earlier
// use of an extent never resynchronise the scan: another stream's id or a lower sequence.
// The result says where the segment really ends and rebuilds its GOP index over all of it.
// Thread: the disk's IO thread (blocking reads). Errors: values.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "storage/record.hpp"
#include "storage/segment_writer.hpp"
#include "storage/volume.hpp"

namespace vigil::storage {

// Records lost inside a segment, between two valid ones.
struct DamagedSpan {
  std::uint64_t from_offset = 0;         // logical offset where the damage starts
  std::uint64_t to_offset = 0;           // logical offset of the record the scan resumed at
  std::uint64_t first_sequence = 0;      // the first frame lost
  std::uint64_t last_sequence = 0;       // the last frame lost (the resumed record's sequence - 1)
  std::int64_t from_pts = kNoTimestamp;  // end of the last valid frame before it (or the segment's start_us)
  std::int64_t to_pts = kNoTimestamp;    // pts of the resumed frame
  ScanStop stop = ScanStop::none;        // what the scan met there
};

struct RecoveredSegment {
  SegmentSummary summary;  // frames, sequences, pts range, extents, end offset, GOP index
  SegmentHeader header;
  ScanStop stop = ScanStop::none;    // why the scan ended (end_of_data = clean, else a torn tail)
  std::uint64_t stop_offset = 0;     // logical offset where it ended
  std::vector<DamagedSpan> damaged;  // damage inside the segment, skipped by resynchronising
  bool clean() const noexcept { return stop == ScanStop::end_of_data; }
};

// Called for every valid frame, in order; the record's payload is valid during the call.
using FrameVisitor = std::function<void(const ScannedRecord&)>;

// SEGMENT_ID must be one of volume.segments(). errc::corruption if its segment header (in
// the first extent) is unreadable or its first extent is missing: no frame can be trusted.
Result<RecoveredSegment> recover_segment(Volume& volume, std::uint64_t segment_id,
                                         const FrameVisitor& visit = {}) noexcept;

// The first offset at or after FROM in DATA where a valid record of STREAM with a sequence of
// at least MIN_SEQUENCE starts, and that record's sequence. BLOCK_BYTES: the scanner's blocks.
struct Resync {
  std::size_t at = 0;
  std::uint64_t sequence = 0;
};
std::optional<Resync> find_resync(std::span<const std::byte> data, std::size_t from, std::size_t block_bytes,
                                  std::uint64_t stream_id, std::uint64_t min_sequence) noexcept;

}  // namespace vigil::storage
