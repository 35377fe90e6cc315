#pragma once
// Rebuilding the catalog from the volumes (docs/durability.md, "Rebuilding the catalog"): a
// segment with frames whose stream the catalog does not know (a new or emptied catalog, a lost
// row) is evidence, never reclaimed. Its stream is rebuilt from the description its segment
// header carries (storage/stream_description.hpp): the camera by name, the stream row under its
// own id, with codec parameters, ended. The recovery plan then adopts its segments like any
// orphan (recovery_plan.hpp). Holes between consecutive streams of a camera get a gap.
// Segments written before headers carried descriptions are rebuilt under a camera named
// unknown-stream-ID, with a warning.
// Thread: start-up or the rebuild/fsck commands. Errors: SQL throws; the planning is pure.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <pqxx/transaction>

#include "catalog/recovery_plan.hpp"
#include "storage/stream_description.hpp"

namespace vigil::catalog {

inline constexpr const char* kRebuiltGapDetail = "rebuilt from volume: cause unknown";

// One stream to rebuild, from its segments on one volume.
struct RebuiltStream {
  std::int64_t stream_id = 0;
  // From the first of its segments (by start) whose header describes it; camera, codec, role and
  // media kind made valid for the catalog (a name it refuses becomes unknown-stream-ID).
  storage::StreamDescription description;
  std::string warning;  // empty: described; else why the description is a stand-in
  std::int64_t start_us = 0, end_us = 0;
  std::uint64_t segments = 0, frames = 0, data_bytes = 0;
};

// The streams of FOUND's readable segments with frames that are not in KNOWN_STREAMS, by id.
std::vector<RebuiltStream> plan_stream_rebuild(const std::vector<VolumeSegment>& found,
                                               const std::set<std::int64_t>& known_streams);

// Cameras (by name, created if missing) and stream rows (ended, on DISK_ID) for STREAMS, in TX;
// the streams' id sequence moves past them so new streams never take a rebuilt id.
void apply_stream_rebuild(pqxx::work& tx, const std::vector<RebuiltStream>& streams, std::int64_t disk_id);

// A camera's stream and the time its recording covers.
struct StreamSpan {
  std::int64_t stream_id = 0;
  std::int64_t start_us = 0, end_us = 0;
};
struct HoleGap {
  std::int64_t stream_id = 0;  // the stream before the hole
  std::int64_t from_us = 0, to_us = 0;
};
// The holes between consecutive streams of one camera (SPANS, any order): where no stream covers
// [end of everything before, start of the next).
std::vector<HoleGap> plan_stream_holes(std::vector<StreamSpan> spans);

// Gaps (reason source_lost, detail kRebuiltGapDetail) for the holes next to REBUILT streams in
// their cameras' recordings, where no gap of that stream overlaps the hole already (so running
// twice writes nothing new). Returns how many were written.
int write_rebuild_gaps(pqxx::work& tx, const std::set<std::int64_t>& rebuilt);

}  // namespace vigil::catalog
