// Live view fan-out: a viewer starts at a keyframe and gets every frame after it; one that falls
// behind its bound loses frames up to the next keyframe (counted), never holding the recording
// or another viewer back; the end of the recording reaches every viewer after its last frame.
#include <catch2/catch_test_macros.hpp>

#include "server/core/live_feed.hpp"

using namespace vigil;
using server::LiveFeed;

namespace {
void publish(LiveFeed& feed, std::uint64_t seq, std::size_t bytes = 1000) {
  storage::RecordHeader h;
  h.sequence = seq;
  h.pts = static_cast<std::int64_t>(seq) * 40'000;
  h.flags = seq % 10 == 1 ? storage::kRecordKeyframe : 0;
  std::vector<std::byte> payload(bytes, std::byte(seq));
  feed.publish(h, payload);
}
}  // namespace

TEST_CASE("live viewers start at a keyframe, lag without slowing others, and see the end", "[live]") {
  LiveFeed feed(Track{.camera = "porch"}, {}, Rate::from_bps(8'000'000));
  publish(feed, 1);  // nobody watches yet: nothing kept
  int wakes = 0;
  auto fast = feed.subscribe(1 << 20, [&] { ++wakes; });
  auto slow = feed.subscribe(5'000, {});
  for (std::uint64_t seq = 2; seq <= 30; ++seq) {
    publish(feed, seq);
    // The fast viewer keeps up.
    while (auto f = fast->pop()) CHECK(f->header.sequence >= 11);
  }
  CHECK(wakes == 20);  // frames 11..30: it started at keyframe 11, the first after it subscribed
  // The slow viewer never took anything: past its bound it dropped what it held and waits for
  // the next keyframe; it resumes there, with every frame after it.
  CHECK(slow->dropped() > 0);
  while (slow->pop()) {}
  publish(feed, 31);
  publish(feed, 32);
  std::vector<std::uint64_t> got;
  while (auto f = slow->pop()) got.push_back(f->header.sequence);
  CHECK(got == std::vector<std::uint64_t>{31, 32});

  publish(feed, 33);
  feed.end();
  CHECK_FALSE(slow->ended());  // frame 33 still to take
  CHECK(slow->pop()->header.sequence == 33);
  CHECK(slow->ended());
  CHECK(feed.subscribe(1 << 20, {}) == nullptr);  // no new viewers of an ended recording
}
