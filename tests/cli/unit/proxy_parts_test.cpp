// The proxy's pure parts, without processes: what a request names and the key it is shared
// under (media without the token, playlists with it), how long answers stay fresh, the LRU
// cache's budget and expiry, the upstream list, and the rules of a shared playback's buffer
// (segments, read-ahead, the lag rule, the byte bound, pausing).
#include <catch2/catch_test_macros.hpp>
#include <stdexcept>

#include "client/proxy/proxy_buffer.hpp"
#include "client/proxy/proxy_cache.hpp"
#include "client/proxy/proxy_resource.hpp"
#include "client/proxy/proxy_upstream.hpp"

using namespace vigil::client;
using namespace std::chrono_literals;

TEST_CASE("proxy resources: kinds, cache keys without the token, freshness", "[proxy][unit]") {
  const auto seg = classify("/api/v1/cameras/gate/hls/seg.m4s?t0=1&t1=2&o=0&access_token=abc");
  CHECK(seg.kind == ResourceKind::hls_segment);
  CHECK(seg.camera == "gate");
  CHECK(seg.access_token == "abc");
  CHECK(cache_key(seg, "ignored") == "/api/v1/cameras/gate/hls/seg.m4s?t0=1&t1=2&o=0");
  CHECK(cache_key(classify("/api/v1/cameras/gate/hls/seg.m4s?access_token=x&t0=1&t1=2&o=0"), "") == cache_key(seg, ""));
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

namespace {

// GOPs of 1 s from SECOND FROM to TO (exclusive), 4 packets each (a keyframe and 3 others, 250 ms
// apart), 1000 bytes a packet, times in microseconds.
void feed_gops(PlaybackBuffer& b, int from, int to) {
  for (int s = from; s < to; ++s) {
    for (int i = 0; i < 4; ++i) {
      PlaybackBuffer::Packet p;
      p.pts = p.dts = s * 1'000'000ll + i * 250'000ll;
      p.duration = 250'000;
      p.keyframe = i == 0;
      p.payload.resize(1000);
      b.append(std::move(p));
    }
  }
}

constexpr std::int64_t kS = 1'000'000;

}  // namespace

TEST_CASE("proxy playback buffer: segments, read-ahead, the lag rule, the byte bound, pausing", "[proxy][unit]") {
  PlaybackBuffer b(0, 600 * kS, {.read_ahead_us = 10 * kS, .keep_behind_us = 5 * kS, .max_bytes = 1u << 20});
  // A non-keyframe before the first keyframe is not kept (the front is always a keyframe).
  CHECK_FALSE(b.append({.pts = 0, .dts = 0, .duration = 1, .keyframe = false, .payload = {}}));
  feed_gops(b, 0, 4);  // GOPs 0..3; the one starting at 3 s is still arriving
  CHECK(b.head_pts() == 3 * kS);
  CHECK(b.bytes() == 16 * 1000);
  // [0, 2 s) is complete (a keyframe at ≥ 2 s is in); [2, 4 s) is not yet.
  CHECK(b.complete(2 * kS));
  CHECK_FALSE(b.complete(4 * kS));
  const auto seg = b.pick(0, 2 * kS);
  REQUIRE(seg.size() == 8);
  CHECK(seg.front()->keyframe);
  CHECK(seg.back()->pts == 1 * kS + 750'000);
  // Covered: in range and within read-ahead of the newest keyframe; not before the start or far ahead.
  CHECK(b.covers(2 * kS, 4 * kS));
  CHECK(b.covers(13 * kS, 14 * kS));
  CHECK_FALSE(b.covers(14 * kS, 15 * kS));
  CHECK_FALSE(b.covers(599 * kS, 601 * kS));  // past the playback's range

  // A viewer at 20 s (the lead): GOPs ending 5 s or more behind it go, the others stay.
  b.enter(19 * kS, 20 * kS);
  feed_gops(b, 4, 21);
  b.trim();
  CHECK(b.front_pts() == 15 * kS);
  CHECK(b.bytes() == 6 * 4 * 1000);  // GOPs 15..20
  // A viewer wanting [2, 4 s) now lags: the buffer passed it, and does not cover it any more.
  CHECK(b.passed(2 * kS, 4 * kS));
  CHECK_FALSE(b.covers(2 * kS, 4 * kS));
  CHECK_FALSE(b.passed(16 * kS, 17 * kS));
  CHECK(b.covers(16 * kS, 17 * kS));
  b.leave(19 * kS, 20 * kS);

  // Pausing: not while a viewer waits for more than has arrived; yes once READ_AHEAD past the lead.
  CHECK_FALSE(b.should_pause());  // head 20 s, lead 20 s
  feed_gops(b, 21, 32);
  CHECK(b.head_pts() == 31 * kS);
  CHECK(b.should_pause());  // 31 s > 20 s + 10 s
  b.enter(30 * kS, 40 * kS);
  CHECK_FALSE(b.should_pause());  // someone waits for [30, 40 s)
  b.leave(30 * kS, 40 * kS);

  // A waiting viewer's GOPs are never dropped, even far behind the lead.
  PlaybackBuffer w(0, 600 * kS, {.read_ahead_us = 10 * kS, .keep_behind_us = 0, .max_bytes = 1u << 20});
  feed_gops(w, 0, 10);
  w.enter(2 * kS, 3 * kS);
  w.enter(8 * kS, 9 * kS);
  w.trim();
  CHECK(w.front_pts() == 2 * kS);
  w.leave(2 * kS, 3 * kS);
  w.trim();
  CHECK(w.front_pts() == 8 * kS);

  // The byte bound: above it, old GOPs go up to the lead even within KEEP_BEHIND.
  PlaybackBuffer m(0, 600 * kS, {.read_ahead_us = 10 * kS, .keep_behind_us = 60 * kS, .max_bytes = 10 * 1000});
  m.enter(5 * kS, 6 * kS);
  m.leave(5 * kS, 6 * kS);
  feed_gops(m, 0, 12);
  m.trim();
  CHECK(m.front_pts() == 6 * kS);  // GOPs 0..5 (up to the lead, 6 s) went; what is ahead of it stays
  CHECK(m.bytes() == 6 * 4 * 1000);
  CHECK(m.should_pause());  // still over the bound and nobody waits: stop reading

  // Ended: segments complete; a segment after the end is not covered (a new playback is asked).
  PlaybackBuffer e(0, 600 * kS, {});
  feed_gops(e, 0, 3);
  e.mark_ended();
  CHECK(e.complete(100 * kS));
  CHECK(e.covers(2 * kS, 3 * kS));
  CHECK_FALSE(e.covers(4 * kS, 5 * kS));
}
