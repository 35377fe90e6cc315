// A playback session against a real vigild over loopback: a recorded stream (script frames,
// 25 fps, a keyframe every 25) plays back exactly as recorded; VCR control — seek lands on the
// keyframe at or before the target, pause/resume continue without losing a frame, a rate
// change continues without repeating one — and the end of the range is announced. A playback
// the disk cannot take is refused with a reason and the largest rate that fits, and nothing
// admitted misses a deadline.
#include <signal.h>
#include <sys/socket.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <pqxx/pqxx>
#include <thread>

#include "client/wire/wire_client.hpp"
#include "tests/support/recording_rig.hpp"
#include "tests/support/script_frames.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;
using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t kFrames = 250;     // 10 s
constexpr std::int64_t kFrameUs = 40'000;  // 25 fps

std::uint64_t record(test::RecordingRig& rig, const std::string& name, std::uint64_t restart_at = 0) {
  return test::record_script(rig, name, kFrames, restart_at);
}

proto::Envelope open_playback(const std::string& name, double rate, std::int64_t from_us, std::int64_t to_us) {
  proto::Envelope e;
  auto* o = e.mutable_open_playback();
  o->set_stream_name(name);
  o->set_start_us(from_us);
  o->set_end_us(to_us);
  o->set_rate(rate);
  return e;
}

proto::Envelope control(std::uint64_t id, proto::ControlOp op, std::int64_t seek_to = 0, double rate = 0) {
  proto::Envelope e;
  auto* c = e.mutable_control();
  c->set_stream_id(id);
  c->set_op(op);
  c->set_seek_to_us(seek_to);
  c->set_rate(rate);
  return e;
}

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

TEST_CASE("playback sessions: exact frames, seek, pause, rate change, end of range", "[vigild][playback]") {
  test::RecordingRig rig;
  const auto stream = record(rig, "aisle");

  client::WireClient c(rig.vigild->wire(), 20s);
  c.hello("playback test viewer", vigil::test::token());
  c.send(open_playback("aisle", 8.0, now_us() - 3'600'000'000, now_us() + 3'600'000'000));
  auto started = c.receive();
  INFO(rig.vigild->output());
  REQUIRE(started.msg.has_playback_started());
  const auto id = started.msg.playback_started().stream_id();
  CHECK(started.msg.playback_started().codec().codec_name() == "h264");
  CHECK(started.msg.playback_started().codec().time_base_den() == 1'000'000);

  // Every packet is identified by its timestamp and checked against the script.
  std::int64_t first_pts = 0;
  std::vector<std::uint64_t> order;  // source sequences in the order received
  auto take = [&](const client::Received& r) -> std::uint64_t {
    REQUIRE(r.msg.has_media_packet());
    const auto& m = r.msg.media_packet();
    REQUIRE(m.has_pts());
    if (order.empty()) first_pts = m.pts();
    const auto seq = 1 + static_cast<std::uint64_t>((m.pts() - first_pts + kFrameUs / 2) / kFrameUs);
    const auto expected = test::script_frame(seq, stream).payload;
    CHECK(r.payload == expected);
    CHECK(m.keyframe() == (seq % 25 == 1));
    order.push_back(seq);
    return seq;
  };
  for (int i = 0; i < 30; ++i) take(c.receive());
  CHECK(order.front() == 1);
  CHECK(order.back() == 30);

  // Seek to frame 150 (+10 ms): playback continues from the keyframe at or before it, 126.
  c.send(control(id, proto::CONTROL_OP_SEEK, first_pts + 149 * kFrameUs + 10'000));
  for (;;) {
    auto r = c.receive();
    if (r.msg.has_playback_started()) break;
    take(r);  // packets sent before the seek was read
  }
  CHECK(take(c.receive()) == 126);
  for (int i = 0; i < 10; ++i) take(c.receive());
  CHECK(order.back() == 136);

  // Pause, then resume: nothing is lost or repeated across it.
  c.send(control(id, proto::CONTROL_OP_PAUSE));
  proto::Envelope ping;
  ping.mutable_ping()->set_nonce(1);
  c.send(ping);
  for (;;) {
    auto r = c.receive();
    if (r.msg.has_pong()) break;
    take(r);
  }
  const auto before_resume = order.back();
  c.send(control(id, proto::CONTROL_OP_RESUME));
  CHECK(take(c.receive()) == before_resume + 1);

  // Rate change to 16x: re-admitted; no frame is sent twice.
  c.send(control(id, proto::CONTROL_OP_SET_RATE, 0, 16.0));
  bool restarted = false;
  for (;;) {
    auto r = c.receive();
    if (r.msg.has_playback_end()) {
      // On failure, say which GOPs were skipped and why, and what vigild logged by then.
      std::string skipped;
      for (const auto& g : r.msg.playback_end().gaps()) {
        skipped += "gap " + std::to_string(g.from_us()) + ".." + std::to_string(g.to_us()) + ": " + g.reason() + "\n";
      }
      INFO(skipped);
      INFO(rig.vigild->output());
      CHECK(r.msg.playback_end().reason() == "end of range");
      CHECK_FALSE(r.msg.playback_end().failed());
      CHECK(r.msg.playback_end().gaps_size() == 0);
      break;
    }
    if (r.msg.has_playback_started()) {
      restarted = true;
      CHECK(r.msg.playback_started().admitted_rate_bps() > started.msg.playback_started().admitted_rate_bps());
      continue;
    }
    take(r);
  }
  CHECK(restarted);
  CHECK(order.back() == kFrames);
  // From the seek on, every frame exactly once and in order.
  const auto at_seek = std::find(order.begin(), order.end(), 126);
  REQUIRE(at_seek != order.end());
  for (auto it = at_seek + 1; it != order.end(); ++it) CHECK(*it == *(it - 1) + 1);

  // With a heavy recording admitted, a playback the disk cannot take on top of it is refused
  // with the largest rate that fits.
  client::WireClient load(rig.vigild->wire(), 20s);
  load.hello("playback test load", vigil::test::token());
  load.send(test::open_record("loading-dock", 100'000'000));
  REQUIRE(load.receive().msg.has_admit());
  client::WireClient c2(rig.vigild->wire(), 20s);
  c2.hello("playback test greedy viewer", vigil::test::token());
  c2.send(open_playback("aisle", 64.0, now_us() - 3'600'000'000, now_us() + 3'600'000'000));
  auto refused = c2.receive();
  REQUIRE(refused.msg.has_refuse());
  CHECK(refused.msg.refuse().reason_code() == proto::REFUSE_REASON_DISK_FULL_LOAD);
  CHECK(refused.msg.refuse().largest_rate_bps() > 0);
  CHECK_THAT(refused.msg.refuse().reason(), ContainsSubstring("playback"));
  // Bad requests are refused, not served.
  // One instant for both ends: the order in which arguments are evaluated is the compiler's (clang
  // reads the start first, and a later end could then be past it).
  const auto t_us = now_us();
  c2.send(open_playback("aisle", 1.0, t_us, t_us - 1));
  auto bad = c2.receive();
  REQUIRE(bad.msg.has_refuse());
  CHECK(bad.msg.refuse().reason_code() == proto::REFUSE_REASON_INVALID_REQUEST);

  // Every decision, recordings' and playbacks', admitted or refused, is in the catalog.
  pqxx::connection conn(rig.catalog());
  std::string outcomes;
  for (int i = 0; i < 100; ++i) {
    pqxx::nontransaction q(conn);
    outcomes = q.exec1("SELECT COALESCE(string_agg(outcome, ',' ORDER BY id), '') FROM admission_decisions")[0]
                   .as<std::string>();
    if (outcomes.find("refused") != std::string::npos) break;
    std::this_thread::sleep_for(100ms);  // the batcher's bounded delay
  }
  // The recording, the playback, its seek and its rate change (each a new read stream), the heavy
  // recording, then the greedy playback refused.
  CHECK(outcomes == "admitted,admitted,admitted,admitted,admitted,refused");
  REQUIRE(rig.vigild->stop(SIGTERM) == 0);
  CHECK_THAT(rig.vigild->output(), !ContainsSubstring("deadline missed"));
}

TEST_CASE("live view follows a recording as it arrives and ends with it", "[vigild][playback][live]") {
  test::RecordingRig rig;
  client::WireClient viewer(rig.vigild->wire(), 20s);
  viewer.hello("live viewer", vigil::test::token());
  auto live = open_playback("porch", 1.0, 0, 0);
  live.mutable_open_playback()->set_live(true);
  viewer.send(live);
  auto none = viewer.receive();
  REQUIRE(none.msg.has_refuse());
  CHECK(none.msg.refuse().reason_code() == proto::REFUSE_REASON_NO_SUCH_STREAM);
  CHECK_THAT(none.msg.refuse().reason(), ContainsSubstring("not recording now"));

  client::WireClient cam(rig.vigild->wire(), 20s);
  cam.hello("live camera", vigil::test::token());
  cam.send(test::open_record("porch", 64'000'000));
  auto a = cam.receive();
  REQUIRE(a.msg.has_admit());
  const auto stream = a.msg.admit().stream_id();
  viewer.send(live);
  auto started = viewer.receive();
  REQUIRE(started.msg.has_playback_started());
  CHECK(started.msg.playback_started().codec().codec_name() == "h264");
  // A ping through the viewer's session orders its subscription before the camera's packets.
  proto::Envelope ping;
  ping.mutable_ping()->set_nonce(7);
  viewer.send(ping);
  REQUIRE(viewer.receive().msg.has_pong());

  for (std::uint64_t seq = 1; seq <= 60; ++seq) {
    auto [p, payload] = test::media_packet(stream, seq, stream);
    cam.send(p, payload);
  }
  // Every frame from the first keyframe, in order, exactly as sent.
  for (std::uint64_t seq = 1; seq <= 60; ++seq) {
    auto r = viewer.receive();
    REQUIRE(r.msg.has_media_packet());
    CHECK(r.payload == test::script_frame(seq, stream).payload);
    CHECK(r.msg.media_packet().keyframe() == (seq % 25 == 1));
  }
  ::shutdown(cam.native_handle(), SHUT_WR);
  auto end = viewer.receive();
  REQUIRE(end.msg.has_playback_end());
  CHECK(end.msg.playback_end().reason() == "recording ended");
  CHECK(end.msg.playback_end().packets() == 60);
}

TEST_CASE("a camera clock that jumps back is a discontinuity: every frame plays, in order", "[vigild][playback]") {
  test::RecordingRig rig;
  const auto stream = record(rig, "restarting", 120);
  client::WireClient c(rig.vigild->wire(), 20s);
  c.hello("playback test viewer", vigil::test::token());
  c.send(open_playback("restarting", 32.0, now_us() - 3'600'000'000, now_us() + 3'600'000'000));
  REQUIRE(c.receive().msg.has_playback_started());
  std::vector<std::int64_t> pts;
  std::size_t n = 0;
  for (;;) {
    auto r = c.receive();
    if (r.msg.has_playback_end()) break;
    REQUIRE(r.msg.has_media_packet());
    ++n;
    CHECK(r.payload == test::script_frame(n, stream).payload);  // frame n, in recording order
    pts.push_back(r.msg.media_packet().pts());
  }
  CHECK(n == kFrames);
  for (std::size_t i = 1; i < pts.size(); ++i) CHECK(pts[i] > pts[i - 1]);
  CHECK_THAT(rig.vigild->output(), ContainsSubstring("timestamp discontinuity"));
}

TEST_CASE("a range that ends while the camera still records ends with its last frame", "[vigild][playback]") {
  // The frame at the range's end starts inside it and ends past it; the camera records on. vigild
  // once read its open segment again and again over the empty rest of the range, until its stack
  // overflowed: the session must end with PlaybackEnd and vigild stay up.
  test::RecordingRig rig;
  client::WireClient cam(rig.vigild->wire(), 20s);
  cam.hello("still recording camera", vigil::test::token());
  cam.send(test::open_record("gate", 64'000'000));
  auto a = cam.receive();
  REQUIRE(a.msg.has_admit());
  const auto stream = a.msg.admit().stream_id();
  constexpr std::uint64_t kSent = 250;  // 10 s of camera time, sent at once: the wall clock runs into it
  for (std::uint64_t seq = 1; seq <= kSent; ++seq) {
    auto [p, payload] = test::media_packet(stream, seq, stream);
    cam.send(p, payload);
  }
  std::uint64_t acked = 0;
  while (acked < kSent) {
    auto r = cam.receive();
    if (r.msg.has_durable_ack()) acked = r.msg.durable_ack().last_sequence();
  }
  for (int round = 0; round < 3; ++round) {  // three ends, each at another point of a frame
    client::WireClient viewer(rig.vigild->wire(), 20s);
    viewer.hello("range viewer", vigil::test::token());
    const auto end_us = now_us() - 3'000 - round * 13'000;
    viewer.send(open_playback("gate", 1.0, end_us - 3'600'000'000, end_us));
    REQUIRE(viewer.receive().msg.has_playback_started());
    std::uint64_t n = 0;
    for (;;) {
      auto r = viewer.receive();
      if (r.msg.has_playback_end()) {
        CHECK(r.msg.playback_end().packets() == n);
        break;
      }
      REQUIRE(r.msg.has_media_packet());
      ++n;
      CHECK(r.payload == test::script_frame(n, stream).payload);
      CHECK(r.msg.media_packet().pts() < end_us);
    }
    CHECK(n >= 1);
    CHECK(n <= kSent);
  }
  // The camera's session is still served: one more frame is acknowledged.
  auto [p, payload] = test::media_packet(stream, kSent + 1, stream);
  cam.send(p, payload);
  while (acked < kSent + 1) {
    auto r = cam.receive();
    if (r.msg.has_durable_ack()) acked = r.msg.durable_ack().last_sequence();
  }
  CHECK(acked == kSent + 1);
}
