#pragma once
// The integrity scrubber's catalog side (docs/scrubber.md): the closed segments of a volume that
// have a known checksum, whether one is still closed (retention marks a segment 'deleting' before
// it frees any extent, so a segment still closed after its read was read whole), and the
// 'corruption' gap a damaged one becomes.
// Thread: the scrub thread's own connection, never an IO thread. Errors: throws (pqxx errors).
#include <cstdint>
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

}  // namespace vigil::catalog
