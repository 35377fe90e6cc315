#pragma once
// What a playback reads, from the catalog (docs/catalog.md): the segments of a camera's track
// (its main or sub video, or its audio: never a mix) that
// intersect a time range — closed ones and the open one as far as the catalog knows it — with
// their extents and GOP index, and the codec parameters of the stream they belong to. The node
// that records a segment knows it better than the catalog (its durable end of a cycle ago, and
// segments whose rows are still queued): it passes them as FRESHER, which replace the catalog's
// rows of the same segments. One plan serves segments of one codec configuration (a PART of the
// range), across volumes and across streams of the camera with the same parameters (a
// reconnect): its segments name their volumes, and a reader reads each from its own disk. The
// plan stops where the codec parameters change (or, with one_volume, where the volume changes),
// so a viewer's decoder never sees parameters change under it; it names where the next part
// begins and lists every part of the range.
// Thread: the catalog pool. Errors: throws (pqxx; std::runtime_error for a bad GOP index blob).
#include <cstdint>
#include <optional>
#include <pqxx/transaction>
#include <string>
#include <vector>

#include "common/track.hpp"
#include "storage/playback_stream.hpp"

namespace vigil::catalog {

// A segment read from the archive (docs/archive.md): only the archive holds it now (state
// 'archived'), or its copy stands in for it while its node is down (copy_stand_in.hpp). Its object
// holds the segment's logical bytes [0, bytes), so a GOP index offset is an object offset.
struct ArchivedObject {
  std::string bucket{}, key{};
  std::uint64_t bytes = 0;
  std::size_t block_bytes = 4096;  // of the volume it was recorded on: records are padded to it
};

// Archived segments are read through the same GOP walk as local ones (storage::PlaybackStream):
// their extents are laid end to end from SLOT × kArchiveSlotBytes, so each piece the walk asks
// for names its segment (offset / kArchiveSlotBytes: SLOT, its index in the plan) and its object
// offset (offset % kArchiveSlotBytes: the logical offset, extent headers included).
inline constexpr std::uint64_t kArchiveSlotBytes = 1ull << 40;  // far above the largest segment (256 MiB)
void lay_out_as_object(storage::PlaybackSegment& seg, std::size_t slot);

// A segment as the recording node knows it now (server/disks/recent_segments.hpp).
struct FreshSegment {
  std::int64_t volume_id = 0;
  std::int64_t start_us = 0;
  bool open = false;  // still being written: it ends at its last durable cycle
  std::string codec{};
  std::string extradata{};
  int width = 0, height = 0;
  int sample_rate_hz = 0, channels = 0;  // audio; 0: video, or not kept
  std::int64_t rate_bps = 0;
  storage::PlaybackSegment segment{};
  std::optional<ArchivedObject> archived{};  // read from the archive (never for fresher rows)
};

// One part of a range: consecutive segments with the same codec parameters.
struct PlaybackPart {
  std::int64_t from_us = 0, to_us = 0;  // the first segment's start, the last one's end
  std::string codec{};
  int width = 0, height = 0;
  std::size_t segments = 0;
};

struct PlaybackPlan {
  std::int64_t camera_id = 0;
  std::int64_t volume_id = 0;  // the first segment's volume
  std::string codec{};
  std::string extradata{};
  int width = 0, height = 0;
  int sample_rate_hz = 0, channels = 0;              // audio; 0: video, or not kept
  std::int64_t rate_bps = 0;                         // the highest admitted rate among the streams served
  std::int64_t data_rate_bps = 0;                    // the highest average data rate of a segment served (≥ 1 s)
  std::int64_t from_us = 0, to_us = 0;               // what the segments cover of the request
  std::vector<storage::PlaybackSegment> segments{};  // in time order
  std::vector<std::int64_t> segment_volumes{};       // the volume of each of SEGMENTS
  // For each of SEGMENTS: its archive object when it is read from the archive (laid out by
  // lay_out_as_object with its index as slot), else none (read from its volume).
  std::vector<std::optional<ArchivedObject>> segment_archives{};
  // Where the next part of the range begins (its segments have other codec parameters, or are
  // on another volume with one_volume); 0: the plan serves the range to its recorded end.
  std::int64_t next_from_us = 0;
  std::vector<PlaybackPart> parts{};  // every part of the range, this plan's first
  bool camera_exists = false;
  bool track_exists = false;  // the camera has (or had) a stream of the track asked for
  bool reaches_open = false;  // the last segment is still being written: the plan ends at its durable end
};

// Segments of TRACK (its camera's streams of that role and media kind) intersecting
// [FROM_US, TO_US), at most LIMIT, with FRESHER (segments of that track) in place of the
// catalog's rows of the same ids. ONE_VOLUME: the plan also stops
// where the volume changes, or where segments change between the volume and the archive (a reader
// bound to one disk's scheduler, or to the archive: wire playback). READER_NODE: the node that
// reads, when it has an archive tier: a closed segment of another node that is down, with a copy,
// is then read from its copy like an archived one (copy_stand_in.hpp); empty: never.
PlaybackPlan plan_playback(pqxx::work& tx, const Track& track, std::int64_t from_us, std::int64_t to_us,
                           int limit = 10'000, const std::vector<FreshSegment>& fresher = {}, bool one_volume = false,
                           const std::string& reader_node = {});

}  // namespace vigil::catalog
