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

// VOLUME_ID's closed segments (with a known checksum) that have no 's3' copy and were closed at
// least their camera's archive_after_s (NULL: DEFAULT_AFTER_US) before NOW_US, oldest closed
// first, at most LIMIT. Not those the scrubber found damaged (a 'corruption' gap of theirs): they
// are never copied, so they neither count in the lag below nor are read again every pass.
std::vector<ArchiveTarget> archive_targets(pqxx::work& tx, std::int64_t volume_id, std::int64_t now_us,
                                           std::int64_t default_after_us, std::size_t limit);
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
// Archive retention: VOLUME_ID's copies whose segment ended more than its camera's
// archive_retention_days (NULL: DEFAULT_DAYS; 0: kept) of DAY_US before NOW_US, under no legal hold
// and no active evidence lock, oldest first, at most LIMIT.
std::vector<SegmentCopy> expired_copies(pqxx::work& tx, std::int64_t volume_id, std::int64_t now_us, int default_days,
                                        std::int64_t day_us, std::size_t limit);
// Takes the evidence locks' table (SHARE) for the rest of TX and checks again that SEGMENT_ID's copy
// may go (no hold, no active lock): a lock taken meanwhile waits until TX ends, so the object is
// never deleted under one. False: it must stay.
bool lock_copy_for_deletion(pqxx::work& tx, std::uint64_t segment_id);
// After its object was deleted: the copy's row, and the segment's too when it was archived.
void forget_copy(pqxx::work& tx, std::uint64_t segment_id);
// The segment's 's3' copy, if it has one.
std::optional<SegmentCopy> segment_copy(pqxx::work& tx, std::uint64_t segment_id);

}  // namespace vigil::catalog
