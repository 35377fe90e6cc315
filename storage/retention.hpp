#pragma once
// Retention: which closed segments to reclaim, and reclaiming them crash-safely
// (docs/durability.md, "Deletion"). Recording never stops because a disk is full: when free
// space falls below the reserve (seconds of admitted ingest), the oldest closed segments that
// no evidence lock covers are reclaimed. Segments past their stream's maximum age or beyond
// its byte budget go too. If only locked (or open) data is left, new recordings must be
// refused at admission with that reason (admission_check), never failed mid-write.
// Thread: the disk's IO thread (reclaim issues IO). Errors: values.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/rate.hpp"
#include "storage/volume.hpp"

namespace vigil::storage {

struct ClosedSegment {
  std::uint64_t segment_id = 0;
  std::uint64_t stream_id = 0;
  std::int64_t start_us = 0;
  std::int64_t end_us = 0;
  std::uint64_t extent_count = 0;  // space it holds, in extents
  // Its camera's byte quota (catalog cameras.retention_bytes) is exceeded by what the camera holds
  // from this segment on (newer segments, any volume, locked ones not counted): it goes.
  bool over_quota = false;
};

// A time range of one stream that must never be reclaimed.
struct EvidenceLock {
  std::uint64_t stream_id = 0;
  std::int64_t from_us = 0;
  std::int64_t to_us = 0;  // exclusive
};

struct StreamRetention {
  std::optional<std::int64_t> max_age_us{};
  std::optional<std::uint64_t> max_extents{};
};

struct RetentionPolicy {
  std::map<std::uint64_t, StreamRetention> per_stream{};
  double reserve_seconds = 120;  // free space kept, in seconds of admitted ingest
};

struct RetentionInput {
  std::vector<ClosedSegment> closed;  // any order
  std::vector<EvidenceLock> locks;
  std::uint64_t free_extents = 0;
  std::uint64_t extent_bytes = 0;
  Rate admitted_ingest{};  // sum of admitted rates on this volume
  std::int64_t now_us = 0;
};

// Extents the reserve needs: ceil(reserve_seconds × ingest / extent_bytes).
std::uint64_t reserve_extents(const RetentionPolicy& policy, const RetentionInput& in) noexcept;
bool is_locked(const ClosedSegment& s, const std::vector<EvidenceLock>& locks) noexcept;

// Segment ids to reclaim now, oldest first: expired by age, byte budget or the camera's quota
// (over_quota), then as many of the oldest unlocked ones as needed to restore the reserve. Locked
// segments are never chosen.
std::vector<std::uint64_t> choose_reclaim(const RetentionPolicy& policy, const RetentionInput& in);

// Whether a new stream of RATE can be admitted on this volume as far as space goes:
// admission_refused when, even after reclaiming everything unlocked, the reserve for the
// current ingest plus this stream cannot be met.
Result<void> space_admission_check(const RetentionPolicy& policy, const RetentionInput& in, Rate rate) noexcept;

// Frees every extent of SEGMENT_ID (tombstone header written durably first).
Result<void> reclaim_segment(Volume& volume, std::uint64_t segment_id) noexcept;

}  // namespace vigil::storage
