#pragma once
// Reconciling a volume with the catalog after a start (docs/durability.md, "Recovery" and
// "Reconcile"). The volume is the truth for data; the catalog is the index. This file decides
// (pure function, unit-testable) and applies (SQL in one transaction):
//  - a segment the catalog has as open is closed at the end recovery found on the volume,
//    and a gap with reason crash_recovery covers [its end, the restart);
//  - a segment on the volume the catalog does not know is adopted (orphan on disk), if its
//    stream is known (a stream the catalog lacks is first rebuilt from the segment headers:
//    stream_rebuild.hpp; until then its segments are kept, never reclaimed); one without frames
//    is reclaimed;
//  - a catalog segment missing from the volume is marked damaged and covered by a gap
//    with reason corruption (orphan in the catalog);
//  - a closed segment whose frame count or end disagrees with the volume is rewritten from
//    the volume (counts, extents, GOP index);
//  - damage inside a segment that recovery skipped (a damaged span) gets a gap with reason
//    corruption covering exactly its frames.
// Closed segments whose catalog extents match the volume's headers are trusted and not read
// (trusted_segments): start-up time does not grow with what is recorded.
// Times: record pts are microseconds (streams are rescaled to 1/1,000,000 at ingest).
// Thread: start-up, before the disk's IO thread serves streams. Errors: SQL throws.
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <pqxx/transaction>

#include "storage/volume.hpp"

namespace vigil::catalog {

// Frames lost inside a segment that recovery skipped by resynchronising on the next valid
// record (storage/segment_recovery.hpp): a gap with reason corruption covers exactly them.
struct CorruptSpan {
  std::int64_t from_us = 0;                             // end of the last valid frame before the damage
  std::int64_t to_us = 0;                               // the first valid frame after it
  std::uint64_t first_sequence = 0, last_sequence = 0;  // the frames lost
  std::uint64_t from_offset = 0, to_offset = 0;         // logical bytes in the segment
  std::string stop;                                     // what the scan met (a ScanStop name)
};

// What recovery found on the volume for one segment.
struct VolumeSegment {
  std::uint64_t segment_id = 0;
  std::uint64_t stream_id = 0;
  bool readable = true;  // segment header decoded
  std::uint64_t frame_count = 0;
  std::int64_t start_us = 0;  // first frame
  std::int64_t end_us = 0;    // end of the last valid frame
  std::uint64_t data_bytes = 0;
  std::vector<std::uint64_t> extent_offsets;  // volume offsets by ordinal
  std::uint64_t extent_bytes = 0;
  std::vector<std::byte> gop_index_blob;
  std::uint32_t gop_count = 0;
  bool clean = true;                 // scan ended at end of data
  std::vector<CorruptSpan> damaged;  // inside the segment, skipped
  // The stream description its header carries (storage/stream_description.hpp; empty for a
  // segment written before headers carried one, or not scanned): what rebuilds its stream.
  std::vector<std::byte> description;
  // False: a closed segment whose catalog row matches its extent headers, trusted without
  // reading its records (fast restart); only the fields from its headers are set.
  bool scanned = true;
};

// What the catalog says about one segment of the volume.
struct CatalogSegment {
  std::int64_t id = 0;
  std::int64_t stream_id = 0;
  std::string state;  // open, closed, damaged, deleting
  std::int64_t start_us = 0;
  std::int64_t end_us = 0;
  std::int64_t frame_count = 0;
  std::int64_t data_bytes = 0;
};

struct RecoveryPlan {
  std::vector<VolumeSegment> close;    // open in the catalog: close at the recovered end + crash gap
  std::vector<VolumeSegment> adopt;    // orphans on disk with a known stream
  std::vector<std::uint64_t> reclaim;  // orphans on disk with no frames (or unreadable, on --repair)
  std::vector<CatalogSegment> lost;    // catalog segments missing from the volume, or unreadable on it
  // Unreadable on the volume, or with frames of a stream the catalog lacks: kept, tried again at
  // the next start (the latter never stays: reconcile_volume rebuilds its stream first).
  std::vector<std::uint64_t> kept;
  std::vector<VolumeSegment> restore;       // 'damaged' in the catalog but readable again
  std::vector<std::int64_t> finish_delete;  // 'deleting' in the catalog and already gone from disk
  std::vector<VolumeSegment> refresh;       // closed, but its frame count or end differs from the volume's
};

// Recovers every segment on VOLUME (storage/segment_recovery) into the plan's terms, except
// those in TRUSTED, which are described from their extent headers alone (scanned = false).
std::vector<VolumeSegment> scan_volume(storage::Volume& volume, const std::set<std::uint64_t>& trusted = {});

// The segments of VOLUME that start-up need not read (docs/durability.md, "Fast restart"): closed
// (or being deleted) in the catalog, with catalog extents equal, ordinal by ordinal, to the
// extents whose headers name the segment on the volume. A closed segment never changes on
// disk, so its catalog row is still right; anything else (open, damaged, unknown to the
// catalog, extents that disagree) is scanned.
std::set<std::uint64_t> trusted_segments(pqxx::work& tx, const storage::Volume& volume, std::int64_t volume_id);

// What cannot be read is never reclaimed at start: a read error may pass (a cable, a controller,
// a disk that spins up late), and the video is evidence. It is marked damaged, kept and tried
// again at every start; RECLAIM_UNREADABLE (`vigil fsck --repair`, an operator's decision) frees it.
RecoveryPlan plan_recovery(const std::vector<VolumeSegment>& on_volume, const std::vector<CatalogSegment>& in_catalog,
                           const std::set<std::int64_t>& known_streams, bool reclaim_unreadable = false);

// Catalog side of the plan, in TX. RESTART_US is when this start happened (end of crash gaps).
void apply_recovery_plan(pqxx::work& tx, std::int64_t volume_id, const RecoveryPlan& plan, std::int64_t restart_us);

// The catalog's segments of VOLUME_ID (any state).
std::vector<CatalogSegment> catalog_segments(pqxx::work& tx, std::int64_t volume_id);

}  // namespace vigil::catalog
