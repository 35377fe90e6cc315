#pragma once
// The proxy's counters and their Prometheus text (exposition format 0.0.4) for GET /metrics.
// Upstream requests are counted per kind of resource (hls_segment, hls_init, hls_playlist,
// live_playlist, live_segment, export, thumbnail, auth, other), so sharing can be checked.
// Thread: one (the proxy's io_context thread); plain integers. Errors: none.
#include <cstdint>
#include <map>
#include <string>

namespace vigil::client {

struct ProxyMetrics {
  std::map<std::string, std::uint64_t> upstream_requests;  // kind → requests sent to a vigild
  std::uint64_t upstream_failures = 0;                     // unreachable or timed out (502/504)
  std::uint64_t cache_hits = 0, cache_misses = 0;
  std::uint64_t coalesced_waits = 0;  // requests that waited on another's upstream fetch
  std::uint64_t auth_denied = 0;      // viewer requests answered 401/403
  std::uint64_t requests = 0;         // viewer requests
  std::int64_t viewers_connected = 0;
  std::uint64_t viewers_total = 0;
  std::uint64_t bytes_served = 0;                    // response body bytes written to viewers
  std::uint64_t cache_bytes = 0, cache_entries = 0;  // set when the text is made
  // Shared upstream playbacks (wire protocol, --wire): see client/proxy/proxy_hub.hpp.
  std::map<std::string, std::uint64_t> playbacks_opened;  // mode (full, keyframes) → OpenPlayback sent
  std::uint64_t playbacks_active = 0;                     // open now (buffers kept)
  std::uint64_t playback_buffer_bytes = 0;                // what their buffers hold
  std::uint64_t playback_joins = 0;                       // viewer requests served by a playback another opened
  std::int64_t viewers_attached = 0;                      // viewer requests waiting on a playback now
  std::uint64_t viewers_degraded = 0;                     // viewer requests served keyframes-only because they lagged
  std::uint64_t playback_refusals = 0;  // viewer requests answered 503 because vigild refused the playback
};

std::string prometheus_text(const ProxyMetrics& m);

}  // namespace vigil::client
