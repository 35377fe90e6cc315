#pragma once
// The HTTP routes vigild serves. Thread: the returned handler runs on the network
// io_context and awaits catalog work on the CatalogPool. Errors: the handler never throws;
// whatever a route throws is answered by server/net/api_error.hpp's table (the client's
// mistakes 4xx, the server's failures 5xx and logged).
#include <functional>
#include <string>
#include <vector>

#include "server/core/auth.hpp"
#include "server/core/catalog_pool.hpp"
#include "server/disks/volume_startup.hpp"
#include "server/net/http_server.hpp"

namespace vigil::server {

class CatalogHealth;
class CameraStatusBoard;
class DiskSet;
class ExportCache;
class MediaPool;
class Authenticator;
class Metrics;
class HlsLive;
class WebAssets;

struct RouteContext {
  CatalogPool& catalog;
  std::string database_mode;  // "embedded" or "external", shown by /healthz
  // Configured volumes vigild could not bring up (/healthz says degraded); null: none.
  const std::vector<UnavailableVolume>* unavailable_volumes = nullptr;
  // The catalog's reachability as a probe of its own last saw it (/healthz answers at once);
  // null: /healthz asks through the catalog pool (unit rigs).
  const CatalogHealth* health = nullptr;
  DiskSet* disks = nullptr;  // the open volumes' disks (media reads); null: none
  // The pulled cameras as the camera manager last published them (/healthz); null: not pulling.
  const CameraStatusBoard* cameras = nullptr;
  ExportCache* exports = nullptr;  // finished exports kept for repeated/ranged requests
  MediaPool* media = nullptr;      // where muxing and thumbnail decoding run; null: in place (unit rigs)
  // An export of more video than this is streamed as fragmented MP4 instead of built in memory.
  std::uint64_t export_memory_bytes = 512ull << 20;
  Authenticator* auth = nullptr;     // null: no tokens checked (unit rigs)
  const Metrics* metrics = nullptr;  // GET /metrics (http_metrics.hpp); null: 404
  HlsLive* live = nullptr;           // live HLS channels; null: no live HLS
  const WebAssets* web = nullptr;    // the web UI at /ui/ (open, no token); null or empty: 404
  // The request's token's grant, set per request by check_access; null: everything (no tokens
  // checked). Routes that list many cameras filter with sees().
  const Grant* grant = nullptr;
  // Called after the cameras' routes changed the catalog's cameras (the camera manager reads them
  // at once instead of at its next poll); empty: nobody to tell.
  std::function<void()> cameras_changed;
  // This node's name among the nodes sharing the catalog: media held on another node's volume is
  // proxied there (http_front_door.hpp). Empty: every request is answered here (unit rigs).
  std::string node;
};

// The request's token may see CAMERA (always without tokens).
inline bool sees(const RouteContext& ctx, std::string_view camera) { return !ctx.grant || ctx.grant->sees(camera); }

HttpHandler make_http_routes(RouteContext ctx);

}  // namespace vigil::server
