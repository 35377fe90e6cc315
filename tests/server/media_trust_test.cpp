// The media trust boundary (common/media_limits.hpp), on a real vigild: an open-record outside the
// limits is refused with the limit named; a recording of garbage (an allowed codec, random
// extradata and random payloads, sent through the wire client) is answered 4xx by every media
// route that would hand it to FFmpeg — export, HLS playlist, init and media segment, thumbnail —
// never 500, and vigild stays up and records afterwards.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <random>

#include "client/wire/wire_client.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/recording_rig.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;
using namespace std::chrono_literals;

namespace {

// The refusal of an open-record of NAME whose codec parameters EDIT changes.
template <class Edit>
proto::Refuse refused_open(test::VigildProcess& d, const std::string& name, Edit edit) {
  client::WireClient c(d.wire(), 20s);
  c.hello("media trust test", test::token());
  auto open = test::open_record(name, 2'000'000);
  edit(*open.mutable_open_record()->mutable_codec());
  c.send(open);
  auto reply = c.receive();
  REQUIRE(reply.msg.has_refuse());
  CHECK(reply.msg.refuse().reason_code() == proto::REFUSE_REASON_INVALID_REQUEST);
  return reply.msg.refuse();
}

std::vector<std::byte> random_bytes(std::mt19937& rng, std::size_t n) {
  std::vector<std::byte> b(n);
  for (auto& x : b) x = static_cast<std::byte>(rng() & 0xff);
  return b;
}

// Records FRAMES packets of random bytes as camera NAME, codec h264 with EXTRADATA, every 25th a
// keyframe; returns once every packet is acknowledged durable and the recording has ended.
void record_garbage(test::VigildProcess& d, const std::string& name, const std::string& extradata, std::mt19937& rng,
                    std::uint64_t frames) {
  client::WireClient c(d.wire(), 20s);
  c.hello("media trust test", test::token());
  auto open = test::open_record(name, 2'000'000);
  open.mutable_open_record()->mutable_codec()->set_extradata(extradata);
  c.send(open);
  auto reply = c.receive();
  REQUIRE(reply.msg.has_admit());
  const auto stream = reply.msg.admit().stream_id();
  for (std::uint64_t seq = 1; seq <= frames; ++seq) {
    auto [p, unused] = test::media_packet(stream, seq, seq, 1, seq % 25 == 1);
    auto payload = random_bytes(rng, 100 + rng() % 400);  // well within the rate of a cycle, sent at once
    p.mutable_media_packet()->set_payload_bytes(static_cast<std::uint32_t>(payload.size()));
    c.send(p, payload);
  }
  std::uint64_t acked = 0;
  while (acked < frames) {
    auto m = c.receive();
    if (m.msg.has_durable_ack()) acked = std::max<std::uint64_t>(acked, m.msg.durable_ack().last_sequence());
  }
  c.end_recording(stream);
}

// "@SECONDS": an absolute time the query parser takes.
std::string at_s(std::int64_t s) { return "%40" + std::to_string(s); }

}  // namespace

TEST_CASE("open-record outside the media limits is refused, naming the limit", "[wire][media][trust]") {
  test::RecordingRig rig;
  auto& d = *rig.vigild;
  auto r = refused_open(d, "vp9-cam", [](proto::CodecParameters& c) { c.set_codec_name("vp9"); });
  CHECK_THAT(r.reason(), ContainsSubstring("codec 'vp9' is not allowed"));
  CHECK_THAT(r.reason(), ContainsSubstring("h264, hevc"));
  r = refused_open(d, "big-extradata", [](proto::CodecParameters& c) { c.set_extradata(std::string(40'000, 'x')); });
  CHECK_THAT(r.reason(), ContainsSubstring("extradata of 40000 bytes"));
  CHECK_THAT(r.reason(), ContainsSubstring("limit of 32768 bytes"));
  r = refused_open(d, "no-width", [](proto::CodecParameters& c) { c.set_width(0); });
  CHECK_THAT(r.reason(), ContainsSubstring("picture size 0x360"));
  CHECK_THAT(r.reason(), ContainsSubstring("1..8192"));
  r = refused_open(d, "wide", [](proto::CodecParameters& c) { c.set_width(100'000); });
  CHECK_THAT(r.reason(), ContainsSubstring("picture size 100000x360"));
  r = refused_open(d, "slow-clock", [](proto::CodecParameters& c) {
    c.set_time_base_num(90'000);
    c.set_time_base_den(1);
  });
  CHECK_THAT(r.reason(), ContainsSubstring("time base 90000/1"));
  // An audio codec of the list is no picture: it declares none.
  r = refused_open(d, "audio", [](proto::CodecParameters& c) { c.set_codec_name("aac"); });
  CHECK_THAT(r.reason(), ContainsSubstring("audio codec has no picture size"));

  // Nothing refused was recorded; the same camera within the limits is admitted.
  client::WireClient c(d.wire(), 20s);
  CHECK(test::open_admitted(c, "vp9-cam", 2'000'000) > 0);
}

TEST_CASE("a garbage recording: export, HLS and thumbnail answer 4xx and vigild stays up",
          "[http][media][trust][ffmpeg]") {
  test::RecordingRig rig;
  auto& d = *rig.vigild;
  std::mt19937 rng(20);  // fixed: the same garbage every run
  // An Annex B start code and then random bytes: no SPS or PPS in it (the muxer must build avcC).
  auto annexb = random_bytes(rng, 300);
  annexb[0] = annexb[1] = annexb[2] = std::byte{0};
  annexb[3] = std::byte{1};
  annexb[4] = std::byte{0x65};  // an IDR slice, not a parameter set
  const auto t0 = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
  record_garbage(d, "garbage", std::string(reinterpret_cast<const char*>(annexb.data()), annexb.size()), rng, 60);
  // Random bytes taken for avcC as they are (its first byte 1): the muxer copies them unread.
  auto avcc = random_bytes(rng, 64);
  avcc[0] = std::byte{1};
  record_garbage(d, "garbage-avcc", std::string(reinterpret_cast<const char*>(avcc.data()), avcc.size()), rng, 60);

  const std::string range = "from=" + at_s(t0.count() - 60) + "&to=" + at_s(t0.count() + 600);
  // Status 0: not answered (vigild went away); what it logged is shown below.
  auto get = [&](const std::string& target) {
    try {
      return test::http_request(d.http(), "GET", target);
    } catch (const std::exception& e) {
      return test::HttpResult{.status = 0, .head = e.what(), .body = {}};
    }
  };
  // Recorded and planned: the export stops being 404 once the segment is readable.
  REQUIRE(test::eventually([&] { return get("/api/v1/cameras/garbage/export.mp4?" + range).status != 404; }));
  for (const std::string camera : {"garbage", "garbage-avcc"}) {
    const std::string base = "/api/v1/cameras/" + camera + "/";
    std::vector<std::pair<std::string, test::HttpResult>> answers;
    answers.emplace_back("export", get(base + "export.mp4?" + range));
    answers.emplace_back("keyframe export", get(base + "export.mp4?keyframes=1&" + range));
    answers.emplace_back("thumbnail", get(base + "thumbnail.jpg?at=" + at_s(t0.count() + 600)));
    auto playlist = get(base + "hls.m3u8?" + range);
    answers.emplace_back("playlist", playlist);
    // The playlist's segments, whether or not it was answered (HLS URLs are the server's own).
    const std::string t = "t0=" + std::to_string(t0.count() * 1'000'000 - 60'000'000) +
                          "&t1=" + std::to_string(t0.count() * 1'000'000 + 600'000'000);
    answers.emplace_back("init", get(base + "hls/init.mp4?" + t));
    answers.emplace_back("segment", get(base + "hls/seg.m4s?o=" + std::to_string(t0.count() * 1'000'000 - 60'000'000) +
                                        "&t0=" + std::to_string(t0.count() * 1'000'000 - 60'000'000) +
                                        "&t1=" + std::to_string(t0.count() * 1'000'000 + 540'000'000)));
    for (const auto& [what, r] : answers) {
      INFO(camera << " " << what << ": " << r.head << r.body.substr(0, 300));
      CHECK(r.status != 500);
      CHECK(r.status != 0);  // answered at all: vigild did not go away
      if (camera == "garbage") {
        // The muxer refuses the parameter sets (none there) and the decoder the picture: 422.
        CHECK(r.status == 422);
        CHECK_THAT(r.body, ContainsSubstring("cannot be processed"));
      } else if (what == "thumbnail") {
        CHECK(r.status == 422);  // the decoder finds no picture in random bytes
      }
    }
  }
  // vigild is up and records.
  const auto out = d.output();
  INFO(out.substr(out.size() > 4000 ? out.size() - 4000 : 0));
  REQUIRE(get("/healthz").status == 200);
  client::WireClient c(d.wire(), 20s);
  const auto stream = test::open_admitted(c, "after", 2'000'000);
  auto [p, payload] = test::media_packet(stream, 1, 1);
  c.send(p, payload);
  bool acked = false;
  while (!acked) acked = c.receive().msg.has_durable_ack();
  CHECK(out.find("msg=\"HTTP request failed\"") == std::string::npos);
}
