#include "client/proxy/proxy_metrics.hpp"

#include <sstream>

namespace vigil::client {
namespace {

void family(std::ostringstream& out, const char* name, const char* type, const char* help) {
  out << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
}

template <class T>
void one(std::ostringstream& out, const char* name, const char* type, const char* help, T value) {
  family(out, name, type, help);
  out << name << " " << value << "\n";
}

}  // namespace

std::string prometheus_text(const ProxyMetrics& m) {
  std::ostringstream out;
  family(out, "vigil_proxy_upstream_requests_total", "counter",
         "Requests the proxy sent to vigild nodes, by kind of resource.");
  if (m.upstream_requests.empty()) out << "vigil_proxy_upstream_requests_total{kind=\"other\"} 0\n";
  for (const auto& [kind, n] : m.upstream_requests) {
    out << "vigil_proxy_upstream_requests_total{kind=\"" << kind << "\"} " << n << "\n";
  }
  one(out, "vigil_proxy_upstream_failures_total", "counter", "Upstream requests that failed: unreachable or timed out.",
      m.upstream_failures);
  one(out, "vigil_proxy_cache_hits_total", "counter", "Viewer requests answered from the cache.", m.cache_hits);
  one(out, "vigil_proxy_cache_misses_total", "counter", "Cacheable viewer requests not in the cache.", m.cache_misses);
  one(out, "vigil_proxy_coalesced_waits_total", "counter",
      "Viewer requests that shared another request's upstream fetch.", m.coalesced_waits);
  one(out, "vigil_proxy_auth_denied_total", "counter", "Viewer requests answered 401 or 403.", m.auth_denied);
  one(out, "vigil_proxy_requests_total", "counter", "Viewer requests received.", m.requests);
  one(out, "vigil_proxy_viewers_connected", "gauge", "Viewer connections open now.", m.viewers_connected);
  one(out, "vigil_proxy_viewers_total", "counter", "Viewer connections accepted.", m.viewers_total);
  one(out, "vigil_proxy_bytes_served_total", "counter", "Response body bytes written to viewers.", m.bytes_served);
  one(out, "vigil_proxy_cache_bytes", "gauge", "Bytes held in the cache.", m.cache_bytes);
  one(out, "vigil_proxy_cache_entries", "gauge", "Replies held in the cache.", m.cache_entries);
  family(out, "vigil_proxy_upstream_playbacks_opened_total", "counter",
         "Playbacks the proxy opened on vigild nodes (wire protocol), by mode (full, keyframes).");
  if (m.playbacks_opened.empty()) out << "vigil_proxy_upstream_playbacks_opened_total{mode=\"full\"} 0\n";
  for (const auto& [mode, n] : m.playbacks_opened) {
    out << "vigil_proxy_upstream_playbacks_opened_total{mode=\"" << mode << "\"} " << n << "\n";
  }
  one(out, "vigil_proxy_upstream_playbacks_active", "gauge", "Upstream playbacks open now (their buffers kept).",
      m.playbacks_active);
  one(out, "vigil_proxy_playback_buffer_bytes", "gauge", "Bytes held in the buffers of upstream playbacks.",
      m.playback_buffer_bytes);
  one(out, "vigil_proxy_playback_joins_total", "counter",
      "Viewer requests served by an upstream playback that was already open.", m.playback_joins);
  one(out, "vigil_proxy_viewers_attached", "gauge", "Viewer requests waiting on an upstream playback now.",
      m.viewers_attached);
  one(out, "vigil_proxy_viewers_degraded_total", "counter",
      "Viewer requests served keyframes-only because the viewer lagged behind the shared playback.",
      m.viewers_degraded);
  one(out, "vigil_proxy_playback_refusals_total", "counter",
      "Viewer requests answered 503 because vigild refused the playback (admission).", m.playback_refusals);
  return out.str();
}

}  // namespace vigil::client
