// Exports and thumbnails while the disk is at full admitted load (their behaviour, not their
// speed: `vigil bench export` measures the time). A real vigild with the simulated WD400BB's
// profile and 200 ms cycles records a real H.264 clip (`vigil record --fast`); then recording
// streams are opened one by one until admission refuses (the cycle is full), and while they all
// record at real time, MP4 exports and thumbnails of the clip are fetched: each one is the
// recorded packets of its range exactly (ffprobe), every load stream keeps every packet
// (acknowledged, none policed), and vigild logs no deadline miss. No latency is asserted.
#include <sys/socket.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <fstream>
#include <memory>
#include <thread>

#include "client/wire/wire_client.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/recording_rig.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;
using namespace std::chrono_literals;

namespace {

struct LoadResult {
  std::uint64_t sent = 0, acked = 0, policed = 0;
  std::string error;
};

// Sends script frames at real time (25 fps) on C's admitted STREAM until STOP, then half-closes
// and reads the acknowledgements to the end.
LoadResult record_load(client::WireClient& c, std::uint64_t stream, std::stop_token stop) {
  LoadResult r;
  auto take = [&](const client::Received& m) {
    if (m.msg.has_durable_ack()) r.acked = std::max<std::uint64_t>(r.acked, m.msg.durable_ack().last_sequence());
  };
  try {
    const auto t0 = std::chrono::steady_clock::now();
    while (!stop.stop_requested()) {
      std::this_thread::sleep_until(t0 + 40ms * r.sent);
      auto [p, payload] = test::media_packet(stream, r.sent + 1, stream);
      c.send(p, payload);
      ++r.sent;
      for (;;) {
        try {
          auto m = c.try_receive();
          if (!m) break;
          take(*m);
        } catch (const client::ServerError&) {
          ++r.policed;
        }
      }
    }
    ::shutdown(c.native_handle(), SHUT_WR);
    try {
      for (;;) take(c.receive());
    } catch (const client::ServerError&) {
      ++r.policed;
    } catch (const std::exception&) {
      // end of stream
    }
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

// "@SECONDS.MICROS" of US.
std::string at(std::int64_t us) {
  const auto t = std::to_string(us);
  return "%40" + t.substr(0, t.size() - 6) + "." + t.substr(t.size() - 6);
}

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("HTTP media under full admitted recording load: exports and thumbnails are exact, no deadline miss",
          "[http][media][load][ffmpeg]") {
  test::RecordingRig rig;  // vigild: a volume, the simulated WD400BB's profile, 200 ms cycles
  auto& d = *rig.vigild;
  const auto& dir = rig.dir;
  const auto clip = test::make_h264_clip(dir.path(), 12);
  const auto source = test::probe_packets(clip, dir.path());
  REQUIRE(source.size() == 300);

  // The archive: the clip, recorded whole and closed before the load starts.
  auto rec = test::run_to_exit(VIGIL_CLI_PATH,
                               {"--server", d.wire(), "record", "--stream", "archive", clip.string(), "--fast"},
                               dir.path() / "rec.log");
  INFO(rec.output);
  REQUIRE(rec.status == 0);
  const std::int64_t start_us = test::wait_for_closed_frames(dir.path() / "data", 300);

  // Full admitted load: streams of 2 Mbit/s opened until admission refuses.
  std::vector<std::unique_ptr<client::WireClient>> sessions;
  std::vector<LoadResult> results(64);
  std::vector<std::jthread> load;
  std::optional<proto::Refuse> refusal;
  for (std::size_t i = 0; i < results.size() && !refusal; ++i) {
    auto c = std::make_unique<client::WireClient>(d.wire(), 20s);
    c->hello("media load test", vigil::test::token());
    c->send(test::open_record("load-" + std::to_string(i), 2'000'000));
    auto reply = c->receive();
    if (reply.msg.has_refuse()) {
      refusal = reply.msg.refuse();
      break;
    }
    REQUIRE(reply.msg.has_admit());
    const auto stream = reply.msg.admit().stream_id();
    load.emplace_back(
        [&results, i, stream, c = c.get()](std::stop_token stop) { results[i] = record_load(*c, stream, stop); });
    sessions.push_back(std::move(c));
  }
  REQUIRE(refusal);  // the cycle is full: this is the load admission allows, not a guess
  CHECK(refusal->reason_code() == proto::REFUSE_REASON_DISK_FULL_LOAD);
  const std::size_t admitted = load.size();
  REQUIRE(admitted >= 2);
  std::this_thread::sleep_for(600ms);  // three cycles: every load stream is writing

  auto get = [&](const std::string& target) { return test::http_request(d.http(), "GET", target); };
  const std::string base = "/api/v1/cameras/archive/";
  auto check_export = [&](std::int64_t from_off_us, std::int64_t to_off_us, std::size_t first, std::size_t n,
                          const std::string& name) {
    auto r = get(base + "export.mp4?from=" + at(start_us + from_off_us) + "&to=" + at(start_us + to_off_us));
    INFO(name << ": " << r.head << r.body.substr(0, 200));
    REQUIRE(r.status == 200);
    std::ofstream(dir.path() / name, std::ios::binary) << r.body;
    const auto out = test::probe_packets(dir.path() / name, dir.path());
    REQUIRE(out.size() == n);  // exactly the recorded packets of the range, from its keyframe
    CHECK(out.front().key);
    for (std::size_t i = 0; i < out.size(); ++i) {
      INFO("packet " << i);
      CHECK(out[i].size == source[first + i].size);
      CHECK(out[i].key == source[first + i].key);
    }
  };
  auto check_thumbnail = [&](std::int64_t off_us, const std::string& name) {
    auto r = get(base + "thumbnail.jpg?at=" + at(start_us + off_us) + "&width=160");
    INFO(name << ": " << r.head);
    REQUIRE(r.status == 200);
    std::ofstream(dir.path() / name, std::ios::binary) << r.body;
    const auto stream = test::probe_stream(dir.path() / name, dir.path());
    CHECK_THAT(stream, ContainsSubstring("codec_name=mjpeg"));
    CHECK_THAT(stream, ContainsSubstring("width=160"));
  };
  // Frame i is at i × 40 ms, a keyframe every 25: a range starts at the keyframe at or before
  // FROM and ends with the last frame before TO.
  check_export(1'300'000, 4'700'000, 25, 93, "a.mp4");  // frames 25..117
  check_thumbnail(2'500'000, "a.jpg");
  check_export(6'500'000, 11'100'000, 150, 128, "b.mp4");  // frames 150..277
  check_thumbnail(9'500'000, "b.jpg");
  check_export(-3'600'000'000LL, 3'600'000'000LL, 0, 300, "all.mp4");
  check_thumbnail(11'900'000, "c.jpg");
  {  // an HLS seek: the playlist from 5 s, then its first segment
    auto pl = get(base + "hls.m3u8?from=" + at(start_us + 5'000'000) + "&to=" + at(start_us + 9'000'000));
    REQUIRE(pl.status == 200);
    const auto seg_at = pl.body.find("hls/seg.m4s?");
    REQUIRE(seg_at != std::string::npos);
    auto seg = get(base + pl.body.substr(seg_at, pl.body.find('\n', seg_at) - seg_at));
    CHECK(seg.status == 200);
    CHECK_THAT(seg.body, ContainsSubstring("moof"));
  }

  for (auto& t : load) t.request_stop();
  load.clear();
  for (std::size_t i = 0; i < admitted; ++i) {
    INFO("load stream " << i << ": " << results[i].error);
    CHECK(results[i].error.empty());
    CHECK(results[i].sent >= 20);  // it recorded through all the fetches
    CHECK(results[i].policed == 0);
    CHECK(results[i].acked == results[i].sent);
  }
  const auto out = d.output();
  INFO(out.substr(out.size() > 4000 ? out.size() - 4000 : 0));
  CHECK(count(out, "msg=\"deadline missed\"") == 0);
  CHECK(count(out, "msg=\"HTTP request failed\"") == 0);
}
