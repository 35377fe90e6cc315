#include "client/proxy/proxy_core.hpp"

#include <charconv>
#include <optional>

#include "client/proxy/proxy_hub.hpp"

namespace asio = boost::asio;

namespace vigil::client {
namespace {

using Clock = ProxyCache::Clock;

// The bearer token in an Authorization field, else "".
std::string bearer(std::string_view authorization) {
  constexpr std::string_view prefix = "Bearer ";
  return authorization.starts_with(prefix) ? std::string(authorization.substr(prefix.size())) : std::string();
}

// A "no such camera here" 404: another node may have the camera.
bool camera_elsewhere(const ProxyReply& r) {
  return r.status == 404 && r.body &&
         (r.body->find("no camera named") != std::string::npos ||
          r.body->find("is not recording now") != std::string::npos);
}

// One byte range "bytes=A-B", "bytes=A-" or "bytes=-N" of a body of SIZE bytes as (offset,
// length); (SIZE, 0) when it starts at or after the end; nullopt for anything else (the upstream
// answers those).
std::optional<std::pair<std::size_t, std::size_t>> single_range(std::string_view spec, std::size_t size) {
  constexpr std::string_view unit = "bytes=";
  if (!spec.starts_with(unit) || size == 0) return std::nullopt;
  spec.remove_prefix(unit.size());
  const auto dash = spec.find('-');
  if (dash == std::string_view::npos || spec.find(',') != std::string_view::npos) return std::nullopt;
  auto number = [](std::string_view s) -> std::optional<std::size_t> {
    std::size_t v = 0;
    if (s.empty()) return std::nullopt;
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
    return v;
  };
  const auto a = number(spec.substr(0, dash)), b = number(spec.substr(dash + 1));
  if (!a) {
    if (!b || *b == 0) return std::nullopt;
    const std::size_t n = std::min(*b, size);
    return std::make_pair(size - n, n);
  }
  if (*a >= size) return std::make_pair(size, std::size_t{0});  // unsatisfiable: 416
  if (spec.substr(dash + 1).empty()) return std::make_pair(*a, size - *a);
  if (!b || *b < *a) return std::nullopt;
  return std::make_pair(*a, std::min(*b, size - 1) - *a + 1);
}

// The value of query parameter KEY of TARGET as a non-negative integer; nullopt if absent or not one.
std::optional<std::int64_t> query_int(std::string_view target, std::string_view key) {
  const auto q = target.find('?');
  if (q == std::string_view::npos) return std::nullopt;
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    const auto pair = rest.substr(0, amp);
    if (pair.size() > key.size() && pair.starts_with(key) && pair[key.size()] == '=') {
      const auto v = pair.substr(key.size() + 1);
      std::int64_t out = 0;
      const auto r = std::from_chars(v.data(), v.data() + v.size(), out);
      if (r.ec != std::errc() || r.ptr != v.data() + v.size() || out < 0) return std::nullopt;
      return out;
    }
    if (amp == std::string_view::npos) break;
    rest.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

void set_header(ProxyReply& r, const std::string& name, std::string value) {
  for (auto& [k, v] : r.headers) {
    if (k == name) {
      v = std::move(value);
      return;
    }
  }
  r.headers.emplace_back(name, std::move(value));
}

}  // namespace

ProxyCore::ProxyCore(ProxyOptions options, ProxyMetrics& metrics)
    : options_(std::move(options)), metrics_(metrics), cache_(options_.cache_bytes) {}

asio::awaitable<UpstreamAnswer> ProxyCore::fetch(const Resource& r, const UpstreamRequest& req, const char* kind) {
  const std::size_t n = options_.upstreams.size();
  std::size_t first = 0;
  // The node that answered last for this camera ("": requests not about one camera) first.
  if (auto it = node_of_camera_.find(r.camera); it != node_of_camera_.end()) first = it->second;
  std::optional<UpstreamAnswer> not_here, failed;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t node = (first + i) % n;
    ++metrics_.upstream_requests[kind ? kind : kind_name(r.kind)];
    auto a = co_await fetch_upstream(options_.upstreams[node], req, options_.upstream_timeout, options_.max_body);
    if (!a.reached) {
      ++metrics_.upstream_failures;
      if (!failed) failed = std::move(a);
      continue;
    }
    if (n > 1 && camera_elsewhere(a.reply)) {
      if (!not_here) not_here = std::move(a);
      continue;
    }
    node_of_camera_[r.camera] = node;
    co_return a;
  }
  co_return not_here ? std::move(*not_here) : std::move(*failed);
}

asio::awaitable<std::optional<ProxyReply>> ProxyCore::from_hub(const Resource& r, const std::string& target,
                                                               const std::string& token) {
  const auto t0 = query_int(target, "t0"), t1 = query_int(target, "t1");
  if (!t0 || !t1 || *t1 <= *t0 || *t1 - *t0 > 10 * 60'000'000ll) co_return std::nullopt;
  std::size_t first = 0;
  if (auto it = node_of_camera_.find(r.camera); it != node_of_camera_.end()) first = it->second;
  if (r.kind == ResourceKind::hls_init) co_return co_await hub_->init(r.camera, token, *t0, *t1, first);
  const auto origin = query_int(target, "o");
  if (!origin || *origin > *t0) co_return std::nullopt;
  co_return co_await hub_->segment(r.camera, token, *t0, *t1, *origin, first);
}

asio::awaitable<std::shared_ptr<const ProxyReply>> ProxyCore::verdict(const std::string& token) {
  const auto now = Clock::now();
  if (auto it = verdicts_.find(token); it != verdicts_.end()) {
    if (it->second.expires > now) co_return it->second.reply;
    verdicts_.erase(it);
  }
  if (verdicts_.size() > 10'000) std::erase_if(verdicts_, [&](const auto& kv) { return kv.second.expires <= now; });
  // Named, not temporaries in the co_await expression: GCC 12 destroys those twice.
  bool joined = false;
  const std::string key = "auth\n" + token;
  Flights::Fetch ask = [this, token]() -> asio::awaitable<std::shared_ptr<const ProxyReply>> {
    // A cheap authenticated request with the viewer's token: vigild's verdict on it.
    UpstreamRequest req{.method = "GET", .target = "/api/v1/cameras", .headers = {}, .body = {}};
    if (!token.empty()) req.headers.emplace_back("Authorization", "Bearer " + token);
    Resource r;
    auto a = co_await fetch(r, req, "auth");
    auto reply = std::make_shared<ProxyReply>(std::move(a.reply));
    if (reply->status / 100 == 2) reply->body = std::make_shared<const std::string>();
    if (reply->status / 100 == 2 || reply->status == 401 || reply->status == 403) {
      verdicts_[token] = {reply, Clock::now() + options_.auth_ttl};
    }
    co_return reply;
  };
  auto verdict = co_await flights_.run(key, std::move(ask), joined);
  co_return verdict;
}

asio::awaitable<ProxyReply> ProxyCore::pass_through(const ViewerRequest& req, const Resource& r) {
  UpstreamRequest up{.method = req.method, .target = req.target, .headers = {}, .body = req.body};
  if (!req.content_type.empty()) up.headers.emplace_back("Content-Type", req.content_type);
  if (!req.authorization.empty()) up.headers.emplace_back("Authorization", req.authorization);
  if (!req.range.empty()) up.headers.emplace_back("Range", req.range);
  if (!req.if_none_match.empty()) up.headers.emplace_back("If-None-Match", req.if_none_match);
  if (!req.if_range.empty()) up.headers.emplace_back("If-Range", req.if_range);
  auto a = co_await fetch(r, up);
  if (a.reply.status == 401 || a.reply.status == 403) ++metrics_.auth_denied;
  set_header(a.reply, "X-Vigil-Proxy", "pass");
  co_return std::move(a.reply);
}

asio::awaitable<ProxyReply> ProxyCore::handle(const ViewerRequest& req) {
  ++metrics_.requests;
  const Resource r = classify(req.target);
  if (req.method != "GET" || !cacheable(r.kind) || !req.if_none_match.empty() || !req.if_range.empty()) {
    co_return co_await pass_through(req, r);
  }
  // Cached or shared bytes go only to a viewer whose token vigild accepts.
  const std::string token = req.authorization.empty() ? r.access_token : bearer(req.authorization);
  auto v = co_await verdict(token);
  if (v->status / 100 != 2) {
    if (v->status == 401 || v->status == 403) ++metrics_.auth_denied;
    co_return *v;
  }
  const std::string key = cache_key(r, req.target);
  std::shared_ptr<const ProxyReply> reply = cache_.find(key, Clock::now());
  const char* how = "hit";
  if (reply) {
    ++metrics_.cache_hits;
  } else {
    ++metrics_.cache_misses;
    bool joined = false;
    Flights::Fetch fetch_it = [this, r, key, token, target = req.target,
                               auth = req.authorization]() -> asio::awaitable<std::shared_ptr<const ProxyReply>> {
      std::optional<ProxyReply> made;
      if (hub_ && (r.kind == ResourceKind::hls_segment || r.kind == ResourceKind::hls_init)) {
        made = co_await from_hub(r, target, token);
      }
      if (!made) {
        UpstreamRequest up{.method = "GET", .target = target, .headers = {}, .body = {}};
        if (!auth.empty()) up.headers.emplace_back("Authorization", auth);
        auto a = co_await fetch(r, up);
        made = std::move(a.reply);
      }
      auto shared = std::make_shared<const ProxyReply>(std::move(*made));
      // A degraded (keyframes-only) segment is for the lagging viewer only, never for the cache.
      if (shared->status == 200 && shared->header("X-Vigil-Proxy-Degraded").empty()) {
        cache_.put(key, shared, Clock::now() + freshness(r, shared->header("Cache-Control")));
      }
      co_return shared;
    };
    reply = co_await flights_.run(key, std::move(fetch_it), joined);
    if (joined) ++metrics_.coalesced_waits;
    how = joined ? "shared" : "miss";
  }
  ProxyReply out = *reply;
  set_header(out, "X-Vigil-Proxy", how);
  if (!req.range.empty() && out.status == 200) {
    const auto range = single_range(req.range, out.size());
    if (!range) co_return co_await pass_through(req, r);  // vigild says what is wrong with it
    if (range->second == 0) {                             // as vigild answers it
      out = json_error(416, "the range starts after the end of the " + std::to_string(reply->size()) + " bytes");
      set_header(out, "Content-Range", "bytes */" + std::to_string(reply->size()));
      co_return out;
    }
    out.status = 206;
    out.offset = range->first;
    out.length = range->second;
    set_header(out, "Content-Range",
               "bytes " + std::to_string(range->first) + "-" + std::to_string(range->first + range->second - 1) + "/" +
                   std::to_string(out.size()));
  }
  co_return out;
}

}  // namespace vigil::client
