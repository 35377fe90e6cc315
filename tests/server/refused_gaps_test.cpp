// Refused frames on a real vigild (server/recording/refused_run.hpp): a source that sends far
// more than its admitted rate is policed. A sender that resends what was refused (the protocol's
// way, `vigil record`'s) loses nothing and gets no gap; a live source that gives refused frames up
// (it sends its next frame under the refused sequence number) loses them, and every one of them
// is in a rate_exceeded gap of GET /api/v1/timeline — exactly its time, with its frame and byte
// counts in the detail — and in vigil_camera_lost_frames_total / _bytes_total.
// Deterministic: each burst is 1 s of media (~78 KB) against a buffer half of 12 KiB, so it is
// refused whatever the machine's speed, and only the sender's own record of what it dropped is
// compared with vigild's. Re-admission (which would let the source's rate in and hide the
// policing) needs a policed window of 10 s of media: the sources send 8 s at most.
#include <sys/socket.h>

#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cstdio>
#include <map>
#include <vector>

#include "client/wire/reply_reader.hpp"
#include "client/wire/wire_client.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/paced_sender.hpp"
#include "tests/support/prometheus_text.hpp"
#include "tests/support/recording_rig.hpp"

using namespace vigil;
using namespace std::chrono_literals;
using Catch::Matchers::ContainsSubstring;
namespace json = boost::json;

namespace {

constexpr std::uint64_t kRateBps = 400'000;  // a half of 10 000 B → 12 KiB; script frames ~3.1 KB at 25 fps
constexpr std::int64_t kFrameUs = 40'000;    // 3600 ticks of 90 kHz

// What a live source that cannot wait does: frames in bursts of BURST (a ping after each as a
// barrier); from the first refused packet of a burst, that frame and the rest of the burst are
// dropped, and the next burst goes out from the refused sequence number once what came before it
// is durable (a fresh half fills).
struct DroppingSource {
  client::WireClient& c;
  std::uint64_t stream = 0;
  std::uint64_t seq = 1, acked = 0;
  std::uint64_t rate_refusals = 0;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> dropped{};  // stretches of camera frames [first, last]
  std::uint64_t dropped_frames = 0, dropped_bytes = 0;

  void take(const client::Received& r) {
    if (r.msg.has_durable_ack()) acked = r.msg.durable_ack().last_sequence();
  }

  void send(std::uint64_t frames, std::uint64_t burst) {
    for (std::uint64_t frame = 1; frame <= frames;) {
      const std::uint64_t last = std::min(frames, frame + burst - 1);
      std::map<std::uint64_t, std::size_t> bytes;  // camera frame → payload bytes
      for (std::uint64_t f = frame; f <= last; ++f) {
        auto [p, payload] = test::media_packet(stream, seq + (f - frame), f, stream, f % 25 == 1);
        // The camera's own clock: frame F at F·40 ms, whatever sequence number it goes under.
        p.mutable_media_packet()->set_pts(static_cast<std::int64_t>(f) * 3600);
        p.mutable_media_packet()->set_dts(static_cast<std::int64_t>(f) * 3600);
        bytes[f] = payload.size();
        c.send(p, payload);
      }
      std::uint64_t first_refused = 0;
      client::read_replies(
          c, /*wait_for_barrier=*/true, last, [&](const client::Received& r) { take(r); },
          [&](const client::ServerError& e) {
            if (first_refused == 0) {
              CHECK(e.code == proto::ERROR_CODE_RATE_EXCEEDED);
              first_refused = e.related_sequence;
              ++rate_refusals;
            } else {
              CHECK(e.code == proto::ERROR_CODE_INVALID_ARGUMENT);  // out of order after the refusal
            }
          });
      if (first_refused == 0) {
        seq += last - frame + 1;
        frame = last + 1;
        continue;
      }
      const std::uint64_t first_dropped = frame + (first_refused - seq);
      dropped.emplace_back(first_dropped, last);
      for (std::uint64_t f = first_dropped; f <= last; ++f) {
        ++dropped_frames;
        dropped_bytes += bytes[f];
      }
      seq = first_refused;
      frame = last + 1;
      while (acked + 1 < first_refused) take(c.receive());
    }
  }

  void finish() {
    ::shutdown(c.native_handle(), SHUT_WR);
    try {
      for (;;) take(c.receive());
    } catch (const std::exception&) {
      // the session ended
    }
  }
};

json::object camera_timeline(const test::VigildProcess& d, const std::string& camera) {
  auto r = test::http_request(d.http(), "GET", "/api/v1/timeline?from=-10m&cameras=" + camera);
  REQUIRE(r.status == 200);
  const auto cams = json::parse(r.body).at("cameras").as_array();
  REQUIRE(cams.size() == 1);
  return cams.at(0).as_object();
}

// The gaps of refused frames: rate_exceeded and deadline_missed (the disk's IO thread late with
// the stream's previous write on a loaded machine; the same frames, another cause).
std::vector<json::object> refused_gaps(const json::object& timeline) {
  std::vector<json::object> out;
  for (const auto& g : timeline.at("gaps").as_array()) {
    const auto reason = std::string(g.at("reason").as_string());
    if (reason == "rate_exceeded" || reason == "deadline_missed") out.push_back(g.as_object());
  }
  return out;
}

}  // namespace

TEST_CASE("refused frames a source gave up are rate_exceeded gaps; resent ones are not lost",
          "[vigild][recording][gaps]") {
  test::RecordingRig rig;
  const auto& d = *rig.vigild;

  // The protocol's way: everything refused is sent again, and taken.
  const auto resent = test::record_acked(d, "resender", 150, 25, kRateBps);
  CHECK(resent.counts.rate_refusals > 0);  // it was policed

  // A live source that drops what was refused.
  client::WireClient c(d.wire(), 30s);
  DroppingSource source{.c = c, .stream = test::open_admitted(c, "dropper", kRateBps)};
  source.send(200, 25);  // 8 s of media
  source.finish();
  REQUIRE(source.rate_refusals > 0);
  REQUIRE(source.dropped_frames > 0);
  INFO(d.output());
  CHECK_THAT(d.output(), !ContainsSubstring("re-admitted"));

  // Every dropped frame is in a gap, once the batcher has committed the stream's rows.
  json::object timeline;
  std::vector<json::object> gaps;
  CHECK(test::eventually([&] {
    timeline = camera_timeline(d, "dropper");
    gaps = refused_gaps(timeline);
    std::uint64_t in_gaps = 0;
    for (const auto& g : gaps)
      in_gaps += static_cast<std::uint64_t>((g.at("end_us").as_int64() - g.at("start_us").as_int64()) / kFrameUs);
    // Not recording: the stream's end, queued after its last segment, is in.
    return !timeline.at("recording").as_bool() && !timeline.at("runs").as_array().empty() &&
           in_gaps >= source.dropped_frames;
  }));
  REQUIRE(timeline.at("runs").as_array().size() >= 1);
  // Frame 1 was stored first: where it is gives the camera clock's offset to wall time.
  const std::int64_t offset = timeline.at("runs").as_array().at(0).at("start_us").as_int64() - kFrameUs;
  // The gaps cover exactly the stretches the source dropped: as time, [first frame, last frame's
  // end) each (a gap that changes reason midway is two gaps end to end: joined here).
  std::vector<std::pair<std::int64_t, std::int64_t>> covered, expected;
  std::uint64_t frames = 0, bytes = 0, rate_gaps = 0;
  for (const auto& g : gaps) {
    const std::int64_t start = g.at("start_us").as_int64(), end = g.at("end_us").as_int64();
    if (!covered.empty() && covered.back().second == start) covered.back().second = end;
    else covered.emplace_back(start, end);
    unsigned long long f = 0, b = 0;
    const std::string detail(g.at("detail").as_string());
    REQUIRE(std::sscanf(detail.c_str(), "%llu frames (%llu payload bytes)", &f, &b) == 2);
    CHECK(static_cast<std::int64_t>(f) * kFrameUs == end - start);
    frames += f;
    bytes += b;
    if (g.at("reason").as_string() == "rate_exceeded") {
      ++rate_gaps;
      CHECK_THAT(detail, ContainsSubstring("admitted rate 400000 bit/s"));
    }
  }
  for (const auto& [first, last] : source.dropped) {
    const std::int64_t start = offset + static_cast<std::int64_t>(first) * kFrameUs;
    const std::int64_t end = offset + static_cast<std::int64_t>(last + 1) * kFrameUs;
    if (!expected.empty() && expected.back().second == start) expected.back().second = end;
    else expected.emplace_back(start, end);
  }
  CHECK(covered == expected);
  CHECK(frames == source.dropped_frames);
  CHECK(bytes == source.dropped_bytes);
  CHECK(rate_gaps > 0);

  // The metrics say the same; the resending camera lost nothing and has no such gap (its rows were
  // committed before the dropper's: the batcher keeps their order).
  auto metrics = test::http_request(d.http(), "GET", "/metrics");
  REQUIRE(metrics.status == 200);
  const auto prom = test::parse_prometheus_text(metrics.body);
  CHECK(prom.errors.empty());
  CHECK(prom.sum("vigil_camera_lost_frames_total", {{"camera", "dropper"}}) ==
        static_cast<double>(source.dropped_frames));
  CHECK(prom.sum("vigil_camera_lost_bytes_total", {{"camera", "dropper"}}) ==
        static_cast<double>(source.dropped_bytes));
  CHECK(prom.sum("vigil_camera_lost_frames_total", {{"camera", "resender"}}) == 0);
  CHECK(prom.value("vigil_camera_packets_refused_total", {{"camera", "resender"}, {"reason", "rate_exceeded"}}) ==
        static_cast<double>(resent.counts.rate_refusals));
  CHECK(refused_gaps(camera_timeline(d, "resender")).empty());
}
