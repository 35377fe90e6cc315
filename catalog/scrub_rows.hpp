#pragma once
// The integrity scrubber's catalog side (docs/scrubber.md): the closed segments of a volume that
// have a known checksum, whether one is still closed (retention marks a segment 'deleting' before
// it frees any extent, so a segment still closed after its read was read whole), the
// 'corruption' gap a damaged one becomes, and its repair from a verified archive copy.
// Thread: the scrub thread's own connection, never an IO thread. Errors: throws (pqxx errors).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <pqxx/row>
#include <pqxx/transaction>

namespace vigil::catalog {

struct ScrubTarget {
  std::uint64_t segment_id = 0, stream_id = 0;
  std::int64_t start_us = 0, end_us = 0;
  std::uint64_t data_bytes = 0;
  std::uint32_t checksum_crc32c = 0;
  std::vector<std::uint64_t> extent_offsets;  // device offsets, by ordinal
};

// VOLUME_ID's closed segments with a checksum (0 is unknown: written before it was kept, or
// rebuilt by recovery), oldest first.
// A ScrubTarget from a row whose first columns are: id, stream_id, start_us, end_us, data_bytes,
// checksum_crc32c, and the extents' volume offsets as an array in ordinal order (the archive's
// query reads the same columns).
ScrubTarget scrub_target_from(const pqxx::row& r);
std::vector<ScrubTarget> scrub_targets(pqxx::work& tx, std::int64_t volume_id);
bool segment_still_closed(pqxx::work& tx, std::uint64_t segment_id);
// A 'corruption' gap on STREAM_ID over [START_US, END_US) with DETAIL, unless the same one is
// there already (found by an earlier epoch). True if inserted.
bool record_corruption_gap(pqxx::work& tx, std::uint64_t stream_id, std::int64_t start_us, std::int64_t end_us,
                           const std::string& detail);
// The detail of a 'corruption' gap the scrubber records for SEGMENT_ID on VOLUME: "scrub: segment
// S on VOLUME" and what it found (WHAT). The prefix names the segment: the repair and the copier
// find the segment's gaps by it (in SQL: 'scrub: segment ' || id || ' on ').
std::string corruption_gap_prefix(std::uint64_t segment_id);
std::string corruption_gap_detail(std::uint64_t segment_id, const std::string& volume, const std::string& what);

// Repair from the archive (docs/scrubber.md, "Repair"), first step: if SEGMENT_ID is still closed
// and has a verified 's3' copy (segment_copies), it is marked 'deleting' — its extents are freed
// next, and finish_deleting (catalog/retention_rows.hpp) then keeps it as 'archived', read from
// its copy — and the 'corruption' gaps the scrubber recorded for it go: from this commit on the
// footage is the copy's, whole (a crash before the extents are freed is finished by recovery,
// which ends 'deleting' the same way). Nullopt, nothing changed: no copy, or no longer closed.
struct ArchiveRepair {
  std::string bucket, object_key;
  std::int64_t start_us = 0, end_us = 0;  // the segment's media time
  std::size_t gaps_removed = 0;
};
std::optional<ArchiveRepair> begin_archive_repair(pqxx::work& tx, std::uint64_t segment_id);

}  // namespace vigil::catalog
