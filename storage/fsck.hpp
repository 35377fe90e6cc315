#pragma once
// Volume check: verifies the superblock, every extent header, every segment header and every
// record's CRC, and says where each problem is (segment, stream, logical and device offset).
// It scans as recovery does (storage/segment_recovery.hpp), on past damage: every damaged span
// in the middle of a segment (valid records further on: frames lost) is a problem, and a scan
// that ends at something other than zeros is a torn tail, what a crash leaves (nothing
// acknowledged lost). Thread: the disk's IO thread (blocking reads). Errors: values.
#include <cstdint>
#include <string>
#include <vector>

#include "storage/record.hpp"
#include "storage/volume.hpp"

namespace vigil::storage {

enum class ProblemKind {
  segment_header,   // the segment header does not decode: none of its frames can be trusted
  missing_extent,   // a gap in the segment's extent ordinals
  damaged_records,  // unreadable records with valid ones after them: frames lost mid-segment
  torn_tail,        // the segment ends in a partial record (an unclean stop); informational
};
const char* problem_kind_name(ProblemKind k) noexcept;

struct Problem {
  ProblemKind kind;
  std::uint64_t segment_id = 0;
  std::uint64_t stream_id = 0;
  std::uint64_t logical_offset = 0;  // within the segment
  std::uint64_t device_offset = 0;   // on the volume
  ScanStop stop = ScanStop::none;
  std::uint64_t resumes_at = 0;  // damaged_records: logical offset of the next valid record
  std::string describe() const;
};

struct FsckReport {
  std::uint64_t segments = 0, records = 0, bytes = 0;
  std::vector<Problem> problems;
  // Problems that mean lost or untrustworthy data (a torn tail alone is not one).
  std::size_t serious() const noexcept;
};

Result<FsckReport> check_volume(Volume& volume) noexcept;

// Repair what the volume alone can: segments whose header is unreadable are reclaimed (their
// frames cannot be trusted, and their space comes back). Returns how many were reclaimed.
Result<std::size_t> repair_volume(Volume& volume, const FsckReport& report) noexcept;

}  // namespace vigil::storage
