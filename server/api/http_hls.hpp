#pragma once
// HLS with fMP4 segments for recorded video (RFC 8216; docs/openapi.yaml):
//   GET /api/v1/cameras/{name}/hls.m3u8?from&to     VOD playlist of the range
//   GET /api/v1/cameras/{name}/hls/init.mp4?t0&t1   init segment (ftyp + moov)
//   GET /api/v1/cameras/{name}/hls/seg.m4s?t0&t1&o  media segment: the GOPs of [t0, t1)
//   GET /api/v1/cameras/{name}/hls/master.m3u8?from&to  master playlist: hls.m3u8 with its CODECS
// A camera's AAC audio is each segment's second track (audio=1 on the init and media segments).
// The playlist is cut from the GOP index alone (no disk IO): segments are whole GOPs, a new one at
// the first keyframe of each kHlsTargetUs cell of wall-clock time, named by exact microsecond
// bounds, so a segment request is stateless and its bytes are the same every time (ETag). Segment
// decode times are measured from the playlist's origin (o), so separately built segments line up.
// A range that reaches the live edge (the camera's open segment) continues live: the playlist is
// an EVENT playlist (a sliding live window for a relative from=) that lists each segment once
// its next keyframe is durable and ends with ENDLIST when the range is all recorded: scrubbing
// from an hour ago to now is one playlist.
// A segment's GOPs are read as interactive IO (ClipReader) like any media route.
// Live (hls_live.hpp), while the camera records:
//   GET /api/v1/cameras/{name}/live.m3u8           the last segments at the live edge
//   GET /api/v1/cameras/{name}/live/init.mp4, live/seg.m4s?n=SEQUENCE
// Thread: the session's network thread. Errors: exceptions (ApiError, pqxx).
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "server/net/http_query.hpp"
#include "server/api/http_routes.hpp"
#include "storage/playback_stream.hpp"

namespace vigil::server {

inline constexpr std::int64_t kHlsTargetUs = 4'000'000;

struct HlsSegment {
  std::int64_t from_us = 0, to_us = 0;
};

// Segments cut at keyframes of SEGMENTS within [FROM_US, TO_US), a new one at the first keyframe
// in each later TARGET_US cell of wall-clock time: the first starts at the keyframe at or before
// FROM_US, the last ends at TO_US or where the recording does (left out with OPEN_END: it still
// grows). A hole between storage segments starts a new HLS segment. ALIGN_FIRST (a start relative
// to now, which moves at each reload): the first segment starts at the first keyframe of FROM_US's
// cell instead, so every reload names it the same.
std::vector<HlsSegment> cut_hls_segments(const std::vector<storage::PlaybackSegment>& segments, std::int64_t from_us,
                                         std::int64_t to_us, std::int64_t target_us = kHlsTargetUs,
                                         bool open_end = false, bool align_first = false);

// PATH_TAIL: what follows /api/v1/cameras/{name}/ ("hls.m3u8", "hls/init.mp4", "hls/seg.m4s",
// "hls/master.m3u8", "live.m3u8", "live/init.mp4", "live/seg.m4s").
boost::asio::awaitable<HttpReply> hls_route(const RouteContext& ctx, const HttpRequest& req, const QueryParams& q,
                                            const std::string& camera, const std::string& path_tail);

}  // namespace vigil::server
