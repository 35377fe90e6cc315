#pragma once
// Which shared upstream playback serves a viewer's HLS VOD request (docs/proxy.md, "Shared
// playbacks"). Playbacks are kept per camera and mode (every frame, or keyframes only):
//  - a segment [t0, t1) is served from a playback that covers it (in its range, not dropped,
//    within its read-ahead): the viewer joins it and waits until its GOPs are in;
//  - a viewer asking for a segment a full playback already dropped (it lags more than
//    keep-behind behind the furthest viewer) is not allowed to rewind or stall it: it is served
//    from a keyframes-only playback (marked X-Vigil-Proxy-Degraded: keyframes, never cached);
//  - otherwise a new playback is opened at t0 on the camera's node.
// Init segments are made from the codec vigild announces (PlaybackStarted), so they match the
// media segments the proxy makes. Idle playbacks (no viewer for IDLE) are closed; at most
// MAX_PLAYBACKS are open, the least recently used idle one goes first.
// Thread: the proxy's io_context thread. Errors: none thrown; every outcome is a ProxyReply.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "client/proxy/proxy_metrics.hpp"
#include "client/proxy/proxy_playback.hpp"

namespace vigil::client {

struct HubOptions {
  std::vector<UpstreamNode> nodes;  // wire addresses, in the order of the HTTP upstreams
  PlaybackLimits limits;
  std::size_t max_playbacks = 32;
  std::chrono::milliseconds idle{20'000};
  std::chrono::milliseconds timeout{30'000};  // longest wait of one viewer request
};

class PlaybackHub {
 public:
  PlaybackHub(const boost::asio::any_io_executor& ex, HubOptions options, ProxyMetrics& metrics);
  // hls/seg.m4s?t0&t1&o of CAMERA for a viewer with TOKEN; FIRST_NODE: the node to try first.
  boost::asio::awaitable<ProxyReply> segment(const std::string& camera, const std::string& token, std::int64_t t0,
                                             std::int64_t t1, std::int64_t origin, std::size_t first_node);
  // hls/init.mp4?t0&t1.
  boost::asio::awaitable<ProxyReply> init(const std::string& camera, const std::string& token, std::int64_t t0,
                                          std::int64_t t1, std::size_t first_node);
  void start();     // the idle reaper
  void shutdown();  // closes every upstream playback

 private:
  using Ptr = std::shared_ptr<UpstreamPlayback>;
  // A playback that covers [T0, T1) in MODE, or a new one opened at T0 on NODE.
  Ptr acquire(const std::string& camera, const std::string& token, bool keyframes, std::int64_t t0, std::int64_t t1,
              std::size_t node, bool& joined);
  // Waits for [T0,T1) from a playback, trying the next node when one has no such camera.
  boost::asio::awaitable<std::pair<Ptr, std::optional<ProxyReply>>> attach(const std::string& camera,
                                                                           const std::string& token, bool keyframes,
                                                                           std::int64_t t0, std::int64_t t1,
                                                                           std::size_t first_node, bool init_only);
  void make_room();
  void publish();  // gauges
  boost::asio::awaitable<void> reap();

  boost::asio::any_io_executor ex_;
  HubOptions options_;
  ProxyMetrics& metrics_;
  std::vector<Ptr> playbacks_;
  boost::asio::steady_timer reaper_;
  bool stopped_ = false;
};

}  // namespace vigil::client
