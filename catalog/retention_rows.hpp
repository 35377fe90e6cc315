#pragma once
// Retention's catalog side (docs/durability.md, "Deletion"): what a volume holds that could be
// reclaimed, and the two steps around the disk's reclaim — segments are marked 'deleting'
// (committed) before any extent is freed, and their rows go only after; a crash between the
// two is finished by the next start's recovery (plan_recovery's finish_delete).
// Thread: the retention thread's own connection. Errors: throws (pqxx errors).
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include <pqxx/transaction>

#include "storage/retention.hpp"

namespace vigil::catalog {

// Candidates on VOLUME_ID, each with the extents it holds: the LIMIT oldest closed (and damaged)
// segments no active evidence lock covers, and up to LIMIT past their camera's retention_days at
// NOW_US; the age limits of their streams' cameras. WITH_QUOTA: also those past their camera's
// retention_bytes (schema 0008), flagged over_quota — the oldest unlocked closed segments of a
// camera whose unlocked recording, every volume, holds more data_bytes than its quota, until the
// excess is covered (a full pass; a pass for space alone skips the cost).
struct RetentionView {
  std::vector<storage::ClosedSegment> closed;
  std::map<std::uint64_t, storage::StreamRetention> per_stream;
};
// DAY_US: how long retention_days' day is (a day; tests shorten it, --retention-day-ms).
RetentionView retention_view(pqxx::work& tx, std::int64_t volume_id, std::int64_t now_us, std::size_t limit,
                             bool with_quota = true, std::int64_t day_us = 86'400'000'000LL);

// Marks IDS 'deleting' — those still closed or damaged and under no active evidence lock (checked
// again here: IDS may come from a view read before a lock was taken) — and records a 'retention'
// gap where a reclaimed segment has older recording of its camera left before it. Returns the ids
// marked.
// CHECK_LOCKS false: the extents are already being freed (retention decided during a catalog
// outage with the locks it had last seen), so the catalog follows whatever the locks say now.
std::vector<std::uint64_t> mark_deleting(pqxx::work& tx, const std::vector<std::uint64_t>& ids,
                                         bool check_locks = true);

// The segments' rows (extents and GOP index with them), once their extents are free; those with a
// verified archive copy (segment_copies) stay, as 'archived', without their extents, and lose the
// 'corruption' gaps the scrubber recorded over their local copy (the archive's copy is whole).
void finish_deleting(pqxx::work& tx, const std::vector<std::uint64_t>& ids);

}  // namespace vigil::catalog
