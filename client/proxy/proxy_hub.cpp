#include "client/proxy/proxy_hub.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "common/log.hpp"

namespace asio = boost::asio;

namespace vigil::client {
namespace {

using Clock = std::chrono::steady_clock;

ProxyReply media_reply(media::Bytes bytes, const char* type, bool degraded) {
  ProxyReply r;
  r.status = 200;
  r.headers = {{"Content-Type", type}, {"Accept-Ranges", "bytes"}};
  // A degraded segment must never be taken for the full one, by the proxy's cache or a browser's.
  r.headers.emplace_back("Cache-Control", degraded ? "no-store" : "private, max-age=3600");
  if (degraded) r.headers.emplace_back("X-Vigil-Proxy-Degraded", "keyframes");
  r.body = std::make_shared<const std::string>(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  return r;
}

// vigild's 404 when a node has no such camera: another node may.
bool camera_elsewhere(const ProxyReply& r) {
  return r.status == 404 && r.body && r.body->find("no camera named") != std::string::npos;
}

}  // namespace

PlaybackHub::PlaybackHub(const asio::any_io_executor& ex, HubOptions options, ProxyMetrics& metrics)
    : ex_(ex), options_(std::move(options)), metrics_(metrics), reaper_(ex) {}

void PlaybackHub::start() { asio::co_spawn(ex_, reap(), asio::detached); }

void PlaybackHub::shutdown() {
  stopped_ = true;
  reaper_.cancel();
  for (auto& p : playbacks_) p->close();
  playbacks_.clear();
  publish();
}

void PlaybackHub::publish() {
  metrics_.playbacks_active = playbacks_.size();
  std::uint64_t bytes = 0;
  for (const auto& p : playbacks_) bytes += p->buffered_bytes();
  metrics_.playback_buffer_bytes = bytes;
}

asio::awaitable<void> PlaybackHub::reap() {
  while (!stopped_) {
    reaper_.expires_after(std::chrono::seconds(1));
    boost::system::error_code ec;
    co_await reaper_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (stopped_) co_return;
    const auto now = Clock::now();
    std::erase_if(playbacks_, [&](const Ptr& p) {
      if (p->waiters() > 0) return false;
      if (!p->failed() && now - p->last_used() < options_.idle) return false;
      p->close();
      return true;
    });
    publish();
  }
}

void PlaybackHub::make_room() {
  std::erase_if(playbacks_, [](const Ptr& p) { return p->failed() && p->waiters() == 0; });
  while (playbacks_.size() >= options_.max_playbacks) {
    Ptr* idlest = nullptr;
    for (auto& p : playbacks_) {
      if (p->waiters() == 0 && (!idlest || p->last_used() < (*idlest)->last_used())) idlest = &p;
    }
    if (!idlest) return;
    (*idlest)->close();
    playbacks_.erase(playbacks_.begin() + (idlest - playbacks_.data()));
  }
}

PlaybackHub::Ptr PlaybackHub::acquire(const std::string& camera, const std::string& token, bool keyframes,
                                      std::int64_t t0, std::int64_t t1, std::size_t node, bool& joined) {
  const auto& want = options_.nodes[node];
  for (const auto& p : playbacks_) {
    const auto& pp = p->params();
    if (pp.camera == camera && pp.keyframes_only == keyframes && pp.node.name() == want.name() && p->covers(t0, t1)) {
      joined = true;
      return p;
    }
  }
  make_room();
  if (playbacks_.size() >= options_.max_playbacks) return nullptr;
  PlaybackParams params{.node = want,
                        .camera = camera,
                        .token = token,
                        .start_us = t0,
                        .end_us = std::max(t1, t0 + options_.limits.span_us),
                        .keyframes_only = keyframes};
  auto p = std::make_shared<UpstreamPlayback>(ex_, std::move(params), options_.limits);
  playbacks_.push_back(p);
  ++metrics_.playbacks_opened[keyframes ? "keyframes" : "full"];
  log::info("proxy: upstream playback opened",
            {{"camera", camera}, {"node", want.name()}, {"from_us", t0}, {"keyframes_only", keyframes ? "yes" : "no"}});
  p->start();
  publish();
  joined = false;
  return p;
}

asio::awaitable<std::pair<PlaybackHub::Ptr, std::optional<ProxyReply>>> PlaybackHub::attach(
    const std::string& camera, const std::string& token, bool keyframes, std::int64_t t0, std::int64_t t1,
    std::size_t first_node, bool init_only) {
  const auto deadline = Clock::now() + options_.timeout;
  const std::size_t n = options_.nodes.size();
  std::optional<ProxyReply> elsewhere;
  for (std::size_t i = 0; i < n; ++i) {
    bool joined = false;
    Ptr p = acquire(camera, token, keyframes, t0, t1, (first_node + i) % n, joined);
    if (!p) {
      co_return std::pair<Ptr, std::optional<ProxyReply>>{
          nullptr, json_error(503, "the proxy has " + std::to_string(options_.max_playbacks) +
                                       " upstream playbacks with viewers; retry shortly")};
    }
    if (joined) ++metrics_.playback_joins;
    ++metrics_.viewers_attached;
    // Not `cond ? co_await a : co_await b`: GCC 12 destroys that result twice.
    std::optional<ProxyReply> err;
    if (init_only) {
      err = co_await p->wait_started(deadline);
    } else {
      err = co_await p->wait_for(t0, t1, deadline);
    }
    --metrics_.viewers_attached;
    publish();
    if (err && n > 1 && camera_elsewhere(*err)) {
      elsewhere = std::move(err);
      continue;
    }
    if (err && err->status == 503) ++metrics_.playback_refusals;
    co_return std::pair<Ptr, std::optional<ProxyReply>>{p, std::move(err)};
  }
  co_return std::pair<Ptr, std::optional<ProxyReply>>{nullptr, std::move(elsewhere)};
}

asio::awaitable<ProxyReply> PlaybackHub::segment(const std::string& camera, const std::string& token, std::int64_t t0,
                                                 std::int64_t t1, std::int64_t origin, std::size_t first_node) {
  if (stopped_) co_return json_error(503, "the proxy is stopping");
  // A viewer behind what a full playback still holds (it dropped those GOPs: every other viewer
  // is more than keep-behind ahead) gets keyframes only rather than rewinding it.
  bool covered = false, passed = false;
  for (const auto& p : playbacks_) {
    if (p->params().camera != camera || p->params().keyframes_only) continue;
    covered = covered || p->covers(t0, t1);
    passed = passed || p->passed(t0, t1);
  }
  const bool degraded = !covered && passed;
  if (degraded) ++metrics_.viewers_degraded;
  media::Bytes bytes;
  // Twice at most: a playback that ended before T0 (it opened when less of a recording still being
  // written was closed) is followed by a fresh one.
  for (int attempt = 0; attempt < 2 && bytes.empty(); ++attempt) {
    // No structured binding of a co_await result: GCC 12 miscompiles it in coroutines.
    auto got = co_await attach(camera, token, degraded, t0, t1, first_node, false);
    if (got.second) {
      ProxyReply err = std::move(*got.second);
      co_return err;
    }
    try {
      bytes = got.first->segment(t0, t1, origin);
    } catch (const std::exception& e) {
      co_return json_error(502, std::string("muxing the segment failed: ") + e.what());
    }
    if (!got.first->ended()) break;
  }
  if (bytes.empty()) co_return json_error(404, "nothing playable in that segment");
  co_return media_reply(std::move(bytes), "video/iso.segment", degraded);
}

asio::awaitable<ProxyReply> PlaybackHub::init(const std::string& camera, const std::string& token, std::int64_t t0,
                                              std::int64_t t1, std::size_t first_node) {
  if (stopped_) co_return json_error(503, "the proxy is stopping");
  auto got = co_await attach(camera, token, false, t0, t1, first_node, true);
  if (got.second) {
    ProxyReply err = std::move(*got.second);
    co_return err;
  }
  media::Bytes bytes;
  try {
    bytes = got.first->init_segment(t0);
  } catch (const std::exception& e) {
    co_return json_error(502, std::string("muxing the init segment failed: ") + e.what());
  }
  co_return media_reply(std::move(bytes), "video/mp4", false);
}

}  // namespace vigil::client
