#pragma once
// Media routes of the HTTP API (docs/openapi.yaml): recorded video as files a browser or
// player takes as they are. Every disk read is interactive IO through the disk's cycle
// scheduler (ClipReader), so these never take time from admitted streams.
//   GET /api/v1/cameras/{name}/export.mp4?from&to[&download=1][&keyframes=1[&rate=R][&reverse=1]]
//       an MP4 of the range without re-encoding: index first, from the keyframe at or before
//       FROM; ETag, If-None-Match, Range (one range: 206, bad: 416); built in memory and kept
//       in the ExportCache for the Range requests that follow. One MP4 across volume changes
//       and reconnects with the same codec parameters; where they change, the export is the
//       range's first part and X-Vigil-Parts and Link (rel="next", rel="parts") name the rest.
//       More video than --export-memory-bytes (512 MiB): fragmented MP4 streamed while it is
//       read (chunked, X-Vigil-Export: fragmented, no Range, no ETag), in bounded memory. keyframes=1: trick play — only
//       each GOP's keyframe is read, re-timed to play at R× (1–64); reverse=1: rewind — the
//       keyframes from TO back to FROM, the MP4's time running forward as the recording's runs back.
//   GET /api/v1/cameras/{name}/export/parts?from&to
//       the parts of the range (codec parameters, range, the export of each), as JSON.
//   GET /api/v1/cameras/{name}/thumbnail.jpg?at[&width=N]
//       a JPEG of the keyframe at or before AT (within 10 minutes before it; only that
//       keyframe is read), at most N pixels
//       wide (default 320); cached like exports.
// Thread: the session's network thread. Errors: exceptions (ApiError, pqxx),
// answered by http_routes.
#include <boost/asio/awaitable.hpp>
#include <string>

#include "server/net/http_query.hpp"
#include "server/api/http_routes.hpp"

namespace vigil::server {

// Longest range one media request may name.
inline constexpr std::int64_t kMaxMediaRangeUs = 24ll * 3600 * 1'000'000;

// A media request's range: `from`, and `to` (now when absent), checked — TO after FROM, at most
// kMaxMediaRangeUs (BadRequest otherwise, telling the client to ask IN_PARTS: "export in parts").
struct MediaRange {
  std::int64_t from_us = 0, to_us = 0;
};
MediaRange media_range(const QueryParams& q, const char* in_parts = "ask in parts");

boost::asio::awaitable<HttpReply> export_route(const RouteContext& ctx, const HttpRequest& req, const QueryParams& q,
                                               const std::string& camera);

boost::asio::awaitable<HttpReply> export_parts_route(const RouteContext& ctx, const HttpRequest& req,
                                                     const QueryParams& q, const std::string& camera);

boost::asio::awaitable<HttpReply> thumbnail_route(const RouteContext& ctx, const HttpRequest& req, const QueryParams& q,
                                                  const std::string& camera);

// A MediaResponse for DATA (all of it, or the request's Range of it), with ETAG and TYPE; 304
// when If-None-Match names ETAG; 416 for a range that cannot be served. FIXED: the same URL will
// always answer these bytes (absolute times, nothing still being written), so clients may keep
// them for an hour; otherwise they revalidate every time (ETag).
HttpReply media_reply(const HttpRequest& req, std::shared_ptr<const std::vector<std::byte>> data,
                      const std::string& etag, const std::string& content_type, bool fixed = true);

// Whether the time parameter KEY names a fixed instant ("@…", a date), not one relative to now
// (absent, "now", "-5m").
bool fixed_time(const QueryParams& q, std::string_view key);

}  // namespace vigil::server
