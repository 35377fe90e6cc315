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
  std::uint64_t bytes_served = 0;  // response body bytes written to viewers
  std::uint64_t cache_bytes = 0, cache_entries = 0;  // set when the text is made
};

std::string prometheus_text(const ProxyMetrics& m);

}  // namespace vigil::client
