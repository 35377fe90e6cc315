// The recorder's unacked window: packets leave only when acknowledged as durable, a reconnect
// renumbers what is left from 1 in the new stream and sends it all again, and a rate refusal
// resends from the first refused packet (not from the next acknowledgement).
#include <catch2/catch_test_macros.hpp>

#include "client/wire/unacked_window.hpp"

using vigil::client::PendingPacket;
using vigil::client::UnackedWindow;

namespace {

PendingPacket packet(std::int64_t pts) {
  PendingPacket p;
  p.env.mutable_media_packet()->set_pts(pts);
  p.payload.resize(10);
  return p;
}

// The (sequence, pts) of each unsent packet.
std::vector<std::pair<std::uint64_t, std::int64_t>> unsent(const UnackedWindow& w) {
  std::vector<std::pair<std::uint64_t, std::int64_t>> out;
  for (const auto* p : w.unsent()) out.emplace_back(p->env.media_packet().sequence(), p->env.media_packet().pts());
  return out;
}

UnackedWindow window_of(int packets, std::uint64_t stream_id = 7) {
  UnackedWindow w;
  w.renumber(stream_id);
  for (int i = 0; i < packets; ++i) w.push(packet(100 * i));
  return w;
}

}  // namespace

TEST_CASE("unacked window: sequences from 1, packets leave only when acknowledged", "[client][record]") {
  auto w = window_of(5);
  REQUIRE(unsent(w) ==
          std::vector<std::pair<std::uint64_t, std::int64_t>>{{1, 0}, {2, 100}, {3, 200}, {4, 300}, {5, 400}});
  CHECK(w.front().env.media_packet().stream_id() == 7);
  w.mark_sent();
  CHECK(w.all_sent());
  CHECK(unsent(w).empty());
  w.acknowledge(3);
  CHECK(w.size() == 2);
  CHECK(w.front().env.media_packet().sequence() == 4);
  w.acknowledge(2);  // an older acknowledgement changes nothing
  CHECK(w.size() == 2);
  CHECK(w.acked() == 3);
  w.push(packet(500));
  CHECK(unsent(w) == std::vector<std::pair<std::uint64_t, std::int64_t>>{{6, 500}});
}

TEST_CASE("unacked window: a reconnect renumbers what is left from 1 and sends it all again", "[client][record]") {
  auto w = window_of(6);
  w.mark_sent();
  w.acknowledge(2);
  w.renumber(9);
  CHECK(w.acked() == 0);
  CHECK(w.acked_total() == 2);
  CHECK(w.stream_id() == 9);
  CHECK(unsent(w) == std::vector<std::pair<std::uint64_t, std::int64_t>>{{1, 200}, {2, 300}, {3, 400}, {4, 500}});
  for (const auto* p : w.unsent()) CHECK(p->env.media_packet().stream_id() == 9);
  w.mark_sent();
  w.push(packet(600));
  CHECK(unsent(w) == std::vector<std::pair<std::uint64_t, std::int64_t>>{{5, 600}});
  w.mark_sent();
  w.acknowledge(5);
  CHECK(w.empty());
  CHECK(w.acked_total() == 7);
}

TEST_CASE("unacked window: a rate refusal resends from the first refused packet", "[client][record]") {
  auto w = window_of(8);
  w.mark_sent();
  w.acknowledge(3);
  w.resend_from(5);  // 4 was stored; 5 and everything after it were dropped
  CHECK(unsent(w) == std::vector<std::pair<std::uint64_t, std::int64_t>>{{5, 400}, {6, 500}, {7, 600}, {8, 700}});
  CHECK(w.last_sent() == 4);
  w.mark_sent();
  SECTION("a refusal of a packet acknowledged meanwhile resends from the oldest one held") {
    w.acknowledge(6);
    w.resend_from(2);
    CHECK(unsent(w) == std::vector<std::pair<std::uint64_t, std::int64_t>>{{7, 600}, {8, 700}});
  }
  SECTION("a refusal of something not yet sent does not skip what is unsent") {
    w.push(packet(800));
    w.resend_from(12);
    CHECK(unsent(w) == std::vector<std::pair<std::uint64_t, std::int64_t>>{{9, 800}});
  }
}

TEST_CASE("unacked window: after a reconnect the new stream starts at the GOP's keyframe", "[client][record]") {
  // Packets 0..9, keyframes at 0 and 5 (pts 0 and 500).
  UnackedWindow w;
  w.renumber(7);
  for (int i = 0; i < 10; ++i) {
    auto p = packet(100 * i);
    p.env.mutable_media_packet()->set_keyframe(i % 5 == 0);
    w.push(std::move(p));
  }
  w.mark_sent();
  w.acknowledge(7);  // 0..6 durable: the GOP being sent began at 5
  CHECK(w.size() == 3);
  CHECK(w.gop_head_size() == 2);
  CHECK(w.payload_bytes() == 30);  // the window's cap counts what awaits an acknowledgement
  CHECK(w.gop_head_bytes() == 20);
  w.renumber(9);
  // 5 and 6 again (stored twice, once per stream), then what was never acknowledged.
  CHECK(unsent(w) ==
        std::vector<std::pair<std::uint64_t, std::int64_t>>{{1, 500}, {2, 600}, {3, 700}, {4, 800}, {5, 900}});
  CHECK(w.front().env.media_packet().keyframe());
  CHECK(w.acked_total() == 5);  // 0..4; 5 and 6 count when the new stream acknowledges them
  w.mark_sent();
  w.acknowledge(5);
  CHECK(w.acked_total() == 10);
  CHECK(w.empty());
}

TEST_CASE("unacked window: without a keyframe acknowledged nothing is kept", "[client][record]") {
  auto w = window_of(4);  // no keyframes: resending starts at the first unacknowledged packet, as before
  w.mark_sent();
  w.acknowledge(2);
  CHECK(w.gop_head_size() == 0);
  w.renumber(9);
  CHECK(unsent(w) == std::vector<std::pair<std::uint64_t, std::int64_t>>{{1, 200}, {2, 300}});
}
