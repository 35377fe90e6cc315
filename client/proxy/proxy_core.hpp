#pragma once
// The playback proxy's decisions for one viewer request: check the viewer's token (the verdict
// of a vigild, kept a few seconds per token), answer from the cache, join a running upstream
// fetch of the same resource, or fetch it from the camera's node (several nodes: tried in
// order, the one that answered for a camera remembered; "no camera" moves on). Refusals and
// errors from vigild reach the viewer as they are; an unreachable node is a 502, a slow one 504.
// Thread: one (the proxy's io_context thread); no locking. Errors: none thrown; every outcome is
// a ProxyReply.
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "client/proxy/proxy_cache.hpp"
#include "client/proxy/proxy_flights.hpp"
#include "client/proxy/proxy_metrics.hpp"
#include "client/proxy/proxy_resource.hpp"
#include "client/proxy/proxy_upstream.hpp"

namespace vigil::client {

struct ProxyOptions {
  std::vector<UpstreamNode> upstreams;
  std::size_t cache_bytes = 256u << 20;
  std::chrono::milliseconds upstream_timeout{30'000};
  std::chrono::milliseconds auth_ttl{5'000};  // how long a token's verdict is kept
  std::size_t max_body = 1u << 30;            // largest upstream answer proxied
};

class PlaybackHub;

struct ViewerRequest {
  std::string method, target;  // GET and HEAD are shared/cached; other methods are passed through
  std::string authorization, range, if_none_match, if_range;
  std::string content_type, body;  // of a passed-through POST/PUT/PATCH
};

class ProxyCore {
 public:
  ProxyCore(ProxyOptions options, ProxyMetrics& metrics);
  boost::asio::awaitable<ProxyReply> handle(const ViewerRequest& req);
  ProxyMetrics& metrics() { return metrics_; }
  const ProxyCache& cache() const { return cache_; }
  void drop_flights() { flights_.clear(); }  // at shutdown, before the io_context is destroyed
  // With a hub (--wire), HLS VOD segments and init segments come from shared upstream playbacks
  // over the wire protocol instead of vigild's HTTP routes.
  void use_hub(PlaybackHub* hub) { hub_ = hub; }

 private:
  boost::asio::awaitable<ProxyReply> pass_through(const ViewerRequest& req, const Resource& r);
  boost::asio::awaitable<std::shared_ptr<const ProxyReply>> verdict(const std::string& token);
  // REQ to R's node (see above), counted under KIND (default: R's kind).
  boost::asio::awaitable<UpstreamAnswer> fetch(const Resource& r, const UpstreamRequest& req,
                                               const char* kind = nullptr);
  // R (a segment or init segment) from the hub; nullopt when its parameters are not plain
  // numbers (vigild then says what is wrong with them).
  boost::asio::awaitable<std::optional<ProxyReply>> from_hub(const Resource& r, const std::string& target,
                                                             const std::string& token);

  ProxyOptions options_;
  ProxyMetrics& metrics_;
  PlaybackHub* hub_ = nullptr;
  ProxyCache cache_;
  Flights flights_;
  std::map<std::string, std::size_t> node_of_camera_;  // camera ("" for others) → index in options_.upstreams
  struct Verdict {
    std::shared_ptr<const ProxyReply> reply;  // 2xx: the token is good
    ProxyCache::Clock::time_point expires;
  };
  std::map<std::string, Verdict> verdicts_;  // token → the upstream's answer to it
};

}  // namespace vigil::client
