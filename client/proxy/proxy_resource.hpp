#pragma once
// What a viewer's request names, as far as sharing is concerned: the kind of resource, its
// camera, the key it is cached and coalesced under, and how long an answer stays fresh.
// Media (HLS VOD init/segments, exports, thumbnails) is keyed without ?access_token= (the bytes
// do not depend on who asks); playlists keep it in their key, because vigild writes the token
// into the segment URLs of a playlist asked for with one.
// Thread: any (pure functions). Errors: none (an unknown path is kind `other`, not cached).
#include <chrono>
#include <string>
#include <string_view>

namespace vigil::client {

enum class ResourceKind {
  hls_segment,
  hls_init,
  hls_playlist,
  live_playlist,
  live_init,
  live_segment,
  export_mp4,
  thumbnail,
  other
};

struct Resource {
  ResourceKind kind = ResourceKind::other;
  std::string path;                  // the target before '?'
  std::string camera;                // for /api/v1/cameras/NAME/...; "" otherwise
  std::string access_token;          // ?access_token= as sent ("" if none)
  std::string target_without_token;  // the target with every access_token parameter removed
  bool fixed_times = false;          // every time of the request is absolute (no now, -5m, default end)
};

Resource classify(std::string_view target);
const char* kind_name(ResourceKind kind);
bool cacheable(ResourceKind kind);  // everything but `other`
// The cache and coalescing key of a GET of R (whose full target is TARGET).
std::string cache_key(const Resource& r, std::string_view target);
// How long an answer to R stays fresh, given the upstream's Cache-Control (may be ""): live
// playlists 1 s, VOD playlists and live segments 2 s, media with relative times 5 s, media with
// absolute times the upstream's max-age (at most 1 h; 60 s if it gave none).
std::chrono::milliseconds freshness(const Resource& r, std::string_view cache_control);

}  // namespace vigil::client
