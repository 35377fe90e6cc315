#pragma once
// Recovery of a segment from the volume alone (docs/durability.md, "Recovery"): read its
// extents in ordinal order, scan the records from the start of its data, and stop at the
// first record that is not valid. The result says where the segment really ends, rebuilds
// its GOP index, and tells whether the scan ended cleanly or at damage (a crash gap).
// Thread: the disk's IO thread (blocking reads). Errors: values.
#include <cstdint>
#include <functional>

#include "storage/record.hpp"
#include "storage/segment_writer.hpp"
#include "storage/volume.hpp"

namespace vigil::storage {

struct RecoveredSegment {
  SegmentSummary summary;  // frames, sequences, pts range, extents, end offset, GOP index
  SegmentHeader header;
  ScanStop stop = ScanStop::none;  // why the scan ended (end_of_data = clean)
  std::uint64_t stop_offset = 0;   // logical offset where it ended
  bool clean() const noexcept { return stop == ScanStop::end_of_data; }
};

// Called for every valid frame, in order; the record's payload is valid during the call.
using FrameVisitor = std::function<void(const ScannedRecord&)>;

// SEGMENT_ID must be one of volume.segments(). errc::corruption if its segment header (in
// the first extent) is unreadable or its first extent is missing: no frame can be trusted.
Result<RecoveredSegment> recover_segment(Volume& volume, std::uint64_t segment_id,
                                         const FrameVisitor& visit = {}) noexcept;

}  // namespace vigil::storage
