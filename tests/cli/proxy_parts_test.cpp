// The proxy's pure parts, without processes: what a request names and the key it is shared
// under (media without the token, playlists with it), how long answers stay fresh, the LRU
// cache's budget and expiry, the upstream list.
#include <catch2/catch_test_macros.hpp>
#include <stdexcept>

#include "client/proxy_cache.hpp"
#include "client/proxy_resource.hpp"
#include "client/proxy_upstream.hpp"

using namespace vigil::client;
using namespace std::chrono_literals;

TEST_CASE("proxy resources: kinds, cache keys without the token, freshness", "[proxy][unit]") {
  const auto seg = classify("/api/v1/cameras/gate/hls/seg.m4s?t0=1&t1=2&o=0&access_token=abc");
  CHECK(seg.kind == ResourceKind::hls_segment);
  CHECK(seg.camera == "gate");
  CHECK(seg.access_token == "abc");
  CHECK(cache_key(seg, "ignored") == "/api/v1/cameras/gate/hls/seg.m4s?t0=1&t1=2&o=0");
  CHECK(cache_key(classify("/api/v1/cameras/gate/hls/seg.m4s?access_token=x&t0=1&t1=2&o=0"), "") ==
        cache_key(seg, ""));
  CHECK(freshness(seg, "private, max-age=3600") == 3600s);
  CHECK(freshness(seg, "") == 60s);

  const std::string pl_target = "/api/v1/cameras/gate/hls.m3u8?from=@1&to=@2&access_token=abc";
  const auto pl = classify(pl_target);
  CHECK(pl.kind == ResourceKind::hls_playlist);
  CHECK(cache_key(pl, pl_target) == pl_target);  // vigild writes the token into the playlist
  CHECK(freshness(pl, "") == 2s);
  CHECK(freshness(classify("/api/v1/cameras/gate/live.m3u8"), "max-age=60") == 1s);
  CHECK(freshness(classify("/api/v1/cameras/gate/live/seg.m4s?n=3"), "") == 2s);

  CHECK(classify("/api/v1/cameras/gate/export.mp4?from=@1&to=@2").fixed_times);
  CHECK(classify("/api/v1/cameras/gate/export.mp4?from=2026-11-01T00:00:00Z&to=%401").fixed_times);
  CHECK_FALSE(classify("/api/v1/cameras/gate/export.mp4?from=-1h").fixed_times);  // to: now
  CHECK_FALSE(classify("/api/v1/cameras/gate/export.mp4?from=@1&to=now").fixed_times);
  CHECK(freshness(classify("/api/v1/cameras/gate/export.mp4?from=-1h"), "max-age=3600") == 5s);
  CHECK(classify("/api/v1/cameras/gate/thumbnail.jpg?at=@5").fixed_times);
  CHECK(classify("/api/v1/cameras/gate/thumbnail.jpg?at=@5").kind == ResourceKind::thumbnail);

  CHECK(classify("/api/v1/cameras").kind == ResourceKind::other);
  CHECK(classify("/api/v1/cameras/gate/timeline").kind == ResourceKind::other);
  CHECK_FALSE(cacheable(classify("/healthz").kind));
}

TEST_CASE("proxy cache: LRU within the budget, expiry, oversized answers not kept", "[proxy][unit]") {
  auto reply = [](std::size_t n) {
    ProxyReply r;
    r.status = 200;
    r.body = std::make_shared<const std::string>(n, 'x');
    return std::make_shared<const ProxyReply>(std::move(r));
  };
  ProxyCache cache(1000);
  const auto t0 = ProxyCache::Clock::now();
  cache.put("a", reply(400), t0 + 10s);
  cache.put("b", reply(400), t0 + 10s);
  REQUIRE(cache.find("a", t0));  // a is now the most recent
  cache.put("c", reply(400), t0 + 10s);
  CHECK(cache.find("a", t0));
  CHECK_FALSE(cache.find("b", t0));  // least recently used, evicted
  CHECK(cache.find("c", t0));
  CHECK(cache.bytes() <= cache.budget());
  CHECK_FALSE(cache.find("a", t0 + 11s));  // expired
  CHECK(cache.entries() == 1);
  cache.put("big", reply(5000), t0 + 10s);
  CHECK_FALSE(cache.find("big", t0));
  CHECK(cache.find("c", t0));
}

TEST_CASE("proxy upstream list", "[proxy][unit]") {
  const auto nodes = parse_upstreams("127.0.0.1:8080,node2:9000");
  REQUIRE(nodes.size() == 2);
  CHECK(nodes[1].host == "node2");
  CHECK(nodes[1].port == "9000");
  CHECK_THROWS_AS(parse_upstreams("node"), std::invalid_argument);
  CHECK_THROWS_AS(parse_upstreams("node:80,"), std::invalid_argument);
  CHECK_THROWS_AS(parse_upstreams("node:http"), std::invalid_argument);
}
