#pragma once
// The read path of a segment: GOP by GOP, every record's CRC verified before any of it is
// served. A damaged GOP is never served: it is reported as a gap and skipped. Playback of a
// time starts at the keyframe at or before it (a decoder needs it); keyframes-only iteration
// serves fast-forward, GOP-by-GOP reverse iteration serves rewind.
// Thread: any that may block on the device (synchronous reads): tests and offline tools. Served
// video is read as interactive IO through the cycle scheduler instead, so it never waits behind
// stream IO. Errors: values.
#include <cstdint>
#include <functional>
#include <vector>

#include "storage/record.hpp"
#include "storage/segment_writer.hpp"
#include "storage/volume.hpp"

namespace vigil::storage {

struct GopData {
  std::vector<AlignedBuffer> buffers;  // the bytes read (one per extent the GOP touches)
  std::vector<ScannedRecord> frames;   // views into buffers, in order; frames[0] is the keyframe
};

enum class ReadDirection { forward, reverse };

struct ReadRange {
  std::int64_t from_pts = 0;
  std::int64_t to_pts = 0;  // exclusive
  bool keyframes_only = false;
  ReadDirection direction = ReadDirection::forward;
};

// A GOP that could not be served, and why.
struct ReadGap {
  std::int64_t from_pts = 0;
  std::int64_t to_pts = 0;
  errc reason = errc::corruption;
  std::uint64_t offset = 0;  // logical offset of the GOP in the segment
};

class SegmentReader {
 public:
  // SUMMARY describes a closed or recovered segment (extents, end offset, GOP index) and
  // must outlive the reader.
  SegmentReader(Volume& volume, const SegmentSummary& summary) noexcept : volume_(volume), summary_(summary) {}

  std::size_t gop_count() const noexcept { return summary_.gop_index.size(); }
  // GOP I: from keyframe I up to keyframe I+1 (or the end of the segment's data), verified.
  // errc::corruption if any of its records is damaged.
  Result<GopData> read_gop(std::size_t i) noexcept;
  // Frames of RANGE in its direction; each damaged GOP becomes one on_gap call instead.
  Result<void> read_range(const ReadRange& range, const std::function<void(const ScannedRecord&)>& on_frame,
                          const std::function<void(const ReadGap&)>& on_gap) noexcept;

 private:
  std::int64_t gop_end_pts(std::size_t i) const noexcept;

  Volume& volume_;
  const SegmentSummary& summary_;
};

}  // namespace vigil::storage
