#pragma once
// Recorded video for the HTTP media routes (export, HLS, thumbnails): a camera's range planned
// from the catalog (on the catalog pool) and its GOPs read from the disk as interactive IO
// (ClipReader), with the checks every media route makes first — the camera exists, something
// is recorded there, the volume is open here, the clip is not too large to build in memory.
// Thread: the session's network thread. Errors: exceptions — ApiError with the status to
// answer (404, 413, 503), pqxx errors from the catalog, std::system_error from the device.
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/media_writer.hpp"
#include "common/track.hpp"
#include "catalog/playback_rows.hpp"
#include "server/core/catalog_pool.hpp"
#include "server/disks/archive_reads.hpp"
#include "server/net/http_server.hpp"
#include "storage/playback_stream.hpp"

namespace vigil::server {

class DiskSet;
class ClipReader;

struct ClipPlan {
  std::string camera;
  Track track;  // the camera's track planned
  catalog::PlaybackPlan plan;
  std::int64_t from_us = 0, to_us = 0;  // the request, clipped to what is recorded
  std::uint64_t estimated_bytes = 0;    // GOP bytes the range touches
  // What the muxers and the decoder are given; ApiError 422 when the recorded parameters are
  // outside the media limits (common/media_limits.hpp).
  media::CodecInfo codec() const;
  // Names exactly what a clip of this plan contains (segments, their lengths, the range):
  // equal tags mean equal bytes. KIND separates renditions (mp4, hls segment, jpeg).
  std::string etag(const std::string& kind) const;
};

// Reads a plan's GOPs batch by batch, each segment from the disk of its own volume, or from the
// archive when only the archive holds it (docs/archive.md, "Readers"): the plan's segments in runs
// on one volume (or in the archive), a ClipReader per run, one after the other (reverse: the last
// run first). Every volume is checked when it is made (503 if one is not open here, or if a
// segment is archived and this server has no archive tier), so a
// response that streams as it reads never starts on a range it cannot finish for that reason.
// Memory: one ClipReader batch (BATCH_BYTES, plus the GOP that crosses its end) at a time.
class ClipCursor {
 public:
  ClipCursor(DiskSet* disks, const ClipPlan& plan, storage::PlaybackRange range, std::size_t batch_bytes = 4u << 20);
  ~ClipCursor();
  ClipCursor(ClipCursor&&) noexcept;
  // The next GOPs in reading order; empty once the range is read.
  boost::asio::awaitable<std::vector<std::shared_ptr<storage::PlaybackGop>>> next();
  std::uint64_t bytes_read() const noexcept;
  std::uint64_t requests() const noexcept;

 private:
  struct Run;
  DiskSet* disks_;
  storage::PlaybackRange range_;
  std::size_t batch_bytes_;
  std::vector<Run> runs_;
  ArchivedObjects objects_;  // the plan's archived segments by slot (none: nothing archived)
  std::size_t at_ = 0;
  std::unique_ptr<ClipReader> reader_;
  std::uint64_t bytes_done_ = 0, requests_done_ = 0;
};

struct Clip {
  std::vector<std::shared_ptr<storage::PlaybackGop>> gops;  // in reading order; damaged ones flagged
  std::size_t frames = 0, damaged_gops = 0;
  std::uint64_t bytes_read = 0, requests = 0;
};

// Plans TRACK's [FROM_US, TO_US): closed segments and the open one up to its last durable cycle
// (DISKS' recent segments, when given, are fresher than the catalog). 404 if the camera is
// unknown, has no stream of that track (a camera without a sub stream asked for its sub), or
// nothing is recorded; 413 if the GOPs it touches exceed MAX_BYTES. The plan is the
// range's first part (plan.parts lists them all; plan.next_from_us is where the next begins).
boost::asio::awaitable<ClipPlan> plan_clip(CatalogPool& catalog, DiskSet* disks, const Track& track,
                                           std::int64_t from_us, std::int64_t to_us, std::uint64_t max_bytes);

// The camera's audio (its one audio stream, role main: docs/media.md "Audio") planned over
// [FROM_US, TO_US), beside either of VIDEO's tracks (main or sub); nullopt when the camera has none
// there, or when its GOPs exceed MAX_BYTES (the media is then its video alone).
boost::asio::awaitable<std::optional<ClipPlan>> plan_audio_beside(CatalogPool& catalog, DiskSet* disks,
                                                                  const Track& video, std::int64_t from_us,
                                                                  std::int64_t to_us, std::uint64_t max_bytes);

// Reads the plan's GOPs of [FROM_US, TO_US) (KEYFRAMES_ONLY: each GOP's keyframe alone) as
// interactive IO on the disks that hold them (ClipCursor); 503 if a volume is not open on this
// server.
// DIRECTION reverse (keyframes only, as the wire protocol's reverse playback: the same
// PlaybackStream walk): the GOPs from the last one before TO_US back to the one holding FROM_US.
boost::asio::awaitable<Clip> read_clip(DiskSet* disks, const ClipPlan& plan, std::int64_t from_us, std::int64_t to_us,
                                       bool keyframes_only,
                                       storage::ReadDirection direction = storage::ReadDirection::forward);

}  // namespace vigil::server
