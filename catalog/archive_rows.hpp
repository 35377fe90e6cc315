#pragma once
// The archive tier's catalog side (docs/archive.md): the closed segments of a volume that have no
// verified copy in the archive yet, and the segment_copies row that records one.
// Thread: the archive thread's own connection, never an IO thread. Errors: throws (pqxx errors).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <pqxx/transaction>

#include "catalog/scrub_rows.hpp"

namespace vigil::catalog {

struct ArchiveTarget {
  ScrubTarget segment;  // where it lies on its volume and what its records must check to
  std::string camera;   // the camera's name
  std::string role;     // its stream's role: "main" or "sub"
  std::int64_t closed_at_us = 0;
};

struct SegmentCopy {
  std::uint64_t segment_id = 0;
  std::string bucket, object_key, etag;
  std::uint64_t bytes = 0;
};

// VOLUME_ID's closed segments (with a known checksum) closed at or before CLOSED_BY_US that have no
// 's3' copy, oldest closed first, at most LIMIT.
std::vector<ArchiveTarget> archive_targets(pqxx::work& tx, std::int64_t volume_id, std::int64_t closed_by_us,
                                           std::size_t limit);
// When the oldest closed segment of VOLUME_ID without an 's3' copy was closed; none: every one has
// a copy (the archive's lag is now minus this).
std::optional<std::int64_t> oldest_uncopied_closed_at_us(pqxx::work& tx, std::int64_t volume_id);
// Records COPY as the segment's verified 's3' copy. False: the segment is gone (reclaimed while it
// was copied; the object is then the caller's to delete) or already has one.
bool record_segment_copy(pqxx::work& tx, const SegmentCopy& copy);
// Copies whose S3 legal hold must change: on, for those not held whose segment an active evidence
// lock of its stream overlaps; off, for those held that no active lock overlaps any more.
struct HoldChange {
  SegmentCopy copy;
  bool hold = false;  // the hold to set
};
std::vector<HoldChange> legal_hold_changes(pqxx::work& tx, std::int64_t volume_id, std::size_t limit);
void record_legal_hold(pqxx::work& tx, std::uint64_t segment_id, bool hold);
// The segment's 's3' copy, if it has one.
std::optional<SegmentCopy> segment_copy(pqxx::work& tx, std::uint64_t segment_id);

}  // namespace vigil::catalog
